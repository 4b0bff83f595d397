//! The watches against a real kube-apiserver (isolane-testenv): a Worker made
//! Ready through the status subresource and a node Lease become a route and a
//! node, and a request reaches the fake node behind them.

use std::time::Duration;

use http::StatusCode;
use isolane_crds::Worker;
use isolane_membership::node_lease;
use isolane_router::{ProxyConfig, watch};
use isolane_telemetry::Readiness;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use crate::fake_node::FakeNode;
use isolane_testenv::wait_until;

use crate::support::{control_plane_with_workers, get, header, proxy};

const APPS: &str = "apps";
const NODES: &str = "isolane-system";
const HOST: &str = "hello.apps.test";
const WAIT: Duration = Duration::from_secs(20);

fn ready_status(revision: &str, ready: bool) -> serde_json::Value {
    serde_json::json!({
        "status": {
            "revision": revision,
            "conditions": [{
                "type": "Ready",
                "status": if ready { "True" } else { "False" },
                "reason": if ready { "Serving" } else { "Testing" },
                "message": "",
                "lastTransitionTime": Timestamp::now().to_string(),
            }],
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_a_ready_worker_to_a_leased_node_from_the_apiserver() {
    let cp = control_plane_with_workers(&[APPS, NODES]).await;
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), APPS);
    let leases: Api<Lease> = Api::namespaced(client.clone(), NODES);

    let node = FakeNode::start("node-1").await;
    let (proxy, registry) = proxy(ProxyConfig::default(), 50);
    let readiness = Readiness::new();
    let workers_ready = readiness.register("workers");
    let leases_ready = readiness.register("leases");
    tokio::spawn({
        let (client, proxy) = (client.clone(), proxy.clone());
        async move { watch::workers(client, None, proxy, workers_ready).await }
    });
    tokio::spawn({
        let (client, proxy) = (client.clone(), proxy.clone());
        async move { watch::leases(client, NODES, proxy, leases_ready).await }
    });
    wait_until("both watches to sync", WAIT, || async {
        readiness.is_ready()
    })
    .await;

    // A Worker without status is not routable.
    let worker: Worker = serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": "hello", "namespace": APPS},
        "spec": {
            "script": "export default { fetch() { return new Response('hi') } }",
            "routes": [{"host": HOST, "pathPrefix": "/"}],
        },
    }))
    .unwrap();
    workers
        .create(&PostParams::default(), &worker)
        .await
        .unwrap();
    let response = proxy.handle(get(HOST, "/", &[])).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    // The operator's part, by hand: revision and Ready=True on the status
    // subresource; and the node's part: its Lease.
    workers
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(ready_status("rev-1", true)),
        )
        .await
        .unwrap();
    let endpoint = format!("http://{}", node.addr);
    let lease = node_lease(
        "node-1",
        NODES,
        &[endpoint],
        2,
        false,
        Duration::from_secs(60),
        Timestamp::now(),
    );
    leases.create(&PostParams::default(), &lease).await.unwrap();
    wait_until("the route and the node", WAIT, || async {
        proxy.routes().lookup(HOST, "/").is_some() && proxy.fleet().contains("node-1")
    })
    .await;

    let response = proxy.handle(get(HOST, "/greet", &[])).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "x-isolane-node"), Some("node-1"));
    assert_eq!(header(&response, "x-isolane-revision"), Some("rev-1"));
    assert_eq!(header(&response, "x-echo-worker"), Some("apps/hello"));
    assert_eq!(header(&response, "x-echo-revision"), Some("rev-1"));
    drop(response);
    assert_eq!(
        crate::support::sample(&registry, "isolane_router_live_nodes", &[]),
        Some(1.0)
    );

    // A new revision is picked up; Ready=False takes the route away.
    workers
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(ready_status("rev-2", true)),
        )
        .await
        .unwrap();
    wait_until("revision rev-2", WAIT, || async {
        proxy
            .routes()
            .lookup(HOST, "/")
            .is_some_and(|b| b.split.serving().eq(["rev-2"]))
    })
    .await;
    workers
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(ready_status("rev-2", false)),
        )
        .await
        .unwrap();
    wait_until("the route to go", WAIT, || async {
        proxy.routes().lookup(HOST, "/").is_none()
    })
    .await;

    // A Lease that is never renewed lapses with no watch event: the timer
    // notices, and the node leaves the fleet.
    let short = node_lease(
        "node-2",
        NODES,
        &["http://127.0.0.1:1".to_owned()],
        2,
        false,
        Duration::from_secs(2),
        Timestamp::now(),
    );
    leases.create(&PostParams::default(), &short).await.unwrap();
    wait_until("node-2 to join", WAIT, || async {
        proxy.fleet().contains("node-2")
    })
    .await;
    wait_until(
        "node-2's lease to lapse",
        Duration::from_secs(4),
        || async { !proxy.fleet().contains("node-2") },
    )
    .await;
    assert!(proxy.fleet().contains("node-1"));
}
