//! A hostile worker against the memory limit, everything it holds counted:
//! sudden single allocations, memory off the JS heap, bodies read whole,
//! bytes waiting for a slow reader, a lying Content-Length and native calls
//! that run long. Each attack runs with a benign worker on the same thread,
//! checked before, during and after; the process (this test binary) staying
//! alive is itself the first assertion.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use isolane_engine::{Body, EngineConfig, ExecuteError, Limits, PoolMode, TerminationReason};

use crate::peak_rss::rss_mib;
use crate::support::*;

/// Each of these once aborted the process with V8's "Reached heap limit":
/// one allocation far past the limit, made in a single step.
#[tokio::test]
async fn single_huge_allocations_end_the_request_not_the_process() {
    let _alone = crate::peak_rss::alone().await;
    // CPU is plentiful, so that memory is the limit that ends each attack:
    // `Array.from` of 1e8 elements grows a dictionary one element at a
    // time and takes 3 to 8 s of CPU to fill 128 MiB here, on either side
    // of the engine's default 5 s cap (each Worker's own limit below is
    // `memory_limits`' 20 s).
    let (engine, recorder) = uncapped_engine();
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    // (attack, whether it may end as a stack overflow rather than memory: a
    // 16 M-argument spread does not fit the stack, a RangeError the worker
    // could catch, as in any browser; but its 128 MiB array alone is the
    // default limit, so it may as well reach the memory limit first. Either
    // way the request ends and the process lives.)
    let attacks = [
        ("new Array(2**26).fill(0)", false),
        ("Array.from({length: 1e8}, (_, i) => i)", false),
        ("Math.max(...new Array(2**24).fill(1))", true),
        ("/y/.test('ab'.repeat(2**27))", false),
    ];
    let mut memory_ends = 0;
    for (i, (attack, may_overflow)) in attacks.iter().enumerate() {
        let script = format!(
            "export default {{ fetch() {{ const x = {attack}; return new Response(String(x)); }} }};"
        );
        // The default memory limit: the case that aborted even with defaults.
        let bad = Arc::new(bundle_with(
            &format!("t/huge-{i}"),
            &script,
            Limits {
                memory_mib: Limits::default().memory_mib,
                ..memory_limits(128)
            },
            &[],
        ));
        let error = engine.execute(0, bad, get("/")).await.expect_err(attack);
        let overflowed = matches!(
            &error,
            ExecuteError::Exception { message } if message.contains("call stack")
        );
        if overflowed {
            assert!(*may_overflow, "{attack}: {error:?}");
        } else {
            assert!(
                matches!(error, ExecuteError::MemoryLimit { limit_mib: 128 }),
                "{attack}: {error:?}"
            );
            assert_eq!(error.status(), 503);
            assert_eq!(error.reason(), "memory_limit");
            memory_ends += 1;
        }
        neighbour_ok(&engine, &neighbour).await;
    }
    let terminations = recorder.terminations.lock().unwrap().clone();
    assert_eq!(
        terminations
            .iter()
            .filter(|r| **r == TerminationReason::MemoryLimit)
            .count(),
        memory_ends
    );
    assert!(memory_ends >= 3, "{terminations:?}");
}

/// Buffers kept in a global, request after request: every kind of
/// off-heap memory counts against `memoryMiB`, and once it is full the
/// isolate is discarded (its globals with it).
#[tokio::test]
async fn memory_off_the_js_heap_counts_against_the_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let kinds = [
        "new ArrayBuffer(8 << 20)",
        "new Float64Array(1 << 20)",
        "new TextEncoder().encode('x'.repeat(8 << 20))",
        "new Blob([new Uint8Array(8 << 20)])",
        "await new Response(new Uint8Array(8 << 20)).arrayBuffer()",
        "structuredClone(new Uint8Array(8 << 20))",
    ];
    let before = rss_mib();
    for (i, kind) in kinds.iter().enumerate() {
        let script = format!(
            "export default {{ async fetch() {{ globalThis.keep ??= []; keep.push({kind}); return new Response(String(keep.length)); }} }};"
        );
        let bad = Arc::new(bundle_with(
            &format!("t/hoard-{i}"),
            &script,
            memory_limits(64),
            &[],
        ));
        neighbour_ok(&engine, &neighbour).await;
        // 64 MiB holds at most 8 of these 8 MiB buffers.
        let mut kept = 0;
        let error = loop {
            match engine.execute(0, bad.clone(), get("/")).await {
                Ok(response) => {
                    let (status, body) = text(Ok(response)).await;
                    assert_eq!(status, 200, "{kind}");
                    kept = body.parse().unwrap();
                    assert!(
                        kept <= 8,
                        "{kind}: kept {kept} × 8 MiB under a 64 MiB limit"
                    );
                }
                Err(error) => break error,
            }
        };
        assert!(
            matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
            "{kind}: {error:?} after keeping {kept}"
        );
        neighbour_ok(&engine, &neighbour).await;
        // A fresh isolate: the hoard is gone.
        assert_eq!(
            run(&engine, 0, &bad, "/").await,
            (200, "1".to_owned()),
            "{kind}"
        );
    }
    neighbour_ok(&engine, &neighbour).await;
    // Six hoards of up to 64 MiB each were made and discarded; what stays is
    // far below what they held together (384 MiB).
    let grew = rss_mib().saturating_sub(before);
    assert!(grew < 256, "RSS grew by {grew} MiB");
}

