//! Durable Objects in a cluster (issue 32): the operator, two runtime nodes
//! and the router as processes, one real PostgreSQL (Debian's, started by
//! `isolane_testenv::Postgres`), a Worker applied with kubectl, real HTTP
//! through the router.
//!
//! [`an_objects_alarm_fires_once_and_fires_after_its_node_dies_with_its_state_intact`]:
//! 1. 50 increments of one object through the router, one after another,
//!    count 1..=50; then 200 concurrent increments of another object: the
//!    router keeps a Worker that binds Durable Objects on its first node
//!    (no spill under load), so every answer is a distinct count or the
//!    node's 503 refusal (no 500: no second instance takes the object
//!    away), and the final count equals the acknowledged ones;
//! 2. an alarm set over HTTP fires once (its write is visible, and it does
//!    not fire again while another object's alarm fires after it);
//! 3. an alarm is set for later and the node serving the Worker is killed
//!    (SIGKILL) while four clients keep incrementing another object: the
//!    other node serves the object with its count intact (how long after
//!    the kill is printed), and delivers the alarm once (the Worker's first
//!    node on the ring of the live nodes delivers its alarms, the node the
//!    router sends it to); the acknowledged increments are distinct, none
//!    is lost, and the store holds at most one more per client (an
//!    increment in flight at the kill may have landed with its answer lost).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::Binding;

const TEAM: &str = "team-a";
const HOST: &str = "counter.test";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);

/// `/inc?name=N` increments object N; `/alarm?name=N&in=MS` sets its alarm
/// MS from now; every path answers `{n, rang, alarm}` after (`rang`: how
/// many times its alarm fired).
const COUNTER: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  async alarm() {
    await this.ctx.storage.put('rang', ((await this.ctx.storage.get('rang')) ?? 0) + 1);
  }
  async fetch(request) {
    const url = new URL(request.url);
    const s = this.ctx.storage;
    if (url.pathname === '/inc') {
      const n = ((await s.get('n')) ?? 0) + 1;
      await s.put('n', n);
      return new Response(String(n));
    }
    if (url.pathname === '/alarm') await s.setAlarm(Date.now() + Number(url.searchParams.get('in')));
    return Response.json({ n: (await s.get('n')) ?? 0, rang: (await s.get('rang')) ?? 0, alarm: await s.getAlarm() });
  }
}
export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name') ?? 'home';
    return env.COUNTER.getByName(name).fetch(request);
  },
};
"#;

async fn get(ingress: &Ingress, path: &str) -> Reply {
    let reply = ingress.get(HOST, path).await.unwrap();
    assert_eq!(reply.status, 200, "{path}: {reply:?}");
    reply
}

/// `/inc`: the count it answered. A 503 is the node's admission refusing
/// the request before it ran: sent again, as a client would.
async fn increment(ingress: &Ingress) -> u32 {
    wait_until("an increment admitted", SETTLE, || async move {
        let reply = ingress.get(HOST, "/inc").await.ok()?;
        if reply.status == 503 {
            return None;
        }
        assert_eq!(reply.status, 200, "/inc: {reply:?}");
        Some(reply.body.parse().unwrap())
    })
    .await
}

async fn state(ingress: &Ingress, name: &str) -> serde_json::Value {
    serde_json::from_str(&get(ingress, &format!("/state?name={name}")).await.body).unwrap()
}

