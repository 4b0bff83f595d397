//! `formData()` on hostile bodies: the copies the multipart parser works on
//! are charged to the worker's memory budget (a body near the limit ends in
//! `MemoryLimit`, not in memory the budget never saw), and the worker's
//! neighbour and its next isolate are unharmed.

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
