//! 1,000 Workers applied at once against a real kube-apiserver: all become Ready.
//! Prints the time to all Ready and the operator's peak RSS (VmHWM).
//!
//! `ISOLANE_SCALE_WORKERS` changes the count (default 1000);
//! `ISOLANE_SCALE_CONCURRENCY` the operator's `--concurrency` (default 16).

use std::time::{Duration, Instant};

use futures::StreamExt;
use isolane_crds::Worker;
use isolane_e2e::operator::{Operator, OperatorOptions};
use isolane_e2e::workers::{apply, has_condition, hello_script, inline_worker, prepare};
use isolane_testenv::ControlPlane;
use kube::Api;
use kube::api::ListParams;

const NS: &str = "scale";
const DEADLINE: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_workers_become_ready() {
    let count: usize = std::env::var("ISOLANE_SCALE_WORKERS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1000);
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let client = cp.client();
    let dir = tempfile::tempdir().expect("temp dir");
    let concurrency = std::env::var("ISOLANE_SCALE_CONCURRENCY").unwrap_or_else(|_| "16".into());
    // Production leader timings: under this load the apiserver can answer a
    // renewal slower than the tests' usual 2 s renew deadline, and a replica that
    // steps down restarts its controller (correct, but not what is measured here).
    let options = OperatorOptions {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        extra_args: vec!["--concurrency".into(), concurrency.clone()],
        ..OperatorOptions::default()
    };
    let operator = Operator::start(&cp, dir.path(), &options);
    operator.wait_ready(Duration::from_secs(60)).await;
    let idle_rss = operator.process.peak_rss_kib().unwrap_or(0);

    let started = Instant::now();
    futures::stream::iter(0..count)
        .for_each_concurrent(16, |i| {
            let client = client.clone();
            async move {
                let name = format!("w{i:04}");
                let host = format!("{name}.example.com");
                apply(
                    &client,
                    NS,
                    &inline_worker(&name, &hello_script(&name), &[&host]),
                )
                .await;
            }
        })
        .await;
    let applied = started.elapsed();

    let workers: Api<Worker> = Api::namespaced(client.clone(), NS);
    let mut peak_rss = 0;
    let ready_after = loop {
        peak_rss = peak_rss.max(operator.process.peak_rss_kib().unwrap_or(0));
        let list = workers
            .list(&ListParams::default())
            .await
            .expect("list Workers");
        let ready = list
            .items
            .iter()
            .filter(|worker| has_condition(worker, "Ready", "True", None))
            .count();
        if ready == count {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < DEADLINE,
            "only {ready}/{count} Ready after {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    peak_rss = peak_rss.max(operator.process.peak_rss_kib().unwrap_or(0));
    let reconciles = operator
        .metric("isolane_operator_reconciles_total{result=\"ready\"}")
        .await
        .unwrap_or(0.0);
    if let Some(metrics) = operator.metrics().await {
        for line in metrics.lines().filter(|line| {
            line.starts_with("isolane_operator_reconcile") && !line.contains("_bucket")
        }) {
            eprintln!("scale: {line}");
        }
    }
    eprintln!(
        "scale: {count} Workers applied in {:.1}s, all Ready {:.1}s after the first apply; \
         operator peak RSS {:.1} MiB (idle {:.1} MiB); {reconciles} successful reconciles; \
         --concurrency {concurrency}",
        applied.as_secs_f64(),
        ready_after.as_secs_f64(),
        peak_rss as f64 / 1024.0,
        idle_rss as f64 / 1024.0,
    );
}
