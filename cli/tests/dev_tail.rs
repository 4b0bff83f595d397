//! `isolane dev` prints its Workers' invocations and console lines (the
//! tail): pretty by default, JSON lines with `--tail-format json`, nothing
//! with `--no-tail`. The real binary, real HTTP.
#![allow(clippy::unwrap_used)]

use isolane_testenv::wait_until;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, request, when_ready};

const WORKER: &str = "export default { fetch(request) {
    const path = new URL(request.url).pathname;
    console.log('hello from', path, { n: 1 });
    console.warn('two\\nlines');
    if (path === '/attack') console.log('\\x1b[2J\\x1b]0;pwned\\x07\\rfake');
    if (path === '/throw') throw new TypeError('it broke');
    return new Response('ok', { status: 202 });
} };";

fn worker_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("talker.js");
    std::fs::write(&path, WORKER).unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

/// Waits until the server's output has `want` in it.
async fn printed(dev: &Dev, want: &str) -> String {
    wait_until(&format!("{want:?} printed"), DEADLINE, || {
        let log = dev.process.log();
        async move {
            if log.contains(want) {
                Ok(log)
            } else {
                Err(log)
            }
        }
    })
    .await
}

#[tokio::test]
async fn dev_prints_each_invocation_then_its_console_lines() {
    let (_dir, path) = worker_file();
    let port = free_port().unwrap();
    let mut dev = Dev::start(&[&path, "--port", &port.to_string()]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "localhost", "/first")
            .await
            .0,
        202
    );
    let log = printed(&dev, "  hello from /first { n: 1 }\n").await;
    let head = log
        .lines()
        .find(|l| l.starts_with("[dev/talker] GET /first 202 "))
        .unwrap_or_else(|| panic!("no head line in:\n{log}"));
    assert!(head.contains("ms cpu ") && head.ends_with("ms"), "{head}");
    assert!(log.contains("  (warn) two\\nlines\n"), "{log}");

    assert_eq!(
        request(&client, port, "localhost", "/throw")
            .await
            .unwrap()
            .0,
        500
    );
    let log = printed(&dev, "  ✘ TypeError: it broke\n").await;
    assert!(log.contains("[dev/talker] GET /throw 500 "), "{log}");
    assert!(log.contains("(exception)"), "{log}");

    // What a client makes a Worker log reaches the reader's terminal as
    // text: no raw escape to clear the screen, set the title or redraw.
    assert_eq!(
        request(&client, port, "localhost", "/attack")
            .await
            .unwrap()
            .0,
        202
    );
    let log = printed(&dev, "  \\x1b[2J\\x1b]0;pwned\\x07\\rfake\n").await;
    assert!(
        !log.contains(['\x07', '\r']) && !log.contains("\x1b]0;"),
        "{log:?}"
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_prints_json_lines_with_tail_format_json() {
    let (_dir, path) = worker_file();
    let port = free_port().unwrap();
    let mut dev = Dev::start(&[&path, "--port", &port.to_string(), "--tail-format", "json"]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "localhost", "/json")
            .await
            .0,
        202
    );
    let log = printed(&dev, "\"url\":\"/json\"").await;
    let line = log
        .lines()
        .find(|l| l.contains("\"url\":\"/json\""))
        .unwrap();
    let event: isolane_worker::TailEvent = serde_json::from_str(line).unwrap();
    assert_eq!(
        (
            event.worker.as_str(),
            event.outcome.as_str(),
            event.status,
            event.method.as_str()
        ),
        ("dev/talker", "ok", 202, "GET")
    );
    let lines: Vec<(&str, &str)> = event
        .logs
        .iter()
        .map(|l| (l.level.as_str(), l.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        [("log", "hello from /json { n: 1 }"), ("warn", "two\nlines")]
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_prints_no_tail_with_no_tail() {
    let (_dir, path) = worker_file();
    let port = free_port().unwrap();
    let mut dev = Dev::start(&[&path, "--port", &port.to_string(), "--no-tail"]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "localhost", "/quiet")
            .await
            .0,
        202
    );
    // The node's log still says when it stops; the invocation never shows.
    let process = &mut dev;
    process
        .process
        .signal(nix::sys::signal::Signal::SIGINT)
        .unwrap();
    assert!(process.process.wait_exit(DEADLINE).unwrap().success());
    let log = dev.process.log();
    assert!(log.contains("shutting down"), "{log}");
    assert!(
        !log.contains("/quiet") && !log.contains("hello from"),
        "{log}"
    );
}
