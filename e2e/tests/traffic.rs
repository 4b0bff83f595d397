//! Versions and traffic splitting as users run them (issue 17): a real
//! kube-apiserver, the operator, a runtime node and the router as
//! processes, Workers changed with kubectl and the API, real HTTP through
//! the router.
//!
//! [`a_split_holds_its_percentages_affinity_and_overrides_and_shifts_without_a_cold_start`]
//! walks one Worker through a rollout:
//! 1. v1, then v2 with `spec.traffic` 90 % pinned v1 (`stable`) / 10 %
//!    latest (`canary`): status, `kubectl get wk` and the router agree, and
//!    1000 requests land within a few percent of 90/10;
//! 2. version affinity: requests with the same `x-user` keep their revision;
//! 3. `x-isolane-revision` picks a revision, a tag or `latest` while the
//!    Worker allows overrides, is a 404 for an unknown one, and is ignored
//!    once overrides are turned off;
//! 4. v3 arrives pinned at 0 %, then shifts 0 → 100 % under load: no request
//!    fails, and the node counts no isolate-cache miss during the shift (the
//!    router prewarmed v3 first); p99 before and during is printed;
//! 5. rollback to v1 at 100 %: served at once, still no cache miss;
//! 6. the schema refuses a split that does not sum to 100 and a pin of a
//!    revision the Worker does not have; the bundle Secrets are exactly the
//!    revisions `status.revisions` lists.
//!
//! One node, so that the requests never spill to a second node by bounded
//! load (the router prewarms where a Worker's requests go now: its first
//! choice). Timing is printed, never asserted: the machine is shared.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use isolane_crds::Worker;
use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::load::{Load, LoadOptions, Target, ms};
use isolane_e2e::workers::{self, has_condition, hello_script, inline_worker};
use isolane_testenv::ControlPlane;
use isolane_testenv::wait_until;
use isolane_worker::{TrafficTarget, VersionAffinity};
use kube::Api;
use kube::api::{Patch, PatchParams};

const NAMESPACE: &str = "shop";
const HOST: &str = "shop.test";
const SETTLE: Duration = Duration::from_secs(60);

fn pinned(revision: &str, percent: i32, tag: Option<&str>) -> TrafficTarget {
    TrafficTarget {
        revision: Some(revision.to_owned()),
        latest_revision: None,
        percent,
        tag: tag.map(str::to_owned),
    }
}

fn latest(percent: i32, tag: Option<&str>) -> TrafficTarget {
    TrafficTarget {
        revision: None,
        latest_revision: Some(true),
        percent,
        tag: tag.map(str::to_owned),
    }
}

/// The Worker answering `text`, with `traffic` and overrides allowed or not.
fn shop(text: &str, traffic: Vec<TrafficTarget>, allow_override: bool) -> Worker {
    let mut worker = inline_worker("shop", &hello_script(text), &[HOST]);
    worker.spec.traffic = traffic;
    worker.spec.version_affinity = Some(VersionAffinity {
        header: Some("x-user".to_owned()),
        cookie: None,
    });
    worker.spec.allow_revision_override = allow_override;
    worker
}

struct Rollout {
    cluster: Cluster,
    cp: ControlPlane,
    _dir: tempfile::TempDir,
}

impl Rollout {
    fn api(&self) -> Api<Worker> {
        Api::namespaced(self.cp.client(), NAMESPACE)
    }

    fn ingress(&self) -> Ingress {
        Ingress::new(self.cluster.ingress())
    }

    async fn apply(&self, worker: &Worker) {
        workers::apply(&self.cp.client(), NAMESPACE, worker).await;
    }

