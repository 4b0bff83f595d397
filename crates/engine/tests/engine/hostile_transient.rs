//! Work that builds one huge string or array from parts that each fit
//! (a global `replace`, `join`, `concat`, `flat`), under a
//! 64 MiB limit: each ends at the limit, and the process's peak while it
//! runs stays within a small multiple of the limit, beside a benign
//! neighbour of another namespace on the same thread.

use std::sync::Arc;

use isolane_engine::{ExecuteError, PoolMode};

use crate::peak_rss::PeakRss;
use crate::support::*;

/// The most one such request may take the process past where it started:
/// the isolate's 64 MiB, and as much again while V8 copies what it built.
const PEAK_OVER_MIB: u64 = 2 * 64;

#[tokio::test]
async fn huge_results_built_from_small_parts_end_near_the_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let attacks = [
        // 260 references to one 1 MiB string: 260 MiB of JSON.
        // A regex replace whose every match makes 64 bytes.
        ("replace", "'a'.repeat(2**22).replace(/a/g, 'b'.repeat(64))"),
        ("replace many", "'a'.repeat(2**24).replace(/a/g, 'bb')"),
        ("replaceAll many", "'a'.repeat(2**24).replaceAll('a', 'bb')"),
        ("join", "new Array(260).fill('x'.repeat(2**20)).join(',')"),
        (
            "concat",
            "[].concat(...new Array(64).fill(new Array(2**20).fill(1)))",
        ),
        (
            "flat",
            "new Array(64).fill(new Array(2**20).fill(1)).flat()",
        ),
        (
            "template",
            "new Array(260).fill('x'.repeat(2**20)).reduce((a, b) => a + b, '').split('')",
        ),
    ];
    let mut failures = Vec::new();
    for (what, attack) in attacks {
        neighbour_ok(&engine, &neighbour).await;
        let bad = Arc::new(bundle_with(
            &format!("t/transient-{}", what.replace(' ', "-")),
            &format!(
                "export default {{ fetch() {{ const r = {attack}; return new Response(String(r.length)); }} }};"
            ),
            memory_limits(64),
            &[],
        ));
        let before = rss_mib();
        let sampler = PeakRss::start();
        let result = engine.execute(0, bad, get("/")).await;
        let peak = sampler.finish();
        eprintln!(
            "{what}: {:?}; RSS MiB before {before}, peak {peak}",
            result.as_ref().map(|r| r.status())
        );
        if !matches!(result, Err(ExecuteError::MemoryLimit { limit_mib: 64 })) {
            failures.push(format!("{what}: {:?}", result.map(|r| r.status())));
        }
        if peak >= before + PEAK_OVER_MIB {
            failures.push(format!("{what}: RSS {before} -> {peak} MiB"));
        }
        neighbour_ok(&engine, &neighbour).await;
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The wrapped builders answer as the natives do: each case of
/// `builders_cases.json` (an expression and what Node.js 20's V8 answers
/// for it, the standard's behaviour: replacers and their `this`,
/// indentation, `toJSON`, escapes, an array of keys, errors; `flat`,
/// `concat`, `join`) gives the same text in a Worker.
#[tokio::test]
async fn the_bounded_builders_answer_as_the_natives_do() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let cases: Vec<(String, String)> =
        serde_json::from_str(include_str!("builders_cases.json")).unwrap();
    let list: Vec<String> = cases
        .iter()
        .map(|(expression, _)| format!("() => String({expression})"))
        .collect();
    let worker = Arc::new(bundle_with(
        "t/builders",
        &format!(
            "const cases = [{}];
             export default {{ fetch() {{ return new Response(JSON.stringify(cases.map((c) => c()))); }} }};",
            list.join(",\n")
        ),
        memory_limits(64),
        &[],
    ));
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{body}");
    let got: Vec<String> = serde_json::from_str(&body).unwrap();
    for ((expression, want), got) in cases.iter().zip(&got) {
        assert_eq!(got, want, "{expression}");
    }
    assert_eq!(got.len(), cases.len());
}
