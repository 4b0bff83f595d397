//! A hostile namespace fanning out service calls, through `isolane dev
//! --workers` as a user runs it (the real binary, real HTTP, one engine
//! thread), beside a neighbour of another namespace on the same thread
//! that answers correctly before, during and after (docs/isolation.md,
//! "It cannot multiply one request with service calls"):
//! - thousands of calls at once (`fetch` and JS RPC) to a callee that
//!   never settles: at most the top-level request's `subrequests` run, the
//!   request ends with the subrequest limit's error, and none is left
//!   running;
//! - a Worker bound to itself recursing with fan-out 2, directly and
//!   through a dispatch namespace binding: the whole tree makes at most
//!   the top-level request's `subrequests` calls (not 2^32);
//! - callees that burn CPU: the tree shares the top-level request's
//!   `cpuMs`;
//! - callees that answer and linger in `ctx.waitUntil`: canceled when the
//!   top-level request ends;
//! - Worker Loader code: at most 4 distinct loaded Workers in flight.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use std::time::Duration;

use isolane_testenv::wait_until;
use support::{Dev, HttpClient, neighbour_yaml, request, serve_with_neighbour, worker_yaml};

/// The attacker's Worker: every path a way to fan out (see the tests).
const FAN: &str = r#"import { WorkerEntrypoint } from 'cloudflare:workers';
const LOADED = {
  compatibilityDate: '2025-06-01',
  mainModule: 'main.js',
  modules: { 'main.js': "export default { fetch() { return new Promise((r) => setTimeout(() => r(new Response('done')), 300)); } };" },
};
async function tree(env, url) {
  const depth = Number(url.searchParams.get('depth'));
  const width = Number(url.searchParams.get('width'));
  let ran = 1, refused = 0;
  const errors = new Set();
  if (depth > 0) {
    const next = `http://self/tree?depth=${depth - 1}&width=${width}`;
    const calls = Array.from({ length: width }, () => env.SELF.fetch(next).then((r) => r.json()));
    for (const r of await Promise.allSettled(calls)) {
      if (r.status === 'fulfilled') {
        ran += r.value.ran;
        refused += r.value.refused;
        r.value.errors.forEach((e) => errors.add(e));
      } else {
        refused += 1;
        errors.add(r.reason.message.split(':')[0]);
      }
    }
  }
  return { ran, refused, errors: [...errors].sort() };
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n'));
    const [, what, via] = url.pathname.split('/');
    if (what === 'tree') return Response.json(await tree(env, url));
    if (what === 'count') return env.HOLD.fetch('http://holder/count');
    if (what === 'dispatch') return env.D.get('relay').fetch(`http://relay/tree${url.search}`);
    if (what === 'wide') {
      const calls = [];
      for (let i = 0; i < n; i++) {
        calls.push(via === 'rpc' ? env.HOLD_RPC.hold() : env.HOLD.fetch('http://holder/hold'));
      }
      try {
        await Promise.all(calls);
        return new Response('every call answered');
      } catch (e) {
        return new Response(`caught ${e.constructor.name}: ${e.message}`);
      }
    }
    if (what === 'linger') {
      const calls = Array.from({ length: n }, () => env.HOLD.fetch('http://holder/linger').then((r) => r.text()));
      return new Response(`${(await Promise.all(calls)).length} answered`);
    }
    if (what === 'burn') {
      const calls = Array.from({ length: n }, () => env.SPIN.fetch('http://spin/'));
      const settled = await Promise.allSettled(calls);
      return new Response(`${settled.filter((r) => r.status === 'rejected').length} of ${n} failed`);
    }
    if (what === 'loaded') {
      const tag = url.searchParams.get('tag');
      const calls = Array.from({ length: n }, (_, i) =>
        env.LOADER.get(`slow-${tag}-${i}`, async () => LOADED).getEntrypoint().fetch('http://loaded/').then((r) => r.text()));
      const settled = await Promise.allSettled(calls);
      const done = settled.filter((r) => r.status === 'fulfilled').length;
      const refused = [...new Set(settled.filter((r) => r.status === 'rejected').map((r) => r.reason.message))];
      return Response.json({ done, refused });
    }
    return new Response('no such attack', { status: 404 });
  }
};
"#;

