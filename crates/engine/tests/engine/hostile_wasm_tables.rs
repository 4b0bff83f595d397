//! WebAssembly's other ways to allocate, against the memory limit: tables
//! grown inside Wasm (`table.grow`) or declared large, and WasmGC arrays
//! (`array.new`, `array.new_default`, in code and in a global's
//! initializer). Each hostile Worker runs beside a benign neighbour of
//! another namespace on the same thread, checked before, during and after,
//! and the process's peak RSS is measured around it.

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{ExecuteError, Module, ModuleKind, PoolMode, WorkerBundle};

use crate::peak_rss::PeakRss;
use crate::peak_rss::rss_mib;
use crate::support::*;

/// The most a hostile request may take the process past where it started:
/// its isolate at its 64 MiB limit, twice over for what V8 copies while a
/// table grows, never hundreds of MiB more.
const PEAK_OVER_MIB: u64 = 2 * 64;

/// V8's largest table (entries): each grow below asks for all of it.
const TABLE_ENTRIES: u32 = 10_000_000;

/// A Worker whose `main.js` instantiates `wasm` and answers what its
/// exported `run` returns, under `memory_mib`.
pub fn wasm_worker(id: &str, wasm: Vec<u8>, memory_mib: u32) -> Arc<WorkerBundle> {
    let bundle = modules_bundle(
        id,
        vec![
            es(
                "main.js",
                "import m from './hog.wasm';
                 export default { fetch() {
                     const { exports } = new WebAssembly.Instance(m);
                     return new Response(String(exports.run()));
                 } };",
            ),
            Module::new("hog.wasm", ModuleKind::CompiledWasm, wasm),
        ],
    );
    let mut bundle = Arc::unwrap_or_clone(bundle);
    bundle.limits = memory_limits(memory_mib);
    Arc::new(bundle)
}

/// `tables` funcref tables of `declared` entries each; `run` grows each by
/// `grow` entries in one straight line of code (no loop, no call: nothing
/// V8 would stop at between the grows) and answers the sum of their sizes.
fn tables_module(tables: u32, declared: u32, grow: u32) -> Vec<u8> {
    let mut text = String::from("(module\n");
    for t in 0..tables {
        text.push_str(&format!("(table $t{t} {declared} funcref)\n"));
    }
    text.push_str("(func (export \"run\") (result i32)\n");
    for t in 0..tables {
        text.push_str(&format!(
            "(drop (table.grow $t{t} (ref.null func) (i32.const {grow})))\n"
        ));
    }
    text.push_str("(i32.const 0)\n");
    for t in 0..tables {
        text.push_str(&format!("(i32.add (table.size $t{t}))\n"));
    }
    text.push_str("))");
    wat::parse_str(text).unwrap()
}

/// Runs `hog` beside the neighbour: the hog must end at its memory limit,
/// the neighbour must answer before, while the hog runs, and after.
async fn ends_at_the_limit(what: &str, hog: Arc<WorkerBundle>) {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let before = rss_mib();
    let sampler = PeakRss::start();
    let started = std::time::Instant::now();
    let (result, ()) = tokio::join!(
        engine.execute(0, hog, get("/")),
        neighbour_ok(&engine, &neighbour)
    );
    let waited = started.elapsed();
    let peak = sampler.finish();
    eprintln!("{what}: neighbour answered within {waited:?}; RSS MiB before {before}, peak {peak}");
    assert!(
        matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
        "{what}: {:?}",
        result.map(|r| r.status())
    );
    assert!(
        peak < before + PEAK_OVER_MIB,
        "{what}: RSS {before} -> {peak} MiB"
    );
    // Seconds would mean the hog held the thread: a coarse bound, not a
    // timing (the hog's own work is milliseconds when it is stopped).
    assert!(waited < Duration::from_secs(5), "{what}: {waited:?}");
    neighbour_ok(&engine, &neighbour).await;
}

/// W1: 1, 12 and 40 tables grown by ten million entries each, inside Wasm.
#[tokio::test]
async fn tables_grown_inside_wasm_end_at_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    for tables in [1, 12, 40] {
        let hog = wasm_worker(
            &format!("t/table-grow{tables}"),
            tables_module(tables, 0, TABLE_ENTRIES),
            64,
        );
        ends_at_the_limit(&format!("{tables} tables grown"), hog).await;
    }
}

/// W1 at instantiation: 1, 12 and 40 tables declared with ten million
/// entries each.
#[tokio::test]
async fn tables_declared_large_end_at_instantiation() {
    let _alone = crate::peak_rss::alone().await;
    for tables in [1, 12, 40] {
        let hog = wasm_worker(
            &format!("t/table-declared{tables}"),
            tables_module(tables, TABLE_ENTRIES, 0),
            64,
        );
        ends_at_the_limit(&format!("{tables} tables declared"), hog).await;
    }
}

