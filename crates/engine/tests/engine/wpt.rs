//! Web Platform Tests data files (`tests/resources/wpt/`, sources named in
//! its README) run through the real engine: a runner worker gets the vectors
//! as its request body and answers `{"passed": N, "failed": [{name, error}]}`.

use std::sync::Arc;

use bytes::Bytes;
use isolane_engine::{Body, Limits, PoolMode};

use crate::support::*;

/// Runs `data` through `runner`; returns (passed, failures as "name: error").
async fn run_vectors(name: &str, runner: &str, data: &'static str) -> (u64, Vec<String>) {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        &format!("t/wpt-{name}"),
        runner,
        // Hundreds of vectors in one request of a debug build.
        Limits {
            cpu_ms: 5_000,
            ..Limits::default()
        },
        &[],
    ));
    let request = post("/", Body::from(Bytes::from_static(data.as_bytes())));
    let (status, body) = text(engine.execute(0, worker, request).await).await;
    assert_eq!(status, 200, "{body}");
    let report: serde_json::Value = serde_json::from_str(&body).unwrap();
    let passed = report["passed"].as_u64().unwrap();
    let vectors: serde_json::Value = serde_json::from_str(data).unwrap();
    let total = vectors.as_array().unwrap().len() as u64;
    let failures = report["failed"].as_array().unwrap().len() as u64;
    assert_eq!(passed + failures, total, "every vector ran");
    eprintln!("wpt {name}: {passed} of {total} passed");
    let failed = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}: {}", f["name"], f["error"]))
        .collect();
    (passed, failed)
}

/// WPT `urlpattern/resources/urlpatterntestdata.json`: constructor (string
/// + base URL, init dictionary), component patterns, `test()` and `exec()`.
#[tokio::test]
async fn wpt_urlpattern_vectors() {
    let (passed, failed) = run_vectors(
        "urlpattern",
        include_str!("../resources/wpt/urlpattern_runner.js"),
        include_str!("../resources/wpt/urlpatterntestdata.json"),
    )
    .await;
    assert!(
        failed.is_empty(),
        "{passed} passed, {} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
