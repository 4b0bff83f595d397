//! Module and service-worker forms, warm globals, env, errors.

use isolane_engine::{Limits, PoolMode};

use crate::support::*;

#[tokio::test]
async fn module_worker_answers() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let hello = bundle("t/hello", HELLO);
    assert_eq!(
        run(&engine, 0, &hello, "/").await,
        (200, "hello".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &hello, "/").await,
        (200, "hello".to_owned())
    );
    assert_eq!(
        recorder.misses.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(recorder.hits.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(
        recorder
            .from_spare
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}