/// The attacker's callee: `/hold` never answers, `/linger` answers and
/// keeps working in `ctx.waitUntil` forever; `live` counts its requests
/// not yet canceled (their signal aborts when they are), `entered` all it
/// ever got. `Holder.hold()` is the same over JS RPC.
const HOLDER: &str = r#"import { WorkerEntrypoint } from 'cloudflare:workers';
let live = 0, entered = 0;
export class Holder extends WorkerEntrypoint {
  hold() { entered += 1; return new Promise(() => {}); }
}
export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === '/count') return Response.json({ live, entered });
    entered += 1;
    live += 1;
    request.signal.addEventListener('abort', () => { live -= 1; });
    if (path === '/linger') {
      ctx.waitUntil(new Promise(() => {}));
      return new Response('answered');
    }
    return new Promise(() => {});
  }
};
"#;

/// The attacker's CPU burner: an endless loop, with a CPU limit of 1 s of
/// its own (its caller's is 500 ms).
const SPINNER: &str = "export default { fetch() { for (;;) {} } };\n";

/// The Worker of namespace `victims` the attacker dispatches into: the
/// same recursion, through its own binding to itself.
fn relay() -> String {
    FAN.to_owned()
}

fn folder() -> String {
    let fan_spec = "  routes: [{ host: fan.test }]\n  limits: { cpuMs: 500, wallMs: 20000 }\n  bindings:\n    - { name: SELF, service: { name: fan } }\n    - { name: HOLD, service: { name: holder } }\n    - { name: HOLD_RPC, service: { name: holder, entrypoint: Holder } }\n    - { name: SPIN, service: { name: spinner } }\n    - { name: LOADER, workerLoader: {} }\n    - { name: D, dispatchNamespace: { namespace: victims } }\n";
    let relay_spec = "  limits: { wallMs: 20000 }\n  bindings:\n    - { name: SELF, service: { name: relay } }\n";
    let documents = [
        "apiVersion: v1\nkind: Namespace\nmetadata: { name: victims, labels: { dispatch.isolane.dev/attack: \"true\" } }\n".to_owned(),
        worker_yaml("attack", "fan", fan_spec, FAN),
        worker_yaml("attack", "holder", "", HOLDER),
        worker_yaml("attack", "spinner", "  limits: { cpuMs: 1000 }\n", SPINNER),
        worker_yaml("victims", "relay", relay_spec, &relay()),
        neighbour_yaml(),
    ];
    documents.join("---\n")
}

async fn start() -> (Dev, u16, HttpClient, tempfile::TempDir) {
    serve_with_neighbour(&folder()).await
}

/// The neighbour answers correctly, now.
async fn neighbour_ok(client: &HttpClient, port: u16) {
    assert_eq!(
        request(client, port, "neighbour.test", "/").await.unwrap(),
        (200, "neighbour ok".to_owned()),
        "the neighbour of another namespace on the same thread"
    );
}

/// The answers of `clients` concurrent requests for `path` of the
/// attacker, the neighbour checked before, while any of them runs, and
/// after.
async fn attack(client: &HttpClient, port: u16, path: &str, clients: usize) -> Vec<(u16, String)> {
    neighbour_ok(client, port).await;
    let attacks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, path) = (client.clone(), path.to_owned());
            tokio::spawn(async move { request(&client, port, "fan.test", &path).await.unwrap() })
        })
        .collect();
    while attacks.iter().any(|a| !a.is_finished()) {
        neighbour_ok(client, port).await;
    }
    let mut answers = Vec::new();
    for a in attacks {
        answers.push(a.await.unwrap());
    }
    neighbour_ok(client, port).await;
    answers
}

/// The holder's `(live, entered)`.
async fn holder_counts(client: &HttpClient, port: u16) -> (u64, u64) {
    let (status, body) = request(client, port, "fan.test", "/count").await.unwrap();
    assert_eq!(status, 200, "{body}");
    let counts: serde_json::Value = serde_json::from_str(&body).unwrap();
    (
        counts["live"].as_u64().unwrap(),
        counts["entered"].as_u64().unwrap(),
    )
}

/// Waits until none of the holder's requests is live (within 10 s, a
/// third of their own wall limit).
async fn none_live(client: &HttpClient, port: u16, what: &str) {
    wait_until(what, Duration::from_secs(10), || async {
        let (live, _) = holder_counts(client, port).await;
        (live == 0)
            .then_some(())
            .ok_or(format!("{live} still live"))
    })
    .await;
}