/// A 1 GiB upload read whole with `request.arrayBuffer()` under a 128 MiB
/// limit: stopped at the limit, long before the upload ends.
#[tokio::test]
async fn a_body_read_whole_is_bounded_by_the_memory_limit() {
    let _alone = crate::peak_rss::alone().await;
    // No body cap: the memory limit, not the engine's 413, must stop it.
    let (engine, _recorder) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        spare_isolates: 1,
        max_request_body_bytes: 0,
        ..EngineConfig::default()
    });
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let bad = Arc::new(bundle_with(
        "t/reader",
        "export default { async fetch(request) { const b = await request.arrayBuffer(); return new Response(String(b.byteLength)); } };",
        memory_limits(128),
        &[],
    ));
    let (tx, body) = Body::channel(4);
    let sent = Arc::new(AtomicUsize::new(0));
    let uploader = {
        let sent = sent.clone();
        tokio::spawn(async move {
            let chunk = Bytes::from(vec![7u8; 1 << 20]);
            for _ in 0..1024 {
                if tx.send(chunk.clone()).await.is_err() {
                    return;
                }
                sent.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let error = engine
        .execute(0, bad, post("/", body))
        .await
        .expect_err("the whole upload must not fit");
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 128 }),
        "{error:?}"
    );
    uploader.await.unwrap();
    let sent = sent.load(Ordering::Relaxed);
    assert!(sent < 512, "read {sent} MiB of the upload before stopping");
    neighbour_ok(&engine, &neighbour).await;
}

/// A worker that streams 16 MiB chunks to a reader that takes nothing: what
/// waits for the reader is a few small slices, not the worker's chunks.
#[tokio::test]
async fn a_slow_reader_holds_only_small_slices() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let bad = Arc::new(bundle_with(
        "t/firehose",
        "export default { fetch() {
            const chunk = new Uint8Array(16 << 20);
            return new Response(new ReadableStream({ pull(c) { c.enqueue(chunk); } }));
        } };",
        memory_limits(128),
        &[],
    ));
    let response = engine.execute(0, bad, get("/")).await.unwrap();
    neighbour_ok(&engine, &neighbour).await;
    let mut body = response.into_body();
    let first = body.next_chunk().await.unwrap().unwrap();
    assert!(
        first.len() <= 64 * 1024,
        "a slice of {} bytes waited for the reader",
        first.len()
    );
    neighbour_ok(&engine, &neighbour).await;
    drop(body);
    neighbour_ok(&engine, &neighbour).await;
}

/// The bytes sent are what the headers say: never past the Content-Length.
#[tokio::test]
async fn a_lying_content_length_is_never_written_past() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let stream = |len: &str| {
        Arc::new(bundle_with(
            &format!("t/liar-{len}"),
            &format!(
                "export default {{ fetch() {{
                    const body = new Blob(['hello', ' world']).stream();
                    return new Response(body, {{ headers: {{ 'content-length': '{len}' }} }});
                }} }};"
            ),
            Limits::default(),
            &[],
        ))
    };
    // Longer than declared: cut at the declared length, then an error (the
    // front end closes the connection rather than send the rest).
    let response = engine.execute(0, stream("2"), get("/")).await.unwrap();
    assert_eq!(response.headers()["content-length"], "2");
    let mut body = response.into_body();
    let mut got = Vec::new();
    let mut failed = false;
    while let Some(chunk) = body.next_chunk().await {
        match chunk {
            Ok(bytes) => got.extend_from_slice(&bytes),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert_eq!(got, b"he");
    assert!(failed, "a body longer than declared must end in an error");
    // Shorter than declared: an error at the end too.
    let response = engine.execute(0, stream("100"), get("/")).await.unwrap();
    let collected = response.into_body().collect().await;
    assert!(collected.is_err(), "a short body must end in an error");
    // Exactly as declared: fine.
    let (status, text_body) = text(engine.execute(0, stream("11"), get("/")).await).await;
    assert_eq!((status, text_body.as_str()), (200, "hello world"));
    // A whole body is sent with its real length.
    let whole = Arc::new(bundle_with(
        "t/liar-whole",
        "export default { fetch() { return new Response('hello', { headers: { 'content-length': '2' } }); } };",
        Limits::default(),
        &[],
    ));
    let response = engine.execute(0, whole, get("/")).await.unwrap();
    assert_eq!(response.headers()["content-length"], "5");
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&bytes[..], b"hello");
}

