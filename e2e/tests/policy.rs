//! Tenant policy (issue 60, docs/policy.md) with the operator, its
//! webhook, one runtime node and the router against a real apiserver:
//!
//! - a TenantPolicy selecting namespace `free` by label; `kubectl apply` of
//!   a Worker there above the policy's CPU ceiling is refused with a
//!   message naming the field, the ceiling and the policy;
//! - a Worker there that sets no limits gets the policy's default and the
//!   namespace's CPU quota in its bundle;
//! - a CPU burner in `free` past its quota (CPU-ms per second on the node)
//!   gets 429 with `Retry-After` through the router, while a Worker of
//!   namespace `paid` on the same node thread answers 200 before, during
//!   and after; the burner answers again once the quota has drained;
//! - a ceiling lowered under a Worker already admitted: Ready=False with
//!   reason PolicyViolation, and its bundle held to the new ceiling.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use isolane_crds::TenantPolicy;
use isolane_e2e::certs;
use isolane_e2e::cluster::{Cluster, ClusterOptions, NodeOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::kubectl;
use isolane_e2e::operator::{OperatorOptions, register_webhook};
use isolane_e2e::workers::{
    self, has_condition, inline_worker, wait_for_bundle, wait_for_worker, wait_ready,
};
use isolane_testenv::{ControlPlane, wait_until};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams};

const FREE: &str = "free";
const PAID: &str = "paid";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);

/// Burns CPU: `/` runs a loop of 40 million additions (tens of
/// milliseconds of CPU), `/ping` answers at once.
const BURNER: &str = r#"
export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/ping') return new Response('pong');
    let x = 0;
    for (let i = 0; i < 40_000_000; i++) x = (x + i) % 1000003;
    return new Response('burned ' + x);
  },
};
"#;

const BENIGN: &str = r#"
export default { fetch() { return new Response('benign ok'); } };
"#;

/// The policy: CPU ceiling 1000 ms, default 500 ms, and 20 CPU-ms per
/// second per node for the namespaces labelled `tier=free`.
fn policy(ceiling: u32) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "TenantPolicy",
        "metadata": {"name": "free-tier"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"tier": "free"}},
            "limits": {"ceilings": {"cpuMs": ceiling}, "defaults": {"cpuMs": 500}},
            "quotas": {"cpuMsPerSecond": 20},
        },
    })
}

async fn apply_policy(cp: &ControlPlane, ceiling: u32) {
    let api: Api<TenantPolicy> = Api::all(cp.client());
    let policy: TenantPolicy = serde_json::from_value(policy(ceiling)).unwrap();
    // The CRD may not be served yet just after it was applied.
    wait_until("the TenantPolicy to be applied", SETTLE, || async {
        api.patch(
            "free-tier",
            &PatchParams::apply("isolane-e2e").force(),
            &Patch::Apply(&policy),
        )
        .await
        .ok()
    })
    .await;
}

