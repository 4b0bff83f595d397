//! Dispatch namespaces (Workers for Platforms) through `isolane dev
//! --workers` as a user runs it: the real binary, real HTTP, one engine
//! thread. A platform Worker of namespace `platform` dispatches by name to
//! customer Workers of two namespaces that agreed (their Namespace
//! documents carry `dispatch.isolane.dev/platform: "true"`), by `fetch` and
//! JS RPC; a namespace that did not agree is refused with the label named;
//! a name that does not exist is `Worker not found`; per-call limits lower
//! a customer's own: an endless loop ends at the 10 ms the platform gave it
//! (its own limit is 5 s) while a neighbour on the same thread answers
//! before, during and after, and a customer's subrequests stop at the
//! platform's lower count.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use std::time::{Duration, Instant};

use support::{Dev, request};

/// The platform: `/<kind>/<namespace binding>/<worker>` where kind is
/// `fetch`, `rpc`, or `cpu` / `sub` (a fetch with lowered limits); every
/// error caught and answered as `caught <class>: <message>`.
const PLATFORM: &str = r#"export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, kind, binding, worker] = url.pathname.split('/');
    const limits = kind === 'cpu' ? { cpuMs: 10 } : kind === 'sub' ? { subRequests: 2 } : undefined;
    const stub = env[binding].get(worker, {}, limits && { limits });
    const started = Date.now();
    try {
      if (kind === 'rpc') return new Response(await stub.hello('platform'));
      const r = await stub.fetch(`http://${worker}/${kind}`);
      return new Response(`${r.status} ${await r.text()}`);
    } catch (e) {
      return new Response(`caught ${e.constructor.name}: ${e.message} after ${Date.now() - started} ms`);
    }
  }
};
"#;

/// A customer's Worker: `fetch` and an RPC method, naming its namespace.
fn customer(namespace: &str) -> String {
    format!(
        r#"import {{ WorkerEntrypoint }} from 'cloudflare:workers';
export default class extends WorkerEntrypoint {{
  fetch(request) {{ return new Response(`{namespace}/shop ${{new URL(request.url).pathname}}`); }}
  hello(who) {{ return `hello ${{who}} from {namespace}/shop`; }}
}};
"#
    )
}

/// A hostile customer: an endless loop, with a CPU limit of its own of 5 s
/// (the engine's cap on any request).
const LOOP: &str = "export default { fetch() { for (;;) {} } };\n";

/// A customer making up to 5 subrequests (calls of its own namespace's
/// `shop`), answering how many it made.
const SUBREQUESTS: &str = r#"export default {
  async fetch(request, env) {
    let made = 0;
    try {
      for (; made < 5; made++) await env.SHOP.fetch('http://shop/');
      return new Response(`made ${made}`);
    } catch (e) {
      return new Response(`made ${made}, then ${e.constructor.name}: ${e.message}`);
    }
  }
};
"#;

/// The neighbour on the same thread, on its own route.
const NEIGHBOUR: &str = "export default { fetch() { return new Response('neighbour ok'); } };\n";

fn indent(js: &str) -> String {
    js.lines().map(|l| format!("    {l}\n")).collect()
}

fn namespace(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{ name: {name}, labels: {{ {labels} }} }}\n"
    )
}

fn worker(namespace: &str, name: &str, spec: &str, script: &str) -> String {
    format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: {name}, namespace: {namespace} }}\nspec:\n{spec}  script: |\n{}",
        indent(script)
    )
}

/// Every document: three customer namespaces (two agreed; `cust-c`
/// agreed to another platform only), the platform and the neighbour.
fn folder() -> String {
    let platform_spec = "  routes: [{ host: platform.test }]\n  bindings:\n    - { name: A, dispatchNamespace: { namespace: cust-a } }\n    - { name: B, dispatchNamespace: { namespace: cust-b } }\n    - { name: C, dispatchNamespace: { namespace: cust-c } }\n";
    let documents = [
        namespace("cust-a", "dispatch.isolane.dev/platform: \"true\""),
        namespace("cust-b", "dispatch.isolane.dev/platform: \"true\""),
        namespace("cust-c", "dispatch.isolane.dev/other: \"true\""),
        worker("platform", "dispatcher", platform_spec, PLATFORM),
        worker("cust-a", "shop", "", &customer("cust-a")),
        worker("cust-b", "shop", "", &customer("cust-b")),
        worker("cust-c", "shop", "", &customer("cust-c")),
        worker("cust-a", "spin", "  limits: { cpuMs: 5000 }\n", LOOP),
        worker(
            "cust-b",
            "counter",
            "  bindings: [{ name: SHOP, service: { name: shop } }]\n",
            SUBREQUESTS,
        ),
        worker(
            "neighbours",
            "neighbour",
            "  routes: [{ host: neighbour.test }]\n",
            NEIGHBOUR,
        ),
    ];
    documents.join("---\n")
}