/// Waits until object `name`'s alarm has fired `times` times and its
/// delivery is done (`getAlarm()` answers the firing time until then).
async fn rang(ingress: &Ingress, name: &str, times: u64) -> serde_json::Value {
    wait_until(
        &format!("{name}'s alarm fired {times}"),
        SETTLE,
        || async move {
            let reply = ingress
                .get(HOST, &format!("/state?name={name}"))
                .await
                .ok()?;
            let state: serde_json::Value = serde_json::from_str(&reply.body).ok()?;
            (state["rang"] == times && state["alarm"].is_null()).then_some(state)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_objects_alarm_fires_once_and_fires_after_its_node_dies_with_its_state_intact() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions::with_postgres(&database.connection_string());
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;
    let mut worker = inline_worker("counter", COUNTER, &[HOST]);
    worker.spec.bindings = vec![Binding::durable_object("COUNTER", "Counter")];
    kubectl::apply_workers(&cp, &dir.path().join("counter.yaml"), TEAM, &[worker]).await;
    let ingress = Ingress::new(cluster.ingress());
    // Every node has the bundle before the first request: a node that
    // refused one for want of it would send it to the other node, and the
    // object would then have an instance (and a cache) on each (one
    // instance per object in the cluster is not built yet).
    let loaded = format!("bundle loaded worker.id={TEAM}/counter");
    wait_until("every node to load the counter Worker", SETTLE, || {
        let logs: Vec<String> = cluster.nodes.iter().map(|n| n.process.log()).collect();
        let loaded = &loaded;
        async move {
            logs.iter()
                .all(|log| log.contains(loaded.as_str()))
                .then_some(())
        }
    })
    .await;
    wait_until("the counter Worker answers", SETTLE, || {
        let ingress = &ingress;
        async move { (ingress.get(HOST, "/state").await.ok()?.status == 200).then_some(()) }
    })
    .await;

    // 1. Increments of one object, one after another, land in PostgreSQL.
    for expected in 1..=50 {
        assert_eq!(increment(&ingress).await, expected);
    }
    // Each increment's write is counted for the Worker's namespace on
    // the nodes' /metrics, with the bytes it wrote.
    let (mut writes, mut bytes) = (0.0, 0.0);
    let label = format!(r#"namespace="{TEAM}",data="object",op="write""#);
    for node in &cluster.nodes {
        let sum = |name| node.metric_sum(name, &label);
        writes += sum("isolane_node_storage_operations_total")
            .await
            .unwrap_or(0.0);
        bytes += sum("isolane_node_storage_bytes_total").await.unwrap_or(0.0);
    }
    assert!(
        writes >= 50.0 && bytes >= 50.0,
        "{writes} writes of {bytes} bytes"
    );

    // Concurrent increments of another object, on the Worker's one node
    // however loaded: each a distinct count or refused before it ran (503).
    let burst: Vec<_> = (0..200)
        .map(|_| {
            let ingress = ingress.clone();
            tokio::spawn(async move { ingress.get(HOST, "/inc?name=burst").await })
        })
        .collect();
    let mut acknowledged = Vec::new();
    let mut failed = std::collections::BTreeMap::<u16, u32>::new();
    let mut nodes = std::collections::BTreeSet::new();
    for reply in burst {
        match reply.await.unwrap() {
            Ok(reply) if reply.status == 200 => {
                nodes.extend(reply.node.clone());
                acknowledged.push(reply.body.parse::<u64>().unwrap());
            }
            Ok(reply) => *failed.entry(reply.status).or_default() += 1,
            Err(_) => *failed.entry(0).or_default() += 1,
        }
    }
    acknowledged.sort_unstable();
    let distinct = {
        let mut d = acknowledged.clone();
        d.dedup();
        d.len()
    };
    eprintln!(
        "200 concurrent increments: {} acknowledged ({distinct} distinct), failed by status {failed:?}, served by {nodes:?}",
        acknowledged.len()
    );
    assert_eq!(
        distinct,
        acknowledged.len(),
        "an increment was doubled: {acknowledged:?}"
    );
    assert!(
        failed.keys().all(|status| *status == 503),
        "an increment failed other than by the node's refusal: {failed:?}"
    );
    assert_eq!(nodes.len(), 1, "the Worker was spread: {nodes:?}");
    // One more acknowledged increment counts on from them (reads are not
    // fenced, so the count is read by a write: only the owner's lands).
    let next: u64 = wait_until("one more increment acknowledged", SETTLE, || {
        let ingress = &ingress;
        async move {
            let reply = ingress.get(HOST, "/inc?name=burst").await.ok()?;
            (reply.status == 200).then(|| reply.body.parse().unwrap())
        }
    })
    .await;
    assert_eq!(next, acknowledged.len() as u64 + 1, "{acknowledged:?}");

    // 2. An alarm set over HTTP fires once.
    let set = serde_json::from_str::<serde_json::Value>(&get(&ingress, "/alarm?in=0").await.body)
        .unwrap();
    assert!(set["alarm"].is_number(), "{set}");
    rang(&ingress, "home", 1).await;
    get(&ingress, "/alarm?name=other&in=0").await;
    rang(&ingress, "other", 1).await;
    assert_eq!(state(&ingress, "home").await["rang"], 1);

    // 3. An alarm for later; its node dies before it is due, while four
    // clients keep incrementing another object.
    let reply = get(&ingress, "/alarm?in=10000").await;
    let node = reply.node.clone().expect("the router names the node");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (ingress, stop) = (ingress.clone(), stop.clone());
            tokio::spawn(async move {
                // (answer, node, when) of each acknowledged increment, and
                // how many failed (their outcome is unknown to the client).
                let (mut acked, mut failed) = (Vec::new(), 0u64);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match ingress.get(HOST, "/inc?name=survivor").await {
                        Ok(reply) if reply.status == 200 => acked.push((
                            reply.body.parse::<u64>().unwrap(),
                            reply.node,
                            std::time::Instant::now(),
                        )),
                        _ => failed += 1,
                    }
                }
                (acked, failed)
            })
        })
        .collect();
    wait_until("increments under way", SETTLE, || async {
        let reply = ingress.get(HOST, "/state?name=survivor").await.ok()?;
        let state: serde_json::Value = serde_json::from_str(&reply.body).ok()?;
        (state["n"].as_u64()? >= 20).then_some(())
    })
    .await;
    // The alarm is not due yet: the node about to die never delivers it.
    let before = get(&ingress, "/state").await;
    let before_state: serde_json::Value = serde_json::from_str(&before.body).unwrap();
    assert_eq!(before.node.as_deref(), Some(node.as_str()), "{before:?}");
    assert!(
        before_state["rang"] == 1 && before_state["alarm"].is_number(),
        "{before_state}"
    );
    let killed = std::time::Instant::now();
    cluster.node_mut(&node).process.kill();
    let moved = wait_until(
        "the object served by the other node",
        Duration::from_secs(30),
        || {
            let (ingress, node) = (&ingress, &node);
            async move {
                let reply = ingress.get(HOST, "/state").await.ok()?;
                (reply.status == 200 && reply.node.as_deref() != Some(node)).then_some(reply)
            }
        },
    )
    .await;
    let moved_after = killed.elapsed();
    let after: serde_json::Value = serde_json::from_str(&moved.body).unwrap();
    assert_eq!(after["n"], 50, "{after}");
    // The clients go on until 30 increments are acknowledged after the kill.
    wait_until("30 increments after the kill", SETTLE, || async {
        let reply = ingress.get(HOST, "/state?name=survivor").await.ok()?;
        let state: serde_json::Value = serde_json::from_str(&reply.body).ok()?;
        (reply.node.as_deref() != Some(node.as_str())).then_some(())?;
        (state["n"].as_u64()? >= 50).then_some(())
    })
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut acked, mut failed) = (Vec::new(), 0);
    for client in clients {
        let (a, f) = client.await.unwrap();
        acked.extend(a);
        failed += f;
    }
    let back = acked
        .iter()
        .filter(|(_, served, at)| *at > killed && served.as_deref() != Some(node.as_str()))
        .map(|(_, _, at)| at.duration_since(killed))
        .min()
        .expect("an increment acknowledged by the other node");
    let mut counts: Vec<u64> = acked.iter().map(|(n, _, _)| *n).collect();
    counts.sort_unstable();
    counts.dedup();
    assert_eq!(
        counts.len(),
        acked.len(),
        "an increment was doubled: {counts:?}"
    );
    let next: u64 = wait_until("one more increment acknowledged", SETTLE, || async {
        let reply = ingress.get(HOST, "/inc?name=survivor").await.ok()?;
        (reply.status == 200).then(|| reply.body.parse().unwrap())
    })
    .await;
    let total = next - 1;
    eprintln!(
        "a node killed mid-increments: {} acknowledged, {failed} failed, the store counts {total}; the object answered from the other node {moved_after:?} after the kill, which acknowledged an increment {back:?} after it",
        acked.len()
    );
    // None acknowledged is lost; an increment in flight at the kill may
    // have landed before its answer was lost (and the client saw a failure,
    // or the router, which replays a body-less request lost with its node
    // on the next node, got the next count from there): at most one per
    // client, none other.
    assert!(
        total >= acked.len() as u64,
        "an acknowledged increment was lost"
    );
    assert!(
        total <= acked.len() as u64 + 4,
        "more increments than were made"
    );
    // The alarm set before the kill fires once, on the surviving node:
    // once more in all, and not again while another object's alarm fires
    // after it.
    let fired = rang(&ingress, "home", 2).await;
    assert_eq!(fired["n"], 50, "{fired}");
    get(&ingress, "/alarm?name=other&in=0").await;
    rang(&ingress, "other", 2).await;
    assert_eq!(state(&ingress, "home").await["rang"], 2);
}

