//! Durable Objects in a cluster (issue 32): the operator, two runtime nodes
//! and two routers as processes, one real PostgreSQL (Debian's, started by
//! `isolane_testenv::Postgres`), a Worker applied with kubectl, real HTTP
//! through both routers.
//!
//! [`one_instance_of_each_object_in_the_cluster_reached_from_every_node_and_router`]:
//! 1. 50 increments of one object, one after another, count 1..=50; calls
//!    to 12 objects, some made on the node that does not own them, carry a
//!    300 kB request body, a streamed answer, RPC arguments and results and
//!    a thrown RangeError; then
//!    200 concurrent increments of another object over both routers: the
//!    routers spread the Worker over both nodes by load like any Worker,
//!    and the node that does not own the object sends its calls to the
//!    owner node (`runtime-node/src/peers.rs`), so every answer is a
//!    distinct count or a node's 503 refusal (no 500), both nodes served
//!    increments, and the final count equals the acknowledged ones;
//! 2. an alarm set over HTTP fires once (its write is visible, and it does
//!    not fire again while another object's alarm fires after it);
//! 3. an alarm is set for later and the node owning the incremented
//!    object is killed (SIGKILL) while four clients keep incrementing it,
//!    then a third node joins: the object answers again from the other
//!    node within 5 s with its count intact, the alarm fires once; the
//!    acknowledged increments are distinct, none is lost, and the store
//!    holds at most one more per client (an increment in flight at the
//!    kill may have landed with its answer lost).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions, Router, RouterOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_placement::{Node, NodeSet};
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
    if (url.pathname === '/echo') {
      // What it read, then 200 chunks of 1000 of it, streamed.
      const got = await request.text();
      const chunk = new TextEncoder().encode(got.slice(0, 1000));
      let sent = -1;
      const body = new ReadableStream({
        pull(c) {
          if (sent++ < 0) c.enqueue(new TextEncoder().encode(`${got.length}:`));
          else if (sent <= 200) c.enqueue(chunk);
          else c.close();
        },
      });
      return new Response(body);
    }
    if (url.pathname === '/alarm') await s.setAlarm(Date.now() + Number(url.searchParams.get('in')));
    return Response.json({ n: (await s.get('n')) ?? 0, rang: (await s.get('rang')) ?? 0, alarm: await s.getAlarm() });
  }
  add(a, b) { return { sum: a + b.x, keys: [...b.m.keys()] }; }
  boom() { throw new RangeError('too far'); }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const name = url.searchParams.get('name') ?? 'home';
    if (url.pathname === '/id') return new Response(env.COUNTER.idFromName(name).toString());
    const stub = env.COUNTER.getByName(name);
    if (url.pathname === '/echo') {
      const r = await stub.fetch('http://object/echo', { method: 'POST', body: 'y'.repeat(300000) });
      return new Response(r.body);
    }
    if (url.pathname === '/rpc') {
      const r = await stub.add(2, { x: 3, m: new Map([['k', 1]]) });
      let thrown;
      try { await stub.boom(); } catch (e) { thrown = `${e instanceof RangeError} ${e.name}: ${e.message}`; }
      return Response.json({ r, thrown });
    }
    return stub.fetch(request);
  },
};
"#;

async fn get(ingress: &Ingress, path: &str) -> Reply {
    let reply = ingress.get(HOST, path).await.unwrap();
    assert_eq!(reply.status, 200, "{path}: {reply:?}");
    reply
}

/// The node that owns object `name` among the live `nodes` (one thread
/// each): the first of its key's rendezvous order (`peers.rs`).
async fn owner(ingress: &Ingress, name: &str, nodes: &[String]) -> String {
    let id = get(ingress, &format!("/id?name={name}")).await.body;
    let key = format!("{TEAM}/counter/Counter/{id}");
    let set = NodeSet::new(nodes.iter().map(|n| Node::new(n.clone(), 1)).collect());
    let first = set.primary(&key).unwrap();
    set.nodes()[first].name.clone()
}