async fn start() -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
    support::serve_with_neighbour(&folder()).await
}

async fn platform(client: &support::HttpClient, port: u16, path: &str) -> String {
    let (status, body) = request(client, port, "platform.test", path).await.unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    body
}

#[tokio::test]
async fn dev_platform_dispatches_by_name_into_namespaces_that_agreed() {
    let (dev, port, client, _dir) = start().await;
    // fetch and RPC into two namespaces, each its own Worker of one name.
    assert_eq!(
        platform(&client, port, "/fetch/A/shop").await,
        "200 cust-a/shop /fetch"
    );
    assert_eq!(
        platform(&client, port, "/fetch/B/shop").await,
        "200 cust-b/shop /fetch"
    );
    assert_eq!(
        platform(&client, port, "/rpc/A/shop").await,
        "hello platform from cust-a/shop"
    );
    assert_eq!(
        platform(&client, port, "/rpc/B/shop").await,
        "hello platform from cust-b/shop"
    );
    // A namespace that did not agree (its label names another platform).
    for kind in ["fetch", "rpc"] {
        let refused = platform(&client, port, &format!("/{kind}/C/shop")).await;
        assert!(
            refused.starts_with(
                "caught Error: Dispatch refused: namespace cust-c has not agreed to be dispatched into from namespace platform: its Namespace lacks the label dispatch.isolane.dev/platform=true"
            ),
            "{refused}"
        );
    }
    // A name that does not exist, as Cloudflare words it.
    let missing = platform(&client, port, "/fetch/A/nope").await;
    assert!(
        missing.starts_with("caught Error: Worker not found"),
        "{missing}"
    );
    let missing = platform(&client, port, "/rpc/B/spin").await;
    assert!(
        missing.starts_with("caught Error: Worker not found"),
        "spin is cust-a's, not cust-b's: {missing}"
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_per_call_limits_lower_a_customers_own_and_spare_the_neighbour() {
    let (dev, port, client, _dir) = start().await;
    let neighbour = || request(&client, port, "neighbour.test", "/");
    // The subrequests: 5 with the customer's own limit, 2 when lowered.
    assert_eq!(
        platform(&client, port, "/fetch/B/counter").await,
        "200 made 5"
    );
    let lowered = platform(&client, port, "/sub/B/counter").await;
    assert!(
        lowered.starts_with("200 made 2, then TypeError: Too many subrequests"),
        "{lowered}"
    );
    // The endless loop: its own limit is 5 s; the platform gave it 10 ms.
    // A turn's CPU time is never more than its wall time, so a call that
    // ran under the customer's own limit would take 5 s or more: that is
    // the bound (a cold isolate of a debug build on a loaded machine can
    // take a good part of a second before the loop even starts).
    let own_limit = Duration::from_secs(5);
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
    let started = Instant::now();
    let (hostile, during) = tokio::join!(platform(&client, port, "/cpu/A/spin"), async {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let asked = Instant::now();
        (neighbour().await.unwrap(), asked.elapsed())
    });
    let took = started.elapsed();
    eprintln!(
        "endless loop lowered to 10 ms: the call took {took:?}; the neighbour asked during it answered in {:?}",
        during.1
    );
    assert!(
        hostile.starts_with("caught Error: Service call failed: ") && hostile.contains("10 ms"),
        "{hostile}"
    );
    assert!(took < own_limit, "the loop ran {took:?}, not ~10 ms");
    assert_eq!(during.0, (200, "neighbour ok".to_owned()));
    assert!(during.1 < own_limit, "{:?}", during.1);
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
    // The customer's own Worker serves on (a fresh isolate), and still ends
    // at the lowered limit when asked again.
    let again = platform(&client, port, "/cpu/A/spin").await;
    assert!(again.contains("10 ms"), "{again}");
    assert_eq!(
        platform(&client, port, "/fetch/A/shop").await,
        "200 cust-a/shop /fetch"
    );
    assert!(dev.interrupt().success());
}