/// The CPU time of the first finished request whose outcome is `outcome`,
/// once the engine has reported it (it does so after the body ended).
async fn cpu_of(recorder: &Recorder, outcome: isolane_engine::Outcome) -> Duration {
    let what = format!("a {outcome:?} request to be reported");
    isolane_testenv::wait_until(&what, Duration::from_secs(30), || async {
        let at = recorder
            .outcomes
            .lock()
            .unwrap()
            .iter()
            .position(|o| *o == outcome);
        at.and_then(|i| recorder.cpu.lock().unwrap().get(i).copied())
    })
    .await
}

/// `crypto.subtle.digest` of a large buffer stops at the CPU limit instead
/// of running to the end while the thread's other tenants wait.
///
/// The whole digest must end inside the engine's cap on any request
/// (`max_cpu_ms`, 5 s): 32 MiB takes about 1.5 s of CPU with a debug build's
/// unoptimised `sha2` (96 MiB met the cap in a fresh-clone run), and still
/// far more than twice the 20 ms limit with an optimised one.
#[tokio::test]
async fn a_long_digest_is_cut_at_the_cpu_limit() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "const data = new Uint8Array(32 << 20);
        export default { async fetch() {
            await crypto.subtle.digest('SHA-256', data);
            return new Response('done');
        } };";
    let generous = Limits {
        cpu_ms: 60_000,
        ..memory_limits(256)
    };
    // The whole digest, measured in this run, for comparison.
    let full = Arc::new(bundle_with("t/digest-full", script, generous, &[]));
    assert_eq!(run(&engine, 0, &full, "/").await, (200, "done".to_owned()));
    let full_cpu = cpu_of(&recorder, isolane_engine::Outcome::Ok).await;
    println!("the whole digest: {full_cpu:?} of CPU");
    let cut = Arc::new(bundle_with(
        "t/digest-cut",
        script,
        Limits {
            cpu_ms: 20,
            ..generous
        },
        &[],
    ));
    neighbour_ok(&engine, &neighbour).await;
    let error = engine.execute(0, cut, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 20 }),
        "{error:?}"
    );
    let cut_cpu = cpu_of(&recorder, isolane_engine::Outcome::CpuLimit).await;
    neighbour_ok(&engine, &neighbour).await;
    assert!(
        cut_cpu * 2 < full_cpu,
        "the cut digest used {cut_cpu:?} of CPU, the whole one {full_cpu:?}"
    );
}

/// Memory that V8 takes outside the allocator: a resizable ArrayBuffer's
/// reservation is charged up front; WebAssembly is never compiled from
/// bytes at run time (only from a bundle's modules: tests/engine/modules.rs).
#[tokio::test]
async fn reservations_count_and_wasm_is_not_compiled_at_run_time() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let hoard = Arc::new(bundle_with(
        "t/resizable",
        "export default { fetch() {
            globalThis.keep ??= [];
            const buffer = new ArrayBuffer(8, { maxByteLength: 16 << 20 });
            buffer.resize(16 << 20);
            keep.push(buffer);
            return new Response(String(keep.length));
        } };",
        memory_limits(64),
        &[],
    ));
    let mut kept = 0;
    let error = loop {
        match engine.execute(0, hoard.clone(), get("/")).await {
            Ok(response) => {
                kept = text(Ok(response)).await.1.parse().unwrap();
                assert!(kept <= 4, "kept {kept} × 16 MiB under a 64 MiB limit");
            }
            Err(error) => break error,
        }
    };
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
        "{error:?} after {kept}"
    );
    neighbour_ok(&engine, &neighbour).await;

    let wasm = Arc::new(bundle_with(
        "t/wasm",
        "const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
        export default { async fetch() {
            const out = [typeof WebAssembly, String(WebAssembly.validate(bytes))];
            for (const make of [() => new WebAssembly.Module(bytes), () => new WebAssembly.Memory({ initial: 1 })]) {
                try { make(); out.push('made'); } catch (e) { out.push(e.name); }
            }
            try { await WebAssembly.instantiate(bytes); out.push('made'); } catch (e) { out.push(e.name); }
            out.push(String(new ArrayBuffer(4) instanceof ArrayBuffer));
            return new Response(out.join(' '));
        } };",
        Limits::default(),
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &wasm, "/").await,
        (
            200,
            "object true CompileError made CompileError true".to_owned()
        )
    );
    neighbour_ok(&engine, &neighbour).await;
}

