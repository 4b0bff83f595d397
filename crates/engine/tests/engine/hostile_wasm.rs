//! WebAssembly against the memory limit, each beside a benign neighbour on
//! the same thread: grow loops inside Wasm and through JS, many
//! instantiations, a huge text module. The process's RSS is measured
//! around each.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Module, ModuleKind, PoolMode};

use crate::peak_rss::PeakRss;
use crate::peak_rss::rss_mib;
use crate::support::*;

/// `grow(pages)` grows memory 0 by `pages` at a time until it fails,
/// filling each new page (so RSS shows it); answers the size reached in pages.
fn grower(declared: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
            (memory (export "memory") {declared})
            (func (export "grow") (param $step i32) (result i32)
              (local $at i32)
              (block $done
                (loop $again
                  (local.set $at (memory.grow (local.get $step)))
                  (br_if $done (i32.eq (local.get $at) (i32.const -1)))
                  (memory.fill
                    (i32.mul (local.get $at) (i32.const 65536))
                    (i32.const 1)
                    (i32.mul (local.get $step) (i32.const 65536)))
                  (br $again)))
              (memory.size)))"#
    ))
    .unwrap()
}

fn grow_worker(id: &str, declared: &str, memory_mib: u32) -> Arc<isolane_engine::WorkerBundle> {
    let bundle = modules_bundle(
        id,
        vec![
            es(
                "main.js",
                "import m from './grow.wasm';
                 export default { fetch(request) {
                     const step = Number(new URL(request.url).searchParams.get('step') ?? '1');
                     const { exports } = new WebAssembly.Instance(m);
                     return new Response(String(exports.grow(step)));
                 } };",
            ),
            Module::new("grow.wasm", ModuleKind::CompiledWasm, grower(declared)),
        ],
    );
    let mut bundle = Arc::unwrap_or_clone(bundle);
    bundle.limits = memory_limits(memory_mib);
    Arc::new(bundle)
}

/// `memory.grow` in a loop inside Wasm, with no declared maximum: the
/// request ends `memory_limit` before the memory passes the limit, every
/// time, and the neighbour answers before, between and after.
#[tokio::test]
async fn growing_inside_wasm_past_the_limit_ends_the_request() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let before = rss_mib();
    let sampler = PeakRss::start();
    for (round, step) in [1, 16, 1000].into_iter().enumerate() {
        let hog = grow_worker(&format!("t/grow{round}"), "1", 64);
        // The neighbour asks while the hog runs, on the same thread.
        let started = std::time::Instant::now();
        let (result, ()) = tokio::join!(
            engine.execute(0, hog, get(&format!("/?step={step}"))),
            neighbour_ok(&engine, &neighbour)
        );
        let waited = started.elapsed();
        eprintln!("step {step}: the neighbour answered within {waited:?}");
        assert!(waited < std::time::Duration::from_secs(5), "{waited:?}");
        assert!(
            matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
            "step {step}: {:?}",
            result.map(|r| r.status())
        );
        neighbour_ok(&engine, &neighbour).await;
    }
    let peak = sampler.finish();
    let after = rss_mib();
    eprintln!("RSS MiB: before {before}, peak {peak}, after {after}");
    // One hog of 64 MiB at a time (each discarded at its limit); never
    // hundreds over.
    assert!(peak < before + 2 * 64, "RSS {before} -> {peak} MiB");
}

/// A declared maximum under the limit: the grow fails (-1) at it, as Wasm
/// says, and the worker answers.
#[tokio::test]
async fn a_declared_maximum_stops_growth_without_ending_the_request() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = grow_worker("t/bounded", "1 40", 128);
    assert_eq!(
        run(&engine, 0, &worker, "/?step=3").await,
        (200, "40".to_owned())
    );
    // Half the limit a page at a time: each grow counts the memory once,
    // not every size it passed through (512 grows, 32 MiB under 64 MiB).
    let worker = grow_worker("t/half", "1 512", 64);
    assert_eq!(
        run(&engine, 0, &worker, "/?step=1").await,
        (200, "512".to_owned())
    );
}

/// The JS API: a memory made bigger than the limit, `grow` in a loop, a
/// hoard of memories, a table of ten million entries.
#[tokio::test]
async fn js_memories_are_held_to_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    for (id, code) in [
        ("t/js-big", "new WebAssembly.Memory({ initial: 2000 })"),
        (
            "t/js-grow",
            "const m = new WebAssembly.Memory({ initial: 1 }); for (;;) { m.grow(8); new Uint8Array(m.buffer).fill(1); }",
        ),
        (
            "t/js-many",
            "globalThis.keep = []; for (;;) keep.push(new WebAssembly.Memory({ initial: 16 }));",
        ),
        // A huge table lives on the JS heap: the heap limit ends it.
        (
            "t/js-table",
            "const t = new WebAssembly.Table({ initial: 10000000, element: 'anyfunc' }); t.grow(1)",
        ),
    ] {
        let hog = modules_bundle(
            id,
            vec![es(
                "main.js",
                &format!(
                    "export default {{ fetch() {{ {code}; return new Response('escaped'); }} }};"
                ),
            )],
        );
        let mut hog = Arc::unwrap_or_clone(hog);
        hog.limits = memory_limits(64);
        let result = engine.execute(0, Arc::new(hog), get("/")).await;
        assert!(
            matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
            "{id}: {:?}",
            result.map(|r| r.status())
        );
        neighbour_ok(&engine, &neighbour).await;
    }
}

/// 1,000 instantiations of a module with its own memory: each instance's
/// memory counts, so the worker reaches its limit instead of the node's.
#[tokio::test]
async fn a_thousand_instances_count_against_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let hog = modules_bundle(
        "t/instances",
        vec![
            es(
                "main.js",
                "import m from './grow.wasm';
                 export default { fetch() {
                     globalThis.keep = [];
                     for (let i = 0; i < 1000; i++) keep.push(new WebAssembly.Instance(m));
                     return new Response(String(keep.length));
                 } };",
            ),
            Module::new("grow.wasm", ModuleKind::CompiledWasm, grower("4")),
        ],
    );
    let mut hog = Arc::unwrap_or_clone(hog);
    hog.limits = memory_limits(64);
    let before = rss_mib();
    let sampler = PeakRss::start();
    let result = engine.execute(0, Arc::new(hog), get("/")).await;
    let peak = sampler.finish();
    // 1,000 × 256 KiB = 250 MiB of memories under a 64 MiB limit.
    assert!(
        matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
        "{:?}",
        result.map(|r| r.status())
    );
    eprintln!("RSS MiB: before {before}, peak {peak}, after {}", rss_mib());
    assert!(peak < before + 2 * 64, "RSS {before} -> {peak} MiB");
    neighbour_ok(&engine, &neighbour).await;
}

/// A text module larger than the worker's memory fails the load at the
/// limit; the neighbour is untouched.
#[tokio::test]
async fn a_huge_text_module_ends_at_the_memory_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let huge = "x".repeat(96 << 20);
    let hog = modules_bundle(
        "t/huge-text",
        vec![
            es(
                "main.js",
                "import t from './huge.txt'; export default { fetch() { return new Response(String(t.length)); } };",
            ),
            Module::new("huge.txt", ModuleKind::Text, huge),
        ],
    );
    let mut hog = Arc::unwrap_or_clone(hog);
    hog.limits = memory_limits(64);
    let result = engine.execute(0, Arc::new(hog), get("/")).await;
    assert!(
        matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
        "{:?}",
        result.map(|r| r.status())
    );
    neighbour_ok(&engine, &neighbour).await;
}
