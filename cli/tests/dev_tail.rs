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

/// A Worker with a workflow: `/` creates instance `tailed-1`, whose run
/// logs a line.
const FLOW: &str = "import { WorkflowEntrypoint } from 'cloudflare:workers';
export class Steps extends WorkflowEntrypoint {
  async run(event, step) {
    console.log('run of', event.instanceId);
    return step.do('one', async () => 1);
  }
}
export default { async fetch(request, env) {
  const instance = await env.STEPS.create({ id: 'tailed-1' });
  return new Response(instance.id);
} };";

#[tokio::test]
async fn dev_prints_each_workflow_run_with_its_instance() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let yaml = support::worker_yaml(
        "qa",
        "flows",
        "  routes: [{host: w.test, pathPrefix: /}]\n  bindings:\n    - name: STEPS\n      workflow: {name: steps, className: Steps}\n",
        FLOW,
    );
    std::fs::write(dir.path().join("workers.yaml"), yaml).unwrap();
    let port = free_port().unwrap();
    let state_arg = state.path().to_str().unwrap();
    let extra = ["--state", state_arg, "--no-reload", "--tail-format", "json"];
    let mut dev = Dev::workers(dir.path(), port, &extra);
    let client = client();
    let (status, body) = when_ready(&client, &mut dev, port, "w.test", "/").await;
    assert_eq!((status, body.as_str()), (200, "tailed-1"));

    let want = "\"url\":\"/__workflow/steps/tailed-1\"";
    let log = printed(&dev, want).await;
    let line = log.lines().find(|l| l.contains(want)).unwrap();
    let event: isolane_worker::TailEvent = serde_json::from_str(line).unwrap();
    assert_eq!(
        (event.worker.as_str(), event.outcome.as_str(), event.status),
        ("qa/flows", "ok", 200)
    );
    let lines: Vec<&str> = event.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(lines, ["run of tailed-1"]);
    assert!(dev.interrupt().success());
}

/// A producer and its consumer, which throws: with `maxRetries: 0` and no
/// dead-letter queue, its one delivery fails and the message is dropped.
const DROPPER: &str = "export default {
  async fetch(request, env) {
    await env.JOBS.send('doomed', { contentType: 'text' });
    return new Response('sent');
  },
  async queue(batch) {
    console.log('batch of', batch.messages.length);
    throw new Error('refused');
  },
};";

#[tokio::test]
async fn dev_prints_each_queue_batch_and_each_dropped_message() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = support::worker_yaml(
        "qa",
        "dropper",
        "  routes: [{host: q.test, pathPrefix: /}]\n  bindings:\n    - name: JOBS\n      queue: {name: jobs}\n  queueConsumers:\n    - queue: jobs\n      maxBatchTimeoutMs: 0\n      maxRetries: 0\n",
        DROPPER,
    );
    std::fs::write(dir.path().join("workers.yaml"), yaml).unwrap();
    let port = free_port().unwrap();
    let extra = ["--no-reload", "--tail-format", "json"];
    let mut dev = Dev::workers(dir.path(), port, &extra);
    let client = client();
    let (status, body) = when_ready(&client, &mut dev, port, "q.test", "/").await;
    assert_eq!((status, body.as_str()), (200, "sent"));

    let event = |log: &str, want: &str| -> isolane_worker::TailEvent {
        let line = log.lines().find(|l| l.contains(want)).unwrap();
        serde_json::from_str(line).unwrap()
    };
    let batch = "\"url\":\"/__queue/jobs?batchSize=1\"";
    let log = printed(&dev, batch).await;
    let run = event(&log, batch);
    // A handler that threw answers 500 with its exception.
    assert_eq!((run.worker.as_str(), run.status), ("qa/dropper", 500));
    let lines: Vec<&str> = run.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(lines, ["batch of 1"]);
    assert_eq!(run.exceptions[0].message, "refused");

    let dropped = "\"url\":\"/__queue/jobs?dropped=";
    let log = printed(&dev, dropped).await;
    let drop = event(&log, dropped);
    assert_eq!(
        (
            drop.worker.as_str(),
            drop.method.as_str(),
            drop.outcome.as_str()
        ),
        ("qa/dropper", "QUEUE", "message_dropped")
    );
    let id = drop.url.rsplit('=').next().unwrap();
    assert_eq!((id.len(), drop.logs.len()), (32, 1));
    assert_eq!(drop.logs[0].level, "warn");
    assert_eq!(
        drop.logs[0].message,
        format!(
            "queue jobs: message {id} ran out of retries after 1 deliveries and has no dead-letter queue; dropped"
        )
    );
    assert!(dev.interrupt().success());
}