/// A worker whose turn ran on long past its limit (a builtin V8 cannot
/// interrupt) held the thread from everyone: its namespace waits on that
/// thread for a multiple of the overrun, and a request that could not wait
/// that long is refused as quarantined. Limits reached promptly are each
/// that request's failure alone, however many in a row.
#[tokio::test]
async fn only_an_overrun_past_the_limit_is_penalized() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let poison = Arc::new(bundle_with("t/poison", POISON, poison_limits(), &[]));
    let first = engine
        .execute(0, poison.clone(), get("/"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            first,
            ExecuteError::CpuLimit { .. } | ExecuteError::MemoryLimit { .. }
        ),
        "{first:?}"
    );
    neighbour_ok(&engine, &neighbour).await;
    let refused = engine
        .execute(0, poison.clone(), get("/"))
        .await
        .unwrap_err();
    let ExecuteError::Quarantined { retry_after_secs } = refused else {
        panic!("{refused:?}");
    };
    assert!(retry_after_secs >= 1, "{retry_after_secs}");
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.reason(), "quarantined");
    assert_eq!(refused.retry_after(), Some(retry_after_secs));
    neighbour_ok(&engine, &neighbour).await;

    // Stopped promptly each time: never penalized, whatever the count.
    let spinner = Arc::new(bundle_with(
        "spin/spinner",
        "export default { fetch(request) { if (new URL(request.url).pathname === '/ok') return new Response('ok'); for (;;) {} } };",
        Limits {
            cpu_ms: 20,
            ..memory_limits(64)
        },
        &[],
    ));
    for _ in 0..6 {
        let error = engine
            .execute(0, spinner.clone(), get("/"))
            .await
            .unwrap_err();
        assert!(matches!(error, ExecuteError::CpuLimit { .. }), "{error:?}");
    }
    assert_eq!(
        run(&engine, 0, &spinner, "/ok").await,
        (200, "ok".to_owned())
    );
    neighbour_ok(&engine, &neighbour).await;
    let outcomes = recorder.outcomes.lock().unwrap().clone();
    let quarantined = outcomes
        .iter()
        .filter(|o| **o == isolane_engine::Outcome::Quarantined)
        .count();
    assert_eq!(quarantined, 1, "{outcomes:?}");
}

/// A Worker whose top-level code never ends is stopped by the startup CPU
/// budget (1 s, Cloudflare's "Worker startup time"): its load fails with
/// the reason, and again at the next request; the neighbour on the same
/// thread answers before, while the hostile load runs, and after.
#[tokio::test]
async fn top_level_code_that_never_ends_is_stopped_by_the_startup_budget() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let endless = bundle(
        "t/endless-start",
        "for (;;) {}\nexport default { fetch() { return new Response('never'); } };",
    );
    let started = std::time::Instant::now();
    let (first, during) = tokio::join!(
        engine.execute(0, endless.clone(), get("/")),
        run(&engine, 0, &neighbour, "/"),
    );
    println!("stopped after {:?}", started.elapsed());
    assert_eq!(during, (200, "hello".to_owned()));
    for error in [
        first.unwrap_err(),
        engine.execute(0, endless, get("/")).await.unwrap_err(),
    ] {
        let refused_at_load = matches!(&error, ExecuteError::Script { message } if message.contains("startup CPU budget"));
        assert!(
            refused_at_load || matches!(error, ExecuteError::Quarantined { .. }),
            "{error:?}"
        );
    }
    neighbour_ok(&engine, &neighbour).await;
}

/// The startup budget grows with the bundle (`startup_cpu`: 1 s and 40 ms
/// a MiB): a never-seen 64 MiB bundle, which takes V8 about 2 s of CPU to
/// compile and start, answers its first request (under a flat 1 s it never
/// did), and the same 64 MiB with top-level code that never ends is still
/// stopped, at its own budget; the neighbour answers after each.
#[tokio::test]
async fn a_big_bundle_starts_within_its_own_budget_and_no_more() {
    let _alone = crate::peak_rss::alone().await;
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let big = isolane_testenv::big_module::es_module(64 << 20, "start");
    let started = std::time::Instant::now();
    let (status, _) = run(
        &engine,
        0,
        &modules_bundle("t/big", vec![es("main.js", &big)]),
        "/",
    )
    .await;
    println!("64 MiB: first answer after {:?}", started.elapsed());
    assert_eq!(status, 200);
    neighbour_ok(&engine, &neighbour).await;
    let endless = format!("{big}\nfor (;;) {{}}\n");
    let endless = modules_bundle("t/big-endless", vec![es("main.js", &endless)]);
    let started = std::time::Instant::now();
    let error = engine.execute(0, endless, get("/")).await.unwrap_err();
    println!("64 MiB, endless: stopped after {:?}", started.elapsed());
    assert!(
        matches!(&error, ExecuteError::Script { message } if message.contains("startup CPU budget")),
        "{error:?}"
    );
    neighbour_ok(&engine, &neighbour).await;
}
