//! What a queue holds and a workflow's instances by status, in the Worker's
//! status (issue 57): the operator (`--backlog-interval 1s`), two runtime
//! nodes and the router as processes, one real PostgreSQL, Workers applied
//! with kubectl, sends and instances made through the router.
//!
//! [`the_consumer_worker_shows_its_backlog_and_its_workflow_instances`]: one
//! Worker consumes queue `jobs` and runs workflow `Order`. Five messages sent
//! with a delivery delay of 20 s wait in the queue: `status.queues` shows a
//! backlog of 5 and the oldest message's send time; three instances wait
//! for an event: `status.workflows` shows 3 waiting. Once the messages are
//! delivered and the events sent, the status shows a backlog of 0 (no oldest
//! message) and 3 complete. The operator's own status (the Ready condition,
//! the revision) is whole throughout. A Worker that consumes nothing shows
//! neither field; a second namespace's queue of the same name and its
//! messages are not in the first's status. Applied again without its
//! consumer and its workflow, the Worker's status loses both fields.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use isolane_crds::Worker;
use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::{Binding, QueueConsumer};
use kube::Api;

const TEAM_A: &str = "backlog-a";
const TEAM_B: &str = "backlog-b";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(90);

/// `/send?n=N` sends N messages delayed 20 s; `/create?id=…` creates an
/// instance of `Order`, which waits for an event; `/go?id=…` sends it.
const SHOP: &str = r"
import { WorkflowEntrypoint } from 'cloudflare:workers';

const DELAY = 20;

export class Order extends WorkflowEntrypoint {
  async run(event, step) {
    await step.waitForEvent('go', { type: 'go', timeout: '1 hour' });
    return 'done';
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const q = (k) => url.searchParams.get(k);
    switch (url.pathname) {
      case '/send': {
        const messages = [];
        for (let i = 0; i < Number(q('n')); i++) messages.push({ body: i });
        await env.JOBS.sendBatch(messages, { delaySeconds: DELAY });
        return new Response('sent');
      }
      case '/create':
        return new Response((await env.ORDER.create({ id: q('id') })).id);
      case '/go':
        await (await env.ORDER.get(q('id'))).sendEvent({ type: 'go' });
        return new Response('sent');
    }
    return new Response('shop');
  },
  async queue(batch) {
    batch.ackAll();
  },
};
";

fn shop(host: &str, consumes: bool) -> Worker {
    let mut shop = inline_worker("shop", SHOP, &[host]);
    shop.spec.bindings = vec![Binding::queue("JOBS", "jobs")];
    if consumes {
        shop.spec
            .bindings
            .push(Binding::workflow("ORDER", None, "Order", None));
        shop.spec.queue_consumers = vec![QueueConsumer {
            max_batch_timeout_ms: Some(0),
            ..QueueConsumer::new("jobs")
        }];
    }
    shop
}

async fn get(ingress: &Ingress, host: &str, path: &str) -> String {
    wait_until(&format!("{host}{path} to answer"), SETTLE, || async {
        match ingress.get(host, path).await {
            Ok(reply) if reply.status == 200 => Ok(reply.body),
            Ok(reply) => Err(format!("{}: {}", reply.status, reply.body)),
            Err(error) => Err(error),
        }
    })
    .await
}

/// The Worker's status as JSON.
async fn status(api: &Api<Worker>, name: &str) -> serde_json::Value {
    let worker = api.get_status(name).await.unwrap();
    serde_json::to_value(worker.status.unwrap_or_default()).unwrap()
}

/// Waits until `name`'s status satisfies `check`; the status.
async fn status_until(
    api: &Api<Worker>,
    name: &str,
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    wait_until(what, SETTLE, || async {
        let now = status(api, name).await;
        if check(&now) {
            Ok(now)
        } else {
            Err(now.to_string())
        }
    })
    .await
}