/// The tree's answer: `(ran, refused, errors)`.
fn tree_answer((status, body): &(u16, String)) -> (u64, u64, Vec<String>) {
    assert_eq!(*status, 200, "{body}");
    let tree: serde_json::Value = serde_json::from_str(body).unwrap();
    let errors = tree["errors"].as_array().unwrap();
    (
        tree["ran"].as_u64().unwrap(),
        tree["refused"].as_u64().unwrap(),
        errors
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .collect(),
    )
}

const TOO_MANY: &str = "caught TypeError: Too many subrequests: a request may make at most 50 fetch calls (each redirect counts as one)";

#[tokio::test]
async fn thousands_of_calls_at_once_stop_at_the_subrequest_limit_and_leave_nothing_running() {
    let (_dev, port, client, _dir) = start().await;
    let mut entered_before = 0;
    for via in ["fetch", "rpc"] {
        // Eight clients at once, each asking for 3,000 never-settling calls.
        let answers = attack(&client, port, &format!("/wide/{via}?n=3000"), 8).await;
        for answer in &answers {
            assert_eq!(answer, &(200, TOO_MANY.to_owned()), "{via}");
        }
        // At most each request's 50 ran; none is left running once the
        // requests ended (the holder's in-flight count, by its signals).
        let (_, entered) = holder_counts(&client, port).await;
        assert!(
            entered - entered_before <= 8 * 50,
            "{via}: {} callee invocations for 8 requests",
            entered - entered_before
        );
        entered_before = entered;
        none_live(&client, port, "the held calls to be canceled").await;
    }
}

#[tokio::test]
async fn a_worker_calling_itself_with_fan_out_two_makes_one_subrequest_budget_of_calls() {
    let (_dev, port, client, _dir) = start().await;
    // Depth 40 (past the bound of 32), two calls at each level: without a
    // budget per tree, 2^32 calls.
    for path in [
        "/tree?depth=40&width=2",
        "/tree?depth=3&width=50",
        "/dispatch?depth=40&width=2",
    ] {
        let answers = attack(&client, port, path, 2).await;
        for answer in &answers {
            let (ran, refused, errors) = tree_answer(answer);
            assert!(
                ran <= 51,
                "{path}: {ran} invocations in one tree ({answer:?})"
            );
            assert!(refused >= 1, "{path}: {answer:?}");
            assert_eq!(errors, ["Too many subrequests"], "{path}");
        }
    }
}

#[tokio::test]
async fn callees_burning_cpu_share_the_top_level_request_s_cpu_limit() {
    let (_dev, port, client, _dir) = start().await;
    // Ten callees with 1 s of CPU each under a caller allowed 500 ms: the
    // tree stops at the caller's 500 ms, and so does the caller.
    let answers = attack(&client, port, "/burn?n=10", 1).await;
    let (status, body) = &answers[0];
    assert_ne!(*status, 200, "{body}");
    assert!(
        body.contains("CPU time limit of 500 ms exceeded"),
        "{status} {body}"
    );
    // A plain request of the same Worker is served after it.
    let tree = request(&client, port, "fan.test", "/tree?depth=0&width=0")
        .await
        .unwrap();
    assert_eq!(tree_answer(&tree), (1, 0, vec![]));
}

#[tokio::test]
async fn callees_lingering_in_wait_until_end_with_their_top_level_request() {
    let (_dev, port, client, _dir) = start().await;
    for _ in 0..3 {
        let answers = attack(&client, port, "/linger?n=40", 4).await;
        for answer in &answers {
            assert_eq!(answer, &(200, "40 answered".to_owned()));
        }
        // Every callee answered at once and kept working in `waitUntil`
        // (its own wall limit: 30 s); none outlives its top-level request.
        none_live(&client, port, "the lingering callees to be canceled").await;
    }
}

#[tokio::test]
async fn at_most_four_distinct_loaded_workers_are_in_flight_per_request() {
    let (_dev, port, client, _dir) = start().await;
    for (tag, n) in [("a", 8), ("b", 4), ("c", 30)] {
        let answers = attack(&client, port, &format!("/loaded?n={n}&tag={tag}"), 1).await;
        let (status, body) = &answers[0];
        assert_eq!(*status, 200, "{body}");
        let loaded: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(loaded["done"], 4, "{tag}: {body}");
        let refused = if n > 4 {
            serde_json::json!([
                "Worker Loader: a request may have calls in flight to at most 4 distinct loaded Workers at once (its service calls' included); await one first"
            ])
        } else {
            serde_json::json!([])
        };
        assert_eq!(loaded["refused"], refused, "{tag}: {body}");
    }
}
