//! Web Platform Tests data files (`tests/resources/wpt/`, sources named in
//! its README) run through the real engine: a runner worker gets the vectors
//! as its request body and answers `{"passed": N, "failed": [{name, error}]}`.

use std::sync::Arc;

use bytes::Bytes;
use isolane_engine::{Body, Limits, PoolMode};

use crate::support::*;

/// Runs `data` (holding `total` vectors) through `runner`; returns (passed,
/// failures as "name: error").
async fn run_vectors(
    name: &str,
    runner: &str,
    data: &'static str,
    total: u64,
) -> (u64, Vec<String>) {
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
    let data = include_str!("../resources/wpt/urlpatterntestdata.json");
    let (passed, failed) = run_vectors(
        "urlpattern",
        include_str!("../resources/wpt/urlpattern_runner.js"),
        data,
        count(data, |v| v.as_array().map_or(0, Vec::len)),
    )
    .await;
    assert!(
        failed.is_empty(),
        "{passed} passed, {} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// WPT `url/resources/urltestdata.json` (every parsing vector: `new URL`,
/// `URL.canParse`) and `setters_tests.json` (every setter).
#[tokio::test]
async fn wpt_url_vectors() {
    let data = format!(
        "{{\"parsing\":{},\"setters\":{}}}",
        include_str!("../resources/wpt/urltestdata.json"),
        include_str!("../resources/wpt/setters_tests.json")
    );
    let data: &'static str = Box::leak(data.into_boxed_str());
    let total = count(data, |v| {
        let parsing = v["parsing"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|e| e.is_object()).count());
        let setters: usize = v["setters"].as_object().map_or(0, |o| {
            o.iter()
                .filter(|(k, _)| *k != "comment")
                .map(|(_, e)| e.as_array().map_or(0, Vec::len))
                .sum()
        });
        parsing + setters
    });
    let (passed, failed) = run_vectors(
        "url",
        include_str!("../resources/wpt/url_runner.js"),
        data,
        total,
    )
    .await;
    assert!(
        failed.is_empty(),
        "{passed} passed, {} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// How many vectors `data` holds, as `measure` counts them.
fn count(data: &str, measure: impl Fn(&serde_json::Value) -> usize) -> u64 {
    let value: serde_json::Value = serde_json::from_str(data).unwrap();
    measure(&value) as u64
}