fn ready(status: &serde_json::Value) -> bool {
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let ready = conditions
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    ready && status["revision"].is_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_worker_shows_its_backlog_and_its_workflow_instances() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM_A, TEAM_B]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut options = ClusterOptions::with_postgres(&database.connection_string());
    options
        .operator
        .extra_args
        .extend(["--backlog-interval".to_owned(), "1s".to_owned()]);
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let (host_a, host_b) = ("a.backlog.test", "b.backlog.test");
    let plain = inline_worker(
        "plain",
        "export default { fetch() { return new Response('plain'); } };",
        &["plain.backlog.test"],
    );
    let path_a = dir.path().join("a.yaml");
    kubectl::apply_workers(&cp, &path_a, TEAM_A, &[shop(host_a, true), plain]).await;
    let path_b = dir.path().join("b.yaml");
    kubectl::apply_workers(&cp, &path_b, TEAM_B, &[shop(host_b, false)]).await;
    let ingress = Ingress::new(cluster.ingress());
    let api: Api<Worker> = Api::namespaced(cp.client(), TEAM_A);

    // Nothing sent yet: the queue shows empty, the workflow has no instance.
    let empty = status_until(&api, "shop", "shop's empty backlog", |s| {
        s["queues"] == serde_json::json!([{"queue": "jobs", "backlog": 0}])
    })
    .await;
    assert_eq!(empty["workflows"][0]["workflow"], "Order", "{empty}");
    assert!(ready(&empty), "{empty}");

    assert_eq!(get(&ingress, host_a, "/send?n=5").await, "sent");
    // The other namespace's queue `jobs` (no consumer there) is not ours.
    assert_eq!(get(&ingress, host_b, "/send?n=7").await, "sent");
    // Seen before the instances are created: the messages are delivered
    // DELAY after their send, and a loaded machine can take that long to
    // create three instances.
    let held = status_until(&api, "shop", "shop's backlog of 5", |s| {
        s["queues"][0]["backlog"] == 5
    })
    .await;
    eprintln!("held: {held}");
    let oldest = held["queues"][0]["oldestMessageTime"]
        .as_str()
        .unwrap_or_default();
    assert!(
        oldest.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{held}"
    );
    assert!(ready(&held), "the operator's own status is whole: {held}");
    for id in ["o1", "o2", "o3"] {
        assert_eq!(get(&ingress, host_a, &format!("/create?id={id}")).await, id);
    }
    let waiting = status_until(&api, "shop", "shop's 3 waiting instances", |s| {
        s["workflows"][0]["waiting"] == 3
    })
    .await;
    assert!(ready(&waiting), "{waiting}");

    for id in ["o1", "o2", "o3"] {
        assert_eq!(get(&ingress, host_a, &format!("/go?id={id}")).await, "sent");
    }
    let done = status_until(
        &api,
        "shop",
        "shop's backlog consumed and 3 complete",
        |s| {
            s["queues"] == serde_json::json!([{"queue": "jobs", "backlog": 0}])
                && s["workflows"][0]["complete"] == 3
                && s["workflows"][0]["waiting"] == 0
        },
    )
    .await;
    eprintln!("done: {done}");
    assert!(ready(&done), "{done}");

    let plain = status(&api, "plain").await;
    assert!(
        plain.get("queues").is_none() && plain.get("workflows").is_none(),
        "{plain}"
    );
    let api_b: Api<Worker> = Api::namespaced(cp.client(), TEAM_B);
    let theirs = status(&api_b, "shop").await;
    assert!(theirs.get("queues").is_none(), "{theirs}");

    // No longer a consumer nor running the workflow: both fields go.
    kubectl::apply_workers(&cp, &path_a, TEAM_A, &[shop(host_a, false)]).await;
    let gone = status_until(&api, "shop", "shop's status without queues", |s| {
        s.get("queues").is_none() && s.get("workflows").is_none() && ready(s)
    })
    .await;
    eprintln!("gone: {gone}");
    cluster.shutdown();
}