/// An array type of `element` and a `run` that makes one with `make`.
fn array_module(element: &str, make: &str) -> Vec<u8> {
    wat::parse_str(format!(
        "(module
           (type $a (array (mut {element})))
           (func (export \"run\") (result i32) (array.len {make})))"
    ))
    .unwrap()
}

/// W2: one WasmGC array of nearly 1 GiB (V8's largest array is just under
/// 2^30 bytes: it refuses one of exactly 2^30 by itself) of bytes, of
/// eight-byte elements, and one with an initial value, under a 64 MiB
/// limit.
#[tokio::test]
async fn a_huge_gc_array_ends_before_it_is_made() {
    let _alone = crate::peak_rss::alone().await;
    for (what, wasm) in [
        (
            "array.new_default i8",
            array_module("i8", "(array.new_default $a (i32.const 1073740800))"),
        ),
        (
            "array.new_default i64",
            array_module("i64", "(array.new_default $a (i32.const 134217600))"),
        ),
        (
            "array.new f64",
            array_module("f64", "(array.new $a (f64.const 1) (i32.const 134217600))"),
        ),
    ] {
        let hog = wasm_worker(&format!("t/{}", what.replace([' ', '.'], "-")), wasm, 64);
        ends_at_the_limit(what, hog).await;
    }
}

/// A global's initializer makes its array when the module is instantiated.
#[tokio::test]
async fn a_huge_array_in_a_global_initializer_ends_at_instantiation() {
    let _alone = crate::peak_rss::alone().await;
    let wasm = wat::parse_str(
        "(module
           (type $a (array (mut i8)))
           (global $g (ref $a) (array.new_default $a (i32.const 1073740800)))
           (func (export \"run\") (result i32) (array.len (global.get $g))))",
    )
    .unwrap();
    ends_at_the_limit("global array", wasm_worker("t/global-array", wasm, 64)).await;
}

/// What real modules do still works: tables grown a little at a time (and
/// refused at their declared maximum, as Wasm says), arrays small and
/// large within the limit, arrays in globals.
#[tokio::test]
async fn tables_and_arrays_within_the_limit_work() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let wasm = wat::parse_str(
        "(module
           (type $bytes (array (mut i8)))
           (type $refs (array (mut anyref)))
           (table $t 1 2000 funcref)
           (global $g (ref $bytes) (array.new_default $bytes (i32.const 4096)))
           (func (export \"run\") (result i32)
             (local $i i32)
             (local $sum i32)
             ;; 1 + 19 grows of 100 entries: 1901; the 20th passes 2000: -1.
             (loop $more
               (local.set $sum (table.grow $t (ref.null func) (i32.const 100)))
               (local.set $i (i32.add (local.get $i) (i32.const 1)))
               (br_if $more (i32.lt_u (local.get $i) (i32.const 20))))
             (i32.add
               (i32.add (table.size $t) (local.get $sum))
               (i32.add
                 (i32.add
                   (array.len (array.new_default $bytes (i32.const 8388608)))
                   (array.len (array.new $refs (ref.null any) (i32.const 1000))))
                 (array.len (global.get $g))))))",
    )
    .unwrap();
    let worker = wasm_worker("t/benign-wasm", wasm, 64);
    // 1901 entries, -1 for the refused grow, 8 MiB + 1000 + 4096 elements.
    let expected = 1901 - 1 + 8_388_608 + 1000 + 4096;
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, expected.to_string())
    );
    // Again on the same isolate: nothing was left charged.
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, expected.to_string())
    );
}

/// Tables made and grown through the JS API, 40 in a straight line of
/// code (nothing V8 stops at between them).
#[tokio::test]
async fn js_tables_in_a_straight_line_end_at_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    for (what, make) in [
        (
            "new Table",
            "keep.push(new WebAssembly.Table({ initial: 10000000, element: 'anyfunc' }));",
        ),
        (
            "Table.grow",
            "{ const t = new WebAssembly.Table({ initial: 0, element: 'anyfunc' }); t.grow(10000000); keep.push(t); }",
        ),
    ] {
        let code = format!("const keep = [];\n{}", make.repeat(40));
        let hog = modules_bundle(
            &format!("t/js-tables-{}", what.replace([' ', '.'], "-")),
            vec![es(
                "main.js",
                &format!(
                    "export default {{ fetch() {{ {code} return new Response('escaped'); }} }};"
                ),
            )],
        );
        let mut hog = Arc::unwrap_or_clone(hog);
        hog.limits = memory_limits(64);
        ends_at_the_limit(what, Arc::new(hog)).await;
    }
}

/// The JS API's tables behave as the standard says within the limit.
#[tokio::test]
async fn js_tables_within_the_limit_work() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = modules_bundle(
        "t/js-tables-benign",
        vec![es(
            "main.js",
            "export default { fetch() {
                 const t = new WebAssembly.Table({ initial: 2, maximum: 4, element: 'anyfunc' });
                 const old = t.grow(1);
                 let refused = 'no';
                 try { t.grow(5); } catch (e) { refused = e.constructor.name; }
                 const ext = new WebAssembly.Table({ initial: 1, element: 'externref' }, 'x');
                 ext.grow(1, 'y');
                 class Mine extends WebAssembly.Table {}
                 const mine = new Mine({ initial: 1, element: 'externref' });
                 return new Response([old, t.length, refused, ext.get(0), ext.get(1),
                     t instanceof WebAssembly.Table, mine instanceof Mine,
                     WebAssembly.Table.prototype.grow.length].join(' '));
             } };",
        )],
    );
    assert_eq!(
        run(&engine, 0, &worker, "/").await,
        (200, "2 3 RangeError x y true true 1".to_owned())
    );
}
