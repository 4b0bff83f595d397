//! Spares sized to a thread's misses (`spare_demand.rs`): one while no new
//! worker comes, more while new workers keep coming (never more than
//! `spare_isolates`), and back to one once they stop.

use std::sync::atomic::Ordering;
use std::time::Duration;

use isolane_engine::EngineConfig;
use isolane_testenv::wait_until;

use crate::support::*;

const DEADLINE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn spares_follow_the_threads_misses_and_go_when_they_stop() {
    let most = 4;
    let (engine, recorder) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        spare_isolates: most,
        ..EngineConfig::default()
    });
    let spares = |warm: usize| {
        recorder
            .live_isolates
            .load(Ordering::Relaxed)
            .saturating_sub(warm)
    };
    // Started and idle: one spare (the fixed count made `most` of them).
    let first = bundle("t/first", HELLO);
    let (status, _) = run(&engine, 0, &first, "/").await;
    assert_eq!(status, 200);
    let mut warm = 1;
    wait_until("one spare beside the first worker", DEADLINE, || async {
        spares(warm) == 1
    })
    .await;

    // Never-seen workers keep coming: the thread keeps more spares, up to
    // `most`. Each miss is followed by a moment of quiet in which the
    // thread may refill; the next miss comes if the spares are not there yet.
    let mut seen = 0;
    let started = tokio::time::Instant::now();
    while seen < 2 {
        assert!(
            started.elapsed() < DEADLINE,
            "the spares never grew past {seen} while new workers kept coming"
        );
        let worker = bundle(&format!("t/new-{warm}"), HELLO);
        let (status, _) = run(&engine, 0, &worker, "/").await;
        assert_eq!(status, 200);
        warm += 1;
        for _ in 0..20 {
            seen = seen.max(spares(warm));
            assert!(spares(warm) <= most, "{} spares, most {most}", spares(warm));
            if seen >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert_eq!(recorder.misses.load(Ordering::Relaxed), warm);

    // No more misses: the spares go back to one, and every worker is still
    // warm.
    wait_until(
        "the spares back to one once misses stopped",
        DEADLINE,
        || async { spares(warm) == 1 },
    )
    .await;
    let (status, _) = run(&engine, 0, &first, "/").await;
    assert_eq!(status, 200);
    assert_eq!(recorder.misses.load(Ordering::Relaxed), warm);
}
