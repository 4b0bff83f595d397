//! All three pool modes give the same answers; overload fails fast.

use std::sync::Arc;

use isolane_engine::{EngineConfig, ExecuteError, PoolMode};

use crate::support::*;

const COUNTER: &str = "let n = 0; export default { async fetch(request, env) {
    n += 1;
    const body = await request.text();
    return Response.json({ path: new URL(request.url).pathname, body, who: env.WHO });
} };";

#[tokio::test]
async fn every_pool_mode_gives_the_same_answers() {
    let mut answers = Vec::new();
    for mode in [PoolMode::Legacy, PoolMode::Shared, PoolMode::Pinned] {
        let (engine, _) = engine(2, mode);
        let a = Arc::new(bundle_with(
            "t/a",
            COUNTER,
            Default::default(),
            &[("WHO", "a")],
        ));
        let b = Arc::new(bundle_with(
            "t/b",
            COUNTER,
            Default::default(),
            &[("WHO", "b")],
        ));
        let mut got = Vec::new();
        for i in 0..4 {
            // Requests land on both threads: shared mode hands them over.
            for (thread, worker) in [(0, &a), (1, &b), (1, &a), (0, &b)] {
                let request = post(&format!("/{i}"), format!("body{i}").into());
                got.push(text(engine.execute(thread, worker.clone(), request).await).await);
            }
        }
        answers.push((mode, got));
        engine.shutdown();
    }
    let (_, first) = &answers[0];
    for (mode, got) in &answers {
        assert_eq!(got, first, "{mode} differs");
    }
    assert!(first[0].1.contains("\"who\":\"a\""), "{:?}", first[0]);
}

#[tokio::test]
async fn a_full_queue_fails_fast_with_overloaded() {
    let (engine, recorder) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        queue_depth: 1,
        spare_isolates: 0,
        ..EngineConfig::default()
    });
    let slow = bundle(
        "t/slow",
        "export default { fetch() { return new Promise((r) => setTimeout(() => r(new Response('ok')), 200)); } };",
    );
    let calls = (0..8).map(|_| engine.execute(0, slow.clone(), get("/")));
    let results = futures::future::join_all(calls).await;
    let overloaded: Vec<_> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .filter(|e| matches!(e, ExecuteError::Overloaded { thread: 0 }))
        .collect();
    assert!(!overloaded.is_empty(), "no request was shed");
    assert!(results.iter().any(|r| r.is_ok()), "no request was served");
    let error = overloaded[0];
    assert_eq!(error.status(), 503);
    assert_eq!(error.retry_after(), Some(1));
    assert!(
        recorder
            .outcomes
            .lock()
            .unwrap()
            .contains(&isolane_engine::Outcome::Overloaded)
    );
}
