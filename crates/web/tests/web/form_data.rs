//! `formData()` on hostile bodies: the copies the multipart parser works on
//! are charged to the worker's memory budget (a body near the limit ends in
//! `MemoryLimit`, not in memory the budget never saw), a body of very many
//! parts stops at the CPU or memory limit, and the worker's neighbour and its
//! next isolate are unharmed.

use std::sync::Arc;

use isolane_engine::{ExecuteError, Limits, PoolMode, TerminationReason};

use crate::support::*;

/// Parses a multipart body of `mib` MiB that is almost all preamble (which
/// multer skips), with one small file part: only the parser's own copies of
/// the body make the difference between fitting and not.
const PARSER: &str = "export default { async fetch(request) {
    const mib = Number(new URL(request.url).searchParams.get('mib'));
    const enc = new TextEncoder();
    const part = enc.encode('\\r\\n--b\\r\\nContent-Disposition: form-data; name=\"f\"; filename=\"x\"\\r\\n\\r\\nsmall\\r\\n--b--\\r\\n');
    const size = mib * 1024 * 1024;
    let body = new Uint8Array(size + part.length);
    body.fill(7, 0, size);
    body.set(part, size);
    const response = new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } });
    body = null;
    const form = await response.formData();
    return new Response(await form.get('f').text());
} };";

#[tokio::test]
async fn multipart_parsing_is_charged_to_the_memory_limit() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let parser = Arc::new(bundle_with(
        "t/form-data-parser",
        PARSER,
        Limits {
            memory_mib: 64,
            ..Limits::default()
        },
        &[],
    ));
    // Benign: a 4 MiB body.
    assert_eq!(
        run(&engine, 0, &parser, "/?mib=4").await,
        (200, "small".to_owned())
    );
    // Hostile: an 18 MiB body, held twice before the parse (the worker's
    // array and the Response's copy; 36 MiB fit) and twice more while it
    // runs (the copy handed to the parser and the parser's buffer): past
    // 64 MiB. Uncharged, those copies would have let it through.
    let error = engine
        .execute(0, parser.clone(), get("/?mib=18"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ExecuteError::MemoryLimit { limit_mib: 64 }),
        "{error:?}"
    );
    assert!(
        recorder
            .terminations
            .lock()
            .unwrap()
            .contains(&TerminationReason::MemoryLimit)
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    assert_eq!(
        run(&engine, 0, &parser, "/?mib=1").await,
        (200, "small".to_owned())
    );
}

/// A body of half a million empty parts (about 25 MiB, so the parser's
/// copies fit the default 128 MiB): the parse makes one entry per part and
/// runs into the worker's CPU limit (the watchdog is checked between parts)
/// or its memory limit; the worker is stopped there, not the process.
/// (A million parts, 50 MiB, are refused before parsing: the body and the
/// parser's two copies do not fit.)
const MANY_PARTS: &str = "export default { async fetch(request) {
    const n = Number(new URL(request.url).searchParams.get('n'));
    const body = '--b\\r\\nContent-Disposition: form-data; name=\"p\"\\r\\n\\r\\n\\r\\n'.repeat(n) + '--b--\\r\\n';
    const response = new Response(body, { headers: { 'content-type': 'multipart/form-data; boundary=b' } });
    const form = await response.formData();
    return new Response(String(form.getAll('p').length));
} };";

#[tokio::test]
async fn half_a_million_parts_end_in_a_limit() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    let parser = Arc::new(bundle_with(
        "t/form-data-many-parts",
        MANY_PARTS,
        Limits {
            cpu_ms: 50,
            ..Limits::default()
        },
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &parser, "/?n=1000").await,
        (200, "1000".to_owned())
    );
    let started = std::time::Instant::now();
    let error = engine
        .execute(0, parser.clone(), get("/?n=500000"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ExecuteError::CpuLimit { .. } | ExecuteError::MemoryLimit { .. }
        ),
        "{error:?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "stopped after {:?}",
        started.elapsed()
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.0, 200);
    assert_eq!(
        run(&engine, 0, &parser, "/?n=10").await,
        (200, "10".to_owned())
    );
}