/// The hosting Worker: `/inc?name=N` increments object N through its own
/// binding and answers the count.
const HOSTING: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  async inc() {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    return n;
  }
}
export default {
  async fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name') ?? 'home';
    return new Response(String(await env.COUNTER.getByName(name).inc()));
  },
};
"#;

/// A Worker binding the class another Worker hosts (`HOSTED`): the same
/// `/inc`; a failed call answers 500 with its message.
const CALLING: &str = r#"
export default {
  async fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name') ?? 'home';
    try {
      return new Response(String(await env.HOSTED.getByName(name).inc()));
    } catch (e) {
      return new Response(e.message, { status: 500 });
    }
  },
};
"#;

/// `durableObject: {className, worker}` through the real apiserver and a
/// node: a Worker calling a class another Worker of its namespace hosts
/// shares its objects with the host (their increments interleave on one
/// count); the same binding in another namespace reaches nothing of
/// team-a's (there is no `host` there); a binding naming
/// `team-a/host` is refused at apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_hosted_by_another_worker_is_shared_within_its_namespace_only() {
    const OTHER: &str = "team-b";
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM, OTHER]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions {
        nodes: 1,
        ..ClusterOptions::with_postgres(&database.connection_string())
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let mut host = inline_worker("host", HOSTING, &["host.test"]);
    host.spec.bindings = vec![Binding::durable_object("COUNTER", "Counter")];
    let caller = |route: &str, worker: &str| {
        let mut caller = inline_worker("caller", CALLING, &[route]);
        caller.spec.bindings = vec![Binding::hosted_durable_object("HOSTED", "Counter", worker)];
        caller
    };
    let team_a = [host, caller("caller.test", "host")];
    kubectl::apply_workers(&cp, &dir.path().join("a.yaml"), TEAM, &team_a).await;
    let team_b = [caller("other.test", "host")];
    kubectl::apply_workers(&cp, &dir.path().join("b.yaml"), OTHER, &team_b).await;
    for (namespace, name) in [(TEAM, "host"), (TEAM, "caller"), (OTHER, "caller")] {
        workers::wait_ready(&cp.client(), namespace, name, SETTLE).await;
    }
    let ingress = Ingress::new(cluster.ingress());
    for route in ["host.test", "caller.test", "other.test"] {
        wait_until(&format!("{route} answers"), SETTLE, || {
            let ingress = &ingress;
            async move {
                let reply = ingress.get(route, "/?name=probe").await.ok()?;
                (reply.status == 200 || (route == "other.test" && reply.status == 500))
                    .then_some(())
            }
        })
        .await;
    }
    for round in 1..=10 {
        for (i, route) in ["caller.test", "host.test"].into_iter().enumerate() {
            let reply = ingress.get(route, "/inc").await.unwrap();
            let expected = (2 * round - 1 + i).to_string();
            assert_eq!((reply.status, reply.body), (200, expected), "{route}");
        }
    }
    let reply = ingress.get("other.test", "/inc").await.unwrap();
    assert_eq!(reply.status, 500, "{reply:?}");
    assert!(
        reply.body.contains(
            "Worker host, which hosts the class Counter, is not running in this namespace"
        ),
        "{reply:?}"
    );
    // A namespace cannot be named: the apiserver refuses the Worker.
    let path = dir.path().join("bad.yaml");
    let manifest = kubectl::manifest(OTHER, &caller("bad.test", "team-a/host"));
    std::fs::write(&path, manifest).unwrap();
    let mut command = cp.kubectl(["apply", "-f"]);
    command.arg(&path);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("durableObject.worker"), "{stderr}");
}
