//! The console (`js/17_console.js`) on real V8, its lines read from the
//! Worker's tail: the Web family's own classes are shown by their getters,
//! as the core's are, since the console runs after the files that define
//! them. (Its formatting: tests/web_api/console.js; its budgets and the
//! log flood beside a neighbour: the engine's `tests/engine/tail.rs`.)

use std::time::Duration;

use isolane_engine::{PoolMode, TailItem};

use crate::support::*;

const LOGGER: &str = "export default { async fetch() {
    console.log(new Blob(['ab']), new File(['c'], 'f', { lastModified: 5 }));
    const key = await crypto.subtle.generateKey({ name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    console.log(key);
    console.log(new Headers({ a: '1' }));
    return new Response('ok');
} };";

#[tokio::test]
async fn the_web_family_s_classes_are_shown_by_their_getters() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let worker = bundle("t/logger", LOGGER);
    let mut tail = engine.tail(Some(&worker.id)).unwrap();
    assert_eq!(run(&engine, 0, &worker, "/").await, (200, "ok".to_owned()));
    let item = tokio::time::timeout(Duration::from_secs(30), tail.next())
        .await
        .expect("an event within 30 s")
        .expect("the tail is open");
    let TailItem::Event(event) = item else {
        panic!("unexpected drop note: {item:?}");
    };
    let lines: Vec<&str> = event.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        "Blob { size: 2, type: '' } File { name: 'f', size: 1, type: '', lastModified: 5 }"
    );
    assert!(
        lines[1].starts_with("CryptoKey { type: 'secret', extractable: false, algorithm: {")
            && lines[1].ends_with("usages: [ 'sign' ] }"),
        "{}",
        lines[1]
    );
    assert_eq!(lines[2], "Headers { 'a' => '1' }");
}