/// `kubectl apply` of `worker` into `namespace`: whether it passed, and
/// what kubectl printed.
async fn kubectl_apply(
    cp: &ControlPlane,
    dir: &std::path::Path,
    namespace: &str,
    worker: &isolane_crds::Worker,
) -> (bool, String) {
    let path = dir.join("apply.yaml");
    std::fs::write(&path, kubectl::manifest(namespace, worker)).unwrap();
    let mut command = cp.kubectl(["apply", "-f"]);
    command.arg(&path);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The benign Worker answers 200; how long it took.
async fn benign_answers(ingress: &Ingress, when: &str) -> Duration {
    let started = Instant::now();
    let reply = ingress.get("benign.test", "/").await;
    assert!(
        matches!(&reply, Ok(r) if r.status == 200 && r.body == "benign ok"),
        "the benign Worker answers {when}: {reply:?}"
    );
    started.elapsed()
}

async fn burn(ingress: &Ingress) -> Reply {
    ingress.get("burner.test", "/").await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_policy_holds_at_apply_and_its_cpu_quota_on_the_node() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[FREE, PAID]).await;
    let client = cp.client();
    let label = serde_json::json!({"metadata": {"labels": {"tier": "free"}}});
    Api::<Namespace>::all(client.clone())
        .patch(FREE, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    apply_policy(&cp, 1000).await;

    let dir = tempfile::tempdir().unwrap();
    let cert = certs::localhost_serving_cert(dir.path());
    let options = ClusterOptions {
        nodes: 1,
        node: NodeOptions {
            // One thread: the burner and its neighbour share it.
            threads: 1,
            ..NodeOptions::default()
        },
        operator: OperatorOptions {
            webhook: Some(cert.clone()),
            ..OperatorOptions::default()
        },
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let webhook = cluster.operator.webhook.unwrap();
    register_webhook(
        &cp,
        &format!("https://{webhook}/validate-worker"),
        &cert.ca_pem,
    )
    .await;

    // Above the ceiling: refused at apply, naming the policy (the
    // webhook's view of the policy and labels may trail by a moment).
    let mut greedy = inline_worker("greedy", BENIGN, &["greedy.test"]);
    greedy.spec.limits.cpu_ms = 2000;
    let refusal = wait_until(
        "the webhook to refuse the greedy Worker",
        SETTLE,
        || async {
            let (ok, text) = kubectl_apply(&cp, dir.path(), FREE, &greedy).await;
            (!ok).then_some(text)
        },
    )
    .await;
    assert!(
        refusal.contains(
            "spec.limits.cpuMs 2000 exceeds 1000, the ceiling of TenantPolicy \"free-tier\""
        ),
        "{refusal}"
    );

    // No limits set: the policy's default and the quota, in the bundle.
    let burner = inline_worker("burner", BURNER, &["burner.test"]);
    let (ok, text) = kubectl_apply(&cp, dir.path(), FREE, &burner).await;
    assert!(ok, "{text}");
    let bundle = wait_for_bundle(&client, FREE, "burner", "with the policy", SETTLE, |b| {
        b.cpu_ms_per_second.is_some()
    })
    .await;
    assert_eq!(bundle.limits.cpu_ms, 500);
    assert_eq!(bundle.cpu_ms_per_second, Some(20));
    let benign = inline_worker("benign", BENIGN, &["benign.test"]);
    let (ok, text) = kubectl_apply(&cp, dir.path(), PAID, &benign).await;
    assert!(ok, "{text}");
    let ingress = Ingress::new(cluster.ingress());
    for host in ["burner.test", "benign.test"] {
        wait_until(&format!("{host} answers"), SETTLE, || async {
            let reply = ingress.get(host, "/ping").await.ok()?;
            reply.is_success().then_some(())
        })
        .await;
    }

    // Before.
    let before = benign_answers(&ingress, "before").await;
    // During: the burner runs until its namespace is over the quota.
    let burns = std::sync::atomic::AtomicU32::new(0);
    let refused = wait_until("the burner to be refused", SETTLE, || async {
        burns.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reply = burn(&ingress).await;
        assert!(
            reply.status == 200 || reply.status == 429,
            "the burner answers 200 or 429: {reply:?}"
        );
        (reply.status == 429).then_some(reply)
    })
    .await;
    let retry_after: u64 = refused
        .retry_after
        .as_deref()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("a 429 with Retry-After: {refused:?}"));
    assert!(retry_after >= 1, "{refused:?}");
    assert_eq!(refused.reason.as_deref(), Some("quota_exceeded"));
    let refused_at = Instant::now();
    let during = benign_answers(&ingress, "while the burner is refused").await;
    eprintln!(
        "refused after {} burns with Retry-After {retry_after}; benign latency before {before:?}, during {during:?}",
        burns.into_inner()
    );
    let again = burn(&ingress).await;
    benign_answers(&ingress, "during").await;
    // Still refused if asked again at once (well within Retry-After).
    if refused_at.elapsed() < Duration::from_millis(500) {
        assert_eq!(again.status, 429, "{again:?}");
    }
    // After: the quota drains, the burner answers again.
    wait_until("the burner to answer again", SETTLE, || async {
        let reply = ingress.get("burner.test", "/ping").await.ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    benign_answers(&ingress, "after").await;

    // A ceiling lowered under an admitted Worker: reported, and held.
    let mut explicit = inline_worker("explicit", BENIGN, &["explicit.test"]);
    explicit.spec.limits.cpu_ms = 800;
    let (ok, text) = kubectl_apply(&cp, dir.path(), FREE, &explicit).await;
    assert!(ok, "{text}");
    wait_ready(&client, FREE, "explicit", SETTLE).await;
    apply_policy(&cp, 300).await;
    let reported = wait_for_worker(&client, FREE, "explicit", "in violation", SETTLE, |w| {
        has_condition(w, "Ready", "False", Some("PolicyViolation"))
    })
    .await;
    let message = &workers::condition(&reported, "Ready").unwrap().message;
    assert!(
        message.contains("spec.limits.cpuMs 800 exceeds 300, the ceiling of TenantPolicy"),
        "{message}"
    );
    let held = wait_for_bundle(&client, FREE, "explicit", "held", SETTLE, |b| {
        b.limits.cpu_ms == 300
    })
    .await;
    assert_eq!(held.cpu_ms_per_second, Some(20));
    benign_answers(&ingress, "at the end").await;
}