    /// Waits until the Worker's status (for its generation) satisfies `done`.
    async fn wait_status(&self, what: &str, done: impl Fn(&Worker) -> bool) -> Worker {
        let api = self.api();
        wait_until(what, SETTLE, || async {
            let worker = api.get_opt("shop").await.ok()??;
            let observed = worker.status.as_ref()?.observed_generation;
            (observed == worker.metadata.generation
                && has_condition(&worker, "Ready", "True", None)
                && done(&worker))
            .then_some(worker)
        })
        .await
    }

    /// Waits until `n` requests in a row (with `headers`) answer 200 from
    /// `revision`: the router has applied a split that sends them there.
    async fn wait_routed(&self, headers: &[(&str, &str)], revision: &str, n: usize) {
        let ingress = self.ingress();
        wait_until(
            &format!("{n} requests in a row to run {revision}"),
            SETTLE,
            || async {
                for _ in 0..n {
                    let reply = ingress.get_with(HOST, "/", headers).await.ok()?;
                    if reply.status != 200 || reply.revision.as_deref() != Some(revision) {
                        return None;
                    }
                }
                Some(())
            },
        )
        .await;
    }

    /// Isolate-cache misses of the node so far (each a cold start).
    async fn cache_misses(&self) -> f64 {
        self.cluster.nodes[0]
            .metric_sum(
                "isolane_node_isolate_cache_lookups_total",
                "result=\"miss\"",
            )
            .await
            .expect("node metrics")
    }
}

fn revision_of(worker: &Worker) -> String {
    worker
        .status
        .as_ref()
        .and_then(|s| s.revision.clone())
        .expect("a revision")
}

