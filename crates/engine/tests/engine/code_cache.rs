//! Big modules' and service-worker scripts' V8 code cache on disk
//! (`code_cache.rs`): the first isolate to compile one writes its cache,
//! the next ones (another thread, a fresh engine on the same folder)
//! compile from it; a spoiled file is refused, the Worker still loads, and
//! the file is rewritten.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{
    CodeCacheConfig, CodeCacheStats, EgressConfig, Engine, EngineConfig, PoolMode, WorkerBundle,
};
use isolane_testenv::big_module::{es_module, service_worker};
use isolane_testenv::wait_until;

use crate::support::*;

fn worker(id: &str, source: &str) -> Arc<WorkerBundle> {
    modules_bundle(id, vec![es("main.js", source)])
}

fn cached_engine(dir: &Path, threads: usize) -> Engine {
    engine_with(EngineConfig {
        threads,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress: EgressConfig::open(),
        code_cache: Some(CodeCacheConfig::new(dir)),
        ..EngineConfig::default()
    })
    .0
}

/// The stats once `written` files are written.
async fn once_written(engine: &Engine, written: u64) -> CodeCacheStats {
    wait_until(
        &format!("{written} code cache files written"),
        Duration::from_secs(30),
        || async {
            let stats = engine.code_cache_stats();
            (stats.written >= written).then_some(stats)
        },
    )
    .await
}

fn cache_file(dir: &Path, source: &str) -> PathBuf {
    dir.join(isolane_engine::code_cache_file_name(source.as_bytes()))
}

#[tokio::test]
async fn a_second_thread_and_a_fresh_engine_compile_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let source = es_module(256 << 10, "");
    let big = worker("t/big", &source);
    let small = worker(
        "t/small",
        "export default { fetch() { return new Response('small'); } };",
    );

    let engine = cached_engine(dir.path(), 2);
    let (status, first) = run(&engine, 0, &big, "/").await;
    assert_eq!(status, 200);
    assert_eq!(
        run(&engine, 0, &small, "/").await,
        (200, "small".to_owned())
    );
    let stats = once_written(&engine, 1).await;
    assert_eq!((stats.produced, stats.consumed, stats.rejected), (1, 0, 0));
    assert!(cache_file(dir.path(), &source).is_file());

    // Another thread of the same engine: the cache V8 accepts.
    assert_eq!(run(&engine, 1, &big, "/").await, (200, first.clone()));
    let stats = engine.code_cache_stats();
    assert_eq!((stats.produced, stats.consumed, stats.rejected), (1, 1, 0));
    engine.shutdown();

    // A fresh engine on the same folder (a restarted node).
    let engine = cached_engine(dir.path(), 1);
    assert_eq!(run(&engine, 0, &big, "/").await, (200, first));
    let stats = engine.code_cache_stats();
    assert_eq!(
        (
            stats.produced,
            stats.consumed,
            stats.rejected,
            stats.invalid
        ),
        (0, 1, 0, 0)
    );
    // The small module has no file: one per big module only.
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 1);
}

#[tokio::test]
async fn a_big_single_script_worker_is_cached_too() {
    let dir = tempfile::tempdir().unwrap();
    let source = es_module(64 << 10, "");
    let engine = cached_engine(dir.path(), 2);
    let script = bundle("t/script", &source);
    let (status, answer) = run(&engine, 0, &script, "/").await;
    assert_eq!(status, 200);
    once_written(&engine, 1).await;
    assert_eq!(run(&engine, 1, &script, "/").await, (200, answer));
    assert_eq!(engine.code_cache_stats().consumed, 1);
}

#[tokio::test]
async fn a_big_service_worker_script_is_cached_too() {
    let dir = tempfile::tempdir().unwrap();
    let source = service_worker(64 << 10, "");
    let engine = cached_engine(dir.path(), 2);
    let script = bundle("t/service-worker", &source);
    let (status, answer) = run(&engine, 0, &script, "/").await;
    assert_eq!(status, 200);
    once_written(&engine, 1).await;
    // Its file is the script's: no module of the same text would find it.
    assert!(!cache_file(dir.path(), &source).is_file());
    assert_eq!(run(&engine, 1, &script, "/").await, (200, answer.clone()));
    let stats = engine.code_cache_stats();
    assert_eq!((stats.produced, stats.consumed, stats.rejected), (1, 1, 0));
    engine.shutdown();

    // A restarted node: compiled from the file; a spoiled file is refused,
    // the script still answers, and the file is rewritten.
    let engine = cached_engine(dir.path(), 1);
    assert_eq!(run(&engine, 0, &script, "/").await, (200, answer.clone()));
    assert_eq!(engine.code_cache_stats().consumed, 1);
    engine.shutdown();
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("code-"))
        })
        .unwrap();
    std::fs::write(&file, b"garbage").unwrap();
    let engine = cached_engine(dir.path(), 1);
    assert_eq!(run(&engine, 0, &script, "/").await, (200, answer));
    let stats = once_written(&engine, 1).await;
    assert_eq!((stats.invalid, stats.consumed, stats.produced), (1, 0, 1));
    engine.shutdown();
}

