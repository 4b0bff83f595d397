//! Workers KV in a cluster (issue 32): the operator, two runtime nodes and
//! the router as processes, one real PostgreSQL (Debian's, started by
//! `isolane_testenv::Postgres`), Workers applied with kubectl, real HTTP
//! through the router.
//!
//! [`kv_is_kept_in_postgresql_scoped_by_namespace_and_survives_a_drain`]:
//! 1. the operator applies the schema at start; a Worker's first KV write
//!    through a node succeeds once it has;
//! 2. a write is read back at once (read-your-writes where it happened),
//!    repeated reads are answered from the node's hot-key cache (counted);
//! 3. another Worker of the same Kubernetes namespace binding the same KV
//!    namespace reads the same data; a Worker of another namespace binding
//!    the same names reads nothing, and its writes never reach the first;
//! 4. the node serving the Worker drains: the Worker moves to the other
//!    node, and every entry is still there.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::Binding;

const TEAM_A: &str = "team-a";
const TEAM_B: &str = "team-b";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);

/// A Worker over its `NOTES` binding: `/put?key=&value=`, `/get?key=`,
/// `/list`.
const NOTES: &str = r#"
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = url.searchParams.get('key') ?? 'k';
    switch (url.pathname) {
      case '/put':
        await env.NOTES.put(key, url.searchParams.get('value') ?? '');
        return new Response('stored');
      case '/get': {
        const value = await env.NOTES.get(key);
        return new Response(value === null ? '(none)' : value);
      }
      case '/list': {
        const { keys } = await env.NOTES.list();
        return new Response(keys.map((k) => k.name).join(','));
      }
      default:
        return new Response('not found', { status: 404 });
    }
  },
};
"#;

async fn get(ingress: &Ingress, host: &str, path: &str) -> Reply {
    let reply = ingress.get(host, path).await.unwrap();
    assert_eq!(reply.status, 200, "{host}{path}: {reply:?}");
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_is_kept_in_postgresql_scoped_by_namespace_and_survives_a_drain() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM_A, TEAM_B]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions::with_postgres(&database.connection_string());
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;

    let with_notes = |name: &str, host: &str| {
        let mut worker = inline_worker(name, NOTES, &[host]);
        worker.spec.bindings = vec![Binding::kv("NOTES", "notes")];
        worker
    };
    let a = [
        with_notes("notes", "a.test"),
        with_notes("reader", "reader-a.test"),
    ];
    kubectl::apply_workers(&cp, &dir.path().join("a.yaml"), TEAM_A, &a).await;
    let b = [with_notes("notes", "b.test")];
    kubectl::apply_workers(&cp, &dir.path().join("b.yaml"), TEAM_B, &b).await;
    let ingress = Ingress::new(cluster.ingress());

    // 1. The first write lands once the Worker is routed and the operator
    // has migrated the schema.
    wait_until("a first KV write through a node", SETTLE, || {
        let ingress = &ingress;
        async move {
            let reply = ingress.get("a.test", "/put?key=k&value=v1").await.ok()?;
            (reply.status == 200).then_some(())
        }
    })
    .await;
    for host in ["reader-a.test", "b.test"] {
        wait_until(&format!("{host} routed"), SETTLE, || {
            let ingress = &ingress;
            async move { (ingress.get(host, "/list").await.ok()?.status == 200).then_some(()) }
        })
        .await;
    }

    // 2. Read-your-writes, then hot keys from the node's cache.
    let reply = get(&ingress, "a.test", "/get?key=k").await;
    assert_eq!(reply.body, "v1");
    let node = reply.node.clone().expect("the router names the node");
    for _ in 0..5 {
        assert_eq!(get(&ingress, "a.test", "/get?key=k").await.body, "v1");
    }
    get(&ingress, "a.test", "/put?key=k&value=v2").await;
    assert_eq!(get(&ingress, "a.test", "/get?key=k").await.body, "v2");
    let cached = cluster
        .node_mut(&node)
        .metric_sum(
            "isolane_node_kv_operations_total",
            r#"op="get",result="cached""#,
        )
        .await
        .unwrap_or(0.0);
    assert!(
        cached >= 5.0,
        "reads answered from {node}'s cache: {cached}"
    );

    // 3. Shared within the namespace, never across namespaces.
    assert_eq!(
        get(&ingress, "reader-a.test", "/get?key=k").await.body,
        "v2"
    );
    assert_eq!(get(&ingress, "b.test", "/get?key=k").await.body, "(none)");
    get(&ingress, "b.test", "/put?key=k&value=of-b").await;
    get(&ingress, "b.test", "/put?key=only-b&value=x").await;
    assert_eq!(get(&ingress, "b.test", "/get?key=k").await.body, "of-b");
    assert_eq!(get(&ingress, "a.test", "/get?key=k").await.body, "v2");
    assert_eq!(get(&ingress, "a.test", "/list").await.body, "k");
    get(&ingress, "a.test", "/put?key=k2&value=w").await;

    // 4. The Worker's node drains: the other node serves the same data.
    cluster.node_mut(&node).drain();
    let moved = wait_until("team-a's Worker served by the other node", SETTLE, || {
        let (ingress, node) = (&ingress, &node);
        async move {
            let reply = ingress.get("a.test", "/get?key=k2").await.ok()?;
            (reply.status == 200 && reply.node.as_deref() != Some(node)).then_some(reply)
        }
    })
    .await;
    assert_eq!(moved.body, "w");
    assert_eq!(get(&ingress, "a.test", "/get?key=k").await.body, "v2");
    assert_eq!(get(&ingress, "a.test", "/list").await.body, "k,k2");
    assert_eq!(get(&ingress, "b.test", "/list").await.body, "k,only-b");
    cluster.shutdown();
}