fn revision_header(reply: &Reply) -> &str {
    reply.revision.as_deref().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_holds_its_percentages_affinity_and_overrides_and_shifts_without_a_cold_start() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[NAMESPACE]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ClusterOptions {
        nodes: 1,
        ..ClusterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let system = Rollout {
        cluster,
        cp,
        _dir: dir,
    };
    let ingress = system.ingress();

    // === 1. v1, then v2 as a 10 % canary ===
    system.apply(&shop("v1", Vec::new(), true)).await;
    let v1 = revision_of(&system.wait_status("v1 to be Ready", |_| true).await);
    system.wait_routed(&[], &v1, 1).await;

    system
        .apply(&shop(
            "v2",
            vec![pinned(&v1, 90, Some("stable")), latest(10, Some("canary"))],
            true,
        ))
        .await;
    let worker = system
        .wait_status("v2 to be the 10 % canary", |w| {
            w.status
                .as_ref()
                .is_some_and(|s| s.traffic.len() == 2 && s.traffic[0].revision != v1)
        })
        .await;
    let v2 = revision_of(&worker);
    let status = worker.status.clone().expect("status");
    assert_eq!(status.traffic[0].revision, v2);
    assert_eq!(status.traffic[0].percent, 10);
    assert!(status.traffic[0].latest);
    assert_eq!(status.traffic[1].revision, v1);
    assert_eq!(status.traffic[1].percent, 90);
    let summary = status.traffic_summary.clone().expect("a summary");
    assert_eq!(
        summary,
        format!(
            "10% {} (canary, latest), 90% {} (stable)",
            &v2[..8],
            &v1[..8]
        )
    );
    let listed: Vec<(&str, i32, bool)> = status
        .revisions
        .iter()
        .map(|r| (r.revision.as_str(), r.percent, r.ready))
        .collect();
    assert_eq!(listed, [(v2.as_str(), 10, true), (v1.as_str(), 90, true)]);
    // `kubectl get wk` shows the split.
    let output = system
        .cp
        .kubectl(["get", "wk", "-n", NAMESPACE])
        .output()
        .expect("kubectl runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("TRAFFIC") && table.contains(&summary),
        "kubectl get wk:\n{table}"
    );
    // The router applies the split once v2 is prewarmed: v2 shows up.
    wait_until("a first v2 answer", SETTLE, || async {
        let reply = ingress.get(HOST, "/").await.ok()?;
        (revision_header(&reply) == v2).then_some(())
    })
    .await;
    let mut on_v2 = 0;
    for _ in 0..1000 {
        let reply = ingress.get(HOST, "/").await.expect("a reply");
        assert_eq!(reply.status, 200, "{reply:?}");
        let revision = revision_header(&reply);
        assert!(revision == v1 || revision == v2, "{reply:?}");
        // The body is the revision's own: the node ran what the header says.
        assert_eq!(reply.body, if revision == v2 { "v2" } else { "v1" });
        on_v2 += usize::from(revision == v2);
    }
    eprintln!("MEASURED 90/10 split: {on_v2} of 1000 requests on the canary");
    assert!(
        (70..=130).contains(&on_v2),
        "{on_v2} of 1000 on the 10 % canary"
    );

    // === 2. version affinity ===
    let mut keys_on_v2 = 0;
    for key in 0..100 {
        let user = format!("user-{key}");
        let headers = [("x-user", user.as_str())];
        let first = ingress.get_with(HOST, "/", &headers).await.expect("reply");
        for _ in 0..4 {
            let again = ingress.get_with(HOST, "/", &headers).await.expect("reply");
            assert_eq!(
                revision_header(&again),
                revision_header(&first),
                "{user} changed revision"
            );
        }
        keys_on_v2 += usize::from(revision_header(&first) == v2);
    }
    eprintln!(
        "MEASURED affinity: {keys_on_v2} of 100 keys on the canary, each kept over 5 requests"
    );
    assert!((1..=30).contains(&keys_on_v2), "{keys_on_v2} of 100 keys");

    // === 3. overrides ===
    for (asked, expected) in [
        ("stable", &v1),
        ("canary", &v2),
        ("latest", &v2),
        (v1.as_str(), &v1),
    ] {
        for _ in 0..10 {
            let reply = ingress
                .get_with(HOST, "/", &[("x-isolane-revision", asked)])
                .await
                .expect("reply");
            assert_eq!(revision_header(&reply), expected.as_str(), "asked {asked}");
        }
    }
    let unknown = ingress
        .get_with(HOST, "/", &[("x-isolane-revision", "nope")])
        .await
        .expect("reply");
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert_eq!(unknown.reason.as_deref(), Some("unknown_revision"));
    // Overrides off: the header is ignored and the split decides.
    system
        .apply(&shop(
            "v2",
            vec![pinned(&v1, 90, Some("stable")), latest(10, Some("canary"))],
            false,
        ))
        .await;
    wait_until("the override to be ignored", SETTLE, || async {
        let reply = ingress
            .get_with(HOST, "/", &[("x-isolane-revision", "nope")])
            .await
            .ok()?;
        (reply.status == 200).then_some(())
    })
    .await;
    let mut obeyed = 0;
    for _ in 0..100 {
        let reply = ingress
            .get_with(HOST, "/", &[("x-isolane-revision", "canary")])
            .await
            .expect("reply");
        obeyed += usize::from(revision_header(&reply) == v2);
    }
    assert!(obeyed < 40, "{obeyed} of 100 followed a disabled override");

    // === 4. v3 at 0 %, then 0 → 100 % under load ===
    system
        .apply(&shop("v3", vec![pinned(&v1, 100, Some("stable"))], false))
        .await;
    let v3 = revision_of(
        &system
            .wait_status("v3 to be the latest at 0 %", |w| {
                revision_of(w) != v2 && w.status.as_ref().is_some_and(|s| s.traffic.len() == 1)
            })
            .await,
    );
    system.wait_routed(&[], &v1, 30).await;
    let load = Load::start(
        system.cluster.ingress(),
        vec![Target::host(HOST)],
        LoadOptions::default(),
    );
    load.wait_for("300 steady answers", 300, SETTLE, |s| s.is_success())
        .await;
    let misses_before = system.cache_misses().await;
    let shifted = Instant::now();
    system
        .apply(&shop("v3", vec![latest(100, None)], false))
        .await;
    load.wait_for("a first v3 answer", 1, SETTLE, |s| s.body() == Some("v3"))
        .await;
    let first_v3 = Instant::now();
    load.wait_for_more(300, SETTLE).await;
    let tally = load.stop().await;
    let misses_after = system.cache_misses().await;
    let last_v1 = tally
        .samples
        .iter()
        .filter(|s| s.body() == Some("v1"))
        .map(|s| s.done())
        .max()
        .expect("v1 answered");
    let steady = tally.latency(0.99, Some((tally.samples[0].sent, shifted)));
    let during = tally.latency(0.99, Some((shifted, last_v1 + Duration::from_secs(1))));
    eprintln!(
        "MEASURED 0 -> 100 % shift under load: {}; p99 steady {:.1} ms, p99 during the shift {:.1} ms; apply -> first v3 {:.0} ms; cache misses during the shift: {}",
        tally.summary(),
        ms(steady),
        ms(during),
        ms(first_v3 - shifted),
        misses_after - misses_before,
    );
    assert_eq!(
        tally.failures().len(),
        0,
        "requests failed during the shift:\n{}",
        tally.describe_failures(shifted)
    );
    assert_eq!(
        misses_after, misses_before,
        "the shift caused cold starts: v3 was not prewarmed"
    );
    let router = &system.cluster.router;
    let prewarms = router
        .metric_sum("isolane_router_prewarms_total", "outcome=\"ok\"")
        .await
        .unwrap_or_default();
    assert!(prewarms >= 2.0, "prewarms: {prewarms}");
    let per_revision = router
        .metric_sum(
            "isolane_router_worker_requests_total",
            &format!("revision=\"{v3}\",worker=\"{NAMESPACE}/shop\""),
        )
        .await
        .unwrap_or_default();
    assert!(per_revision > 0.0, "no requests counted for v3");

    // === 5. rollback ===
    let misses_before = system.cache_misses().await;
    system
        .apply(&shop("v3", vec![pinned(&v1, 100, Some("stable"))], false))
        .await;
    system.wait_routed(&[], &v1, 30).await;
    assert_eq!(
        system.cache_misses().await,
        misses_before,
        "the rollback recompiled v1"
    );

    // === 6. the schema, and the Secrets behind status.revisions ===
    let api = system.api();
    let patch = |traffic: serde_json::Value| {
        let api = api.clone();
        async move {
            api.patch(
                "shop",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "spec": { "traffic": traffic } })),
            )
            .await
        }
    };
    let error = patch(serde_json::json!([
        { "revision": v1, "percent": 50 },
        { "latestRevision": true, "percent": 40 },
    ]))
    .await
    .expect_err("90 % in all");
    assert!(error.to_string().contains("sum to 100"), "{error}");
    let error = patch(serde_json::json!([{ "revision": "0123456789abcdef", "percent": 100 }]))
        .await
        .expect_err("an unknown revision");
    assert!(error.to_string().contains("status.revisions"), "{error}");
    let worker = system
        .wait_status("the rollback in status", |w| {
            w.status
                .as_ref()
                .is_some_and(|s| s.traffic.len() == 1 && s.traffic[0].revision == v1)
        })
        .await;
    let listed: BTreeSet<String> = worker
        .status
        .as_ref()
        .map(|s| s.revisions.iter().map(|r| r.revision.clone()).collect())
        .unwrap_or_default();
    assert_eq!(
        listed,
        BTreeSet::from([v1.clone(), v2.clone(), v3.clone()]),
        "every revision is kept (history 10)"
    );
    let stored: BTreeSet<String> = workers::bundles(&system.cp.client(), NAMESPACE, "shop")
        .await
        .into_iter()
        .map(|b| b.revision)
        .collect();
    assert_eq!(stored, listed, "bundle Secrets vs status.revisions");
    system.cluster.shutdown();
}
