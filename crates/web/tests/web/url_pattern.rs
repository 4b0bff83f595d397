//! URLPattern against the Web Platform Tests' URLPattern data
//! (`tests/wpt/urlpattern/urlpatterntestdata.json`, see `tests/wpt/README.md`):
//! every vector's constructor arguments, component patterns, `test()` and
//! `exec()` results, as WPT's urlpattern tests check them. The checker
//! (`url_pattern_runner.js`, this project's own) runs in a worker that gets
//! the vectors as its request body.

use std::sync::Arc;

use bytes::Bytes;
use isolane_engine::{Body, Limits, PoolMode};

use crate::support::*;

#[tokio::test]
async fn wpt_urlpattern_vectors() {
    let data = include_str!("../wpt/urlpattern/urlpatterntestdata.json");
    let vectors: serde_json::Value = serde_json::from_str(data).unwrap();
    let total = vectors.as_array().unwrap().len() as u64;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "wpt/urlpattern",
        include_str!("url_pattern_runner.js"),
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
    let failed: Vec<String> = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}: {}", f["name"], f["error"]))
        .collect();
    assert_eq!(passed + failed.len() as u64, total, "every vector ran");
    assert!(
        failed.is_empty(),
        "{passed} of {total} passed, {} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