/// `/inc?name=NAME`: the count it answered. A 503 is a node's admission
/// refusing the request before it ran: sent again, as a client would.
async fn increment(ingress: &Ingress, name: &str) -> u32 {
    let path = format!("/inc?name={name}");
    wait_until("an increment admitted", SETTLE, || {
        let path = &path;
        async move {
            let reply = ingress.get(HOST, path).await.ok()?;
            if reply.status == 503 {
                return None;
            }
            assert_eq!(reply.status, 200, "{path}: {reply:?}");
            Some(reply.body.parse().unwrap())
        }
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
async fn one_instance_of_each_object_in_the_cluster_reached_from_every_node_and_router() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions::with_postgres(&database.connection_string());
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;
    let second = RouterOptions {
        name: Some("router-b".to_owned()),
        ..RouterOptions::default()
    };
    let mut second = Router::start(&cp, dir.path(), &second);
    second.wait_ready(SETTLE).await;
    let mut worker = inline_worker("counter", COUNTER, &[HOST]);
    worker.spec.bindings = vec![Binding::durable_object("COUNTER", "Counter")];
    kubectl::apply_workers(&cp, &dir.path().join("counter.yaml"), TEAM, &[worker]).await;
    let routers = [Ingress::new(cluster.ingress()), Ingress::new(second.listen)];
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
    for ingress in &routers {
        wait_until("the counter Worker answers", SETTLE, || async move {
            (ingress.get(HOST, "/state").await.ok()?.status == 200).then_some(())
        })
        .await;
    }
    one_after_another(&cluster, &routers).await;
    calls_carry_bodies_results_and_errors(&routers, &cluster.node_names()).await;
    all_at_once(&routers).await;
    alarms_fire_once(&routers[0]).await;
    a_node_dies_and_another_joins(&cp, &mut cluster, &routers).await;
}

/// Step 1a: Increments of one object, one after another over both routers,
/// land in PostgreSQL, counted on the nodes' /metrics.
async fn one_after_another(cluster: &Cluster, routers: &[Ingress; 2]) {
    for (i, expected) in (1..=50u32).enumerate() {
        assert_eq!(increment(&routers[i % 2], "home").await, expected);
    }
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
}

/// Step 1b: Calls to objects of either node, from requests served by either:
/// `stub.fetch` with a request body (300 kB) and a streamed answer (200
/// chunks), RPC with structured-cloned arguments and result, and a thrown
/// error's class, name and message. Some of them were served by the node
/// that does not own the object (the calls hopped).
async fn calls_carry_bodies_results_and_errors(routers: &[Ingress; 2], nodes: &[String]) {
    let streamed = format!("300000:{}", "y".repeat(200_000));
    let mut hopped = 0;
    for i in 0..12 {
        let name = format!("o{i}");
        let owner = owner(&routers[0], &name, nodes).await;
        let echo = get(&routers[i % 2], &format!("/echo?name={name}")).await;
        assert!(echo.body == streamed, "{name}: {} bytes", echo.body.len());
        let rpc = get(&routers[i % 2], &format!("/rpc?name={name}")).await;
        assert_eq!(
            rpc.body,
            r#"{"r":{"sum":5,"keys":["k"]},"thrown":"true RangeError: too far"}"#
        );
        hopped += usize::from(echo.node.as_deref() != Some(owner.as_str()));
        hopped += usize::from(rpc.node.as_deref() != Some(owner.as_str()));
    }
    assert!(
        hopped > 0,
        "no call was made on a node that does not own its object"
    );
    eprintln!(
        "bodies, RPC and errors: {hopped} of 24 requests served away from their object's owner"
    );
}

/// Step 1c: 200 concurrent increments of another object over both routers,
/// spread over both nodes: each a distinct count or refused before it ran
/// (503), the count exact after them.
async fn all_at_once(routers: &[Ingress; 2]) {
    let burst: Vec<_> = (0..200)
        .map(|i| {
            let ingress = routers[i % 2].clone();
            tokio::spawn(async move { ingress.get(HOST, "/inc?name=burst").await })
        })
        .collect();
    let mut acknowledged = Vec::new();
    let mut failed = std::collections::BTreeMap::<u16, u32>::new();
    let mut nodes = std::collections::BTreeMap::<String, u32>::new();
    for reply in burst {
        match reply.await.unwrap() {
            Ok(reply) if reply.status == 200 => {
                *nodes
                    .entry(reply.node.clone().unwrap_or_default())
                    .or_default() += 1;
                acknowledged.push(reply.body.parse::<u64>().unwrap());
            }
            Ok(reply) => *failed.entry(reply.status).or_default() += 1,
            Err(_) => *failed.entry(0).or_default() += 1,
        }
    }
    acknowledged.sort_unstable();
    let mut distinct = acknowledged.clone();
    distinct.dedup();
    eprintln!(
        "200 concurrent increments: {} acknowledged ({} distinct), failed by status {failed:?}, served by {nodes:?}",
        acknowledged.len(),
        distinct.len()
    );
    assert_eq!(
        distinct.len(),
        acknowledged.len(),
        "an increment was doubled: {acknowledged:?}"
    );
    assert!(
        failed.keys().all(|status| *status == 503),
        "an increment failed other than by a node's refusal: {failed:?}"
    );
    assert_eq!(nodes.len(), 2, "both nodes serve the Worker: {nodes:?}");
    // One more acknowledged increment counts on from them (reads are not
    // fenced, so the count is read by a write: only the owner's lands).
    let next = increment(&routers[0], "burst").await;
    assert_eq!(
        u64::from(next),
        acknowledged.len() as u64 + 1,
        "{acknowledged:?}"
    );
}

/// Step 2: An alarm set over HTTP fires once.
async fn alarms_fire_once(ingress: &Ingress) {
    let set =
        serde_json::from_str::<serde_json::Value>(&get(ingress, "/alarm?in=0").await.body).unwrap();
    assert!(set["alarm"].is_number(), "{set}");
    rang(ingress, "home", 1).await;
    get(ingress, "/alarm?name=other&in=0").await;
    rang(ingress, "other", 1).await;
    assert_eq!(state(ingress, "home").await["rang"], 1);
}

/// (count, when) of each acknowledged increment of one client, and how
/// many failed (their outcome unknown to the client).
type Acked = (Vec<(u64, std::time::Instant)>, u64);

/// A client incrementing `survivor` through `ingress` until `stop`.
fn client(ingress: Ingress, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Acked> {
    tokio::spawn(async move {
        let (mut acked, mut failed) = (Vec::new(), 0u64);
        while !stop.load(Ordering::Relaxed) {
            match ingress.get(HOST, "/inc?name=survivor").await {
                Ok(reply) if reply.status == 200 => {
                    acked.push((reply.body.parse().unwrap(), std::time::Instant::now()));
                }
                _ => failed += 1,
            }
        }
        (acked, failed)
    })
}

/// `survivor`'s count, once it is at least `at_least`.
async fn counted(ingress: &Ingress, at_least: u64) -> u64 {
    wait_until(&format!("survivor counts {at_least}"), SETTLE, || async {
        let reply = ingress.get(HOST, "/state?name=survivor").await.ok()?;
        let state: serde_json::Value = serde_json::from_str(&reply.body).ok()?;
        state["n"].as_u64().filter(|n| *n >= at_least)
    })
    .await
}

/// Step 3: The node owning `survivor` dies while four clients increment it,
/// then another node joins; an alarm set before fires once.
async fn a_node_dies_and_another_joins(
    cp: &ControlPlane,
    cluster: &mut Cluster,
    routers: &[Ingress; 2],
) {
    let ingress = &routers[0];
    let victim = owner(ingress, "survivor", &cluster.node_names()).await;
    let set = get(ingress, "/alarm?in=10000").await;
    let set: serde_json::Value = serde_json::from_str(&set.body).unwrap();
    assert!(set["alarm"].is_number(), "{set}");
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|i| client(routers[i % 2].clone(), stop.clone()))
        .collect();
    counted(ingress, 20).await;
    // The alarm is not due yet: whichever node dies never delivers it.
    let before = state(ingress, "home").await;
    assert!(
        before["rang"] == 1 && before["alarm"].is_number(),
        "{before}"
    );
    let killed = std::time::Instant::now();
    cluster.node_mut(&victim).process.kill();
    let joined = cluster.add_node(cp).await;
    cluster.wait_live_nodes(2).await;
    let now = counted(ingress, 0).await;
    counted(ingress, now + 30).await;
    stop.store(true, Ordering::Relaxed);
    let (mut acked, mut failed) = (Vec::new(), 0);
    for client in clients {
        let (a, f) = client.await.unwrap();
        acked.extend(a);
        failed += f;
    }
    let back = acked
        .iter()
        .filter(|(_, at)| *at > killed)
        .map(|(_, at)| at.duration_since(killed))
        .min()
        .expect("an increment acknowledged after the kill");
    let mut counts: Vec<u64> = acked.iter().map(|(n, _)| *n).collect();
    counts.sort_unstable();
    counts.dedup();
    assert_eq!(counts.len(), acked.len(), "an increment was doubled");
    let total = u64::from(increment(ingress, "survivor").await) - 1;
    eprintln!(
        "{victim} (the owner) killed mid-increments, {joined} joined: {} acknowledged, {failed} failed, the store counts {total}; the object answered again {back:?} after the kill",
        acked.len()
    );
    // None acknowledged is lost; an increment in flight at the kill may
    // have landed before its answer was lost: at most one per client.
    assert!(
        total >= acked.len() as u64,
        "an acknowledged increment was lost"
    );
    assert!(
        total <= acked.len() as u64 + 4,
        "more increments than were made"
    );
    assert!(
        back <= Duration::from_secs(5),
        "the object answered again only {back:?} after the kill"
    );
    // The alarm set before the kill fires once more in all, on its owner
    // (the survivor or the new node), and not again while another
    // object's alarm fires after it.
    let fired = rang(ingress, "home", 2).await;
    assert_eq!(fired["n"], 50, "{fired}");
    get(ingress, "/alarm?name=other&in=0").await;
    rang(ingress, "other", 2).await;
    assert_eq!(state(ingress, "home").await["rang"], 2);
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