/// Loads `source` in a fresh engine on `dir`, beside a benign neighbour
/// on the same thread checked before and after, and returns its answer
/// and the stats once the rewrite is written.
async fn load_and_rewrite(dir: &Path, source: &str) -> ((u16, String), CodeCacheStats) {
    let engine = cached_engine(dir, 1);
    let neighbour = bundle("t/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let answer = run(&engine, 0, &worker("t/big", source), "/").await;
    let stats = once_written(&engine, 1).await;
    neighbour_ok(&engine, &neighbour).await;
    engine.shutdown();
    (answer, stats)
}

#[tokio::test]
async fn a_corrupt_or_truncated_file_is_never_shown_to_v8_and_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let source = es_module(64 << 10, "");
    let (answer, _) = load_and_rewrite(dir.path(), &source).await;
    let file = cache_file(dir.path(), &source);
    let good = std::fs::read(&file).unwrap();

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    for spoiled in [
        flipped,
        good[..good.len() / 2].to_vec(),
        b"garbage".to_vec(),
    ] {
        std::fs::write(&file, &spoiled).unwrap();
        let (again, stats) = load_and_rewrite(dir.path(), &source).await;
        assert_eq!(again, answer);
        assert_eq!(
            (
                stats.invalid,
                stats.rejected,
                stats.consumed,
                stats.produced
            ),
            (1, 0, 0, 1)
        );
        assert_eq!(std::fs::read(&file).unwrap(), good, "rewritten");
    }
}

#[tokio::test]
async fn a_file_v8_refuses_is_counted_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let source = es_module(64 << 10, "");
    let (answer, _) = load_and_rewrite(dir.path(), &source).await;
    let file = cache_file(dir.path(), &source);
    let good = std::fs::read(&file).unwrap();

    // A file that passes our checks (right key, length, digest) but holds
    // bytes that are no V8 code cache: what another V8 or other flags
    // would have made, as far as V8's sanity check goes.
    let header = 8 + 4 + 32;
    let payload = vec![0x5a_u8; 4096];
    let mut forged = good[..header].to_vec();
    forged.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    forged.extend_from_slice(ring::digest::digest(&ring::digest::SHA256, &payload).as_ref());
    forged.extend_from_slice(&payload);
    std::fs::write(&file, &forged).unwrap();

    let (again, stats) = load_and_rewrite(dir.path(), &source).await;
    assert_eq!(again, answer);
    assert_eq!(
        (
            stats.rejected,
            stats.invalid,
            stats.consumed,
            stats.produced
        ),
        (1, 0, 0, 1)
    );
    // Rewritten: the next engine compiles from it.
    let engine = cached_engine(dir.path(), 1);
    assert_eq!(
        run(&engine, 0, &worker("t/big", &source), "/").await,
        answer
    );
    assert_eq!(engine.code_cache_stats().consumed, 1);
}

/// Prints the first answer of a never-seen 8 MiB module without the cache,
/// and with it: from another thread, and from a fresh engine on the same
/// folder. `hack/cargo.sh test -p isolane-engine --test engine
/// code_cache::first_answer -- --ignored --nocapture`
#[tokio::test]
#[ignore = "a measurement: prints numbers"]
async fn first_answer_of_an_8_mib_module_with_and_without_the_code_cache() {
    let source = es_module(8 << 20, "");
    let rounds = 7;
    let mut rows: Vec<(&str, Vec<Duration>)> = vec![
        ("no cache (first compile)", Vec::new()),
        ("cache being made (first compile)", Vec::new()),
        ("second thread, from the cache", Vec::new()),
        ("fresh engine, from the cache", Vec::new()),
    ];
    for round in 0..rounds {
        let id = format!("t/big{round}");
        let engine = engine(1, PoolMode::Pinned).0;
        rows[0]
            .1
            .push(timed(&engine, 0, &worker(&id, &source)).await);
        engine.shutdown();

        let dir = tempfile::tempdir().unwrap();
        let engine = cached_engine(dir.path(), 2);
        rows[1]
            .1
            .push(timed(&engine, 0, &worker(&id, &source)).await);
        once_written(&engine, 1).await;
        rows[2]
            .1
            .push(timed(&engine, 1, &worker(&id, &source)).await);
        engine.shutdown();

        let engine = cached_engine(dir.path(), 1);
        rows[3]
            .1
            .push(timed(&engine, 0, &worker(&id, &source)).await);
        assert_eq!(engine.code_cache_stats().consumed, 1);
        let bytes = std::fs::metadata(cache_file(dir.path(), &source))
            .unwrap()
            .len();
        if round == 0 {
            println!("module {} bytes, cache file {bytes} bytes", source.len());
        }
        engine.shutdown();
    }
    for (what, mut times) in rows {
        times.sort();
        let ms: Vec<String> = times
            .iter()
            .map(|t| format!("{:.1}", t.as_secs_f64() * 1e3))
            .collect();
        println!(
            "{what:36} median {:>7.1} ms  (all: {})",
            times[rounds / 2].as_secs_f64() * 1e3,
            ms.join(" ")
        );
    }
}

async fn timed(engine: &Engine, thread: usize, worker: &Arc<WorkerBundle>) -> Duration {
    let start = Instant::now();
    let (status, _) = run(engine, thread, worker, "/").await;
    let took = start.elapsed();
    assert_eq!(status, 200);
    took
}
