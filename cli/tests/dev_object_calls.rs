//! Durable Object calls as parts of the request that makes them, through
//! `isolane dev --workers` as a user runs it (the real binary, real HTTP,
//! one engine thread; docs/durable-objects.md, "Calls count as
//! subrequests"):
//! - each stub call, by `stub.fetch` and by JS RPC, to an object of the
//!   Worker's own class (served in its own isolate) or of a class another
//!   Worker hosts (sent out of it), is one of the calling request's
//!   `subrequests`, as on Cloudflare: past them it rejects with the
//!   subrequest error, and a request can no longer make calls without
//!   bound;
//! - objects of two Workers calling each other in a cycle end at the depth
//!   bound of 32 with an error the 32nd object can catch, where the cycle
//!   used to run on, each object a fresh request, after its client had its
//!   wall-limit error; the neighbour of another namespace on the thread
//!   answers before and after.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;

use support::{HttpClient, neighbour_yaml, request, serve_with_neighbour, worker_yaml};

/// The caller: `/own/fetch?n=N`, `/own/rpc?n=N` (its own class) and
/// `/hosted/…` (a class Worker `host` hosts) call N objects at once and
/// answer how many answered, with the first failure's class and message.
const CALLER: &str = r#"export class Own {
  fetch() { return new Response('own'); }
  hello() { return 'own'; }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, which, via] = url.pathname.split('/');
    const n = Number(url.searchParams.get('n'));
    const ns = which === 'own' ? env.OWN : env.HOSTED;
    const calls = Array.from({ length: n }, (_, i) => {
      const stub = ns.get(ns.idFromName(String(i)));
      return via === 'rpc' ? stub.hello() : stub.fetch('http://object/').then((r) => r.text());
    });
    const failed = (await Promise.allSettled(calls)).filter((r) => r.status === 'rejected');
    const first = failed.length ? `: ${failed[0].reason.name}: ${failed[0].reason.message}` : '';
    return new Response(`${n - failed.length} of ${n} answered${first}`);
  }
};
"#;

const HOST: &str = r#"export class Hosted {
  fetch() { return new Response('hosted'); }
  hello() { return 'hosted'; }
}
export default { fetch() { return new Response('host'); } };
"#;

/// Worker `me`'s class `Me`, whose object of depth `d` calls an object of
/// depth `d + 1` of class `Other` (hosted by the other Worker of the
/// cycle), and says where the chain was refused; its `fetch` handler
/// starts the chain at depth 1.
fn cycle(me: &str, other: &str) -> String {
    format!(
        r#"async function next(env, d) {{
  const stub = env.{other}.get(env.{other}.idFromName(`o${{d}}`));
  try {{
    return await (await stub.fetch(`http://chain/?d=${{d}}`)).text();
  }} catch (e) {{
    return `refused in object ${{d - 1}}: ${{e.message}}`;
  }}
}}
export class {me} {{
  constructor(state, env) {{ this.env = env; }}
  async fetch(request) {{
    const d = Number(new URL(request.url).searchParams.get('d'));
    return new Response(await next(this.env, d + 1));
  }}
}}
export default {{ async fetch(request, env) {{ return new Response(await next(env, 1)); }} }};
"#
    )
}

fn folder() -> String {
    let caller = "  routes: [{ host: caller.test }]\n  bindings:\n    - { name: OWN, durableObject: { className: Own } }\n    - { name: HOSTED, durableObject: { className: Hosted, worker: host } }\n";
    let host = "  bindings: [{ name: HOSTED, durableObject: { className: Hosted } }]\n";
    let ping = "  routes: [{ host: ping.test }]\n  bindings:\n    - { name: Ping, durableObject: { className: Ping } }\n    - { name: Pong, durableObject: { className: Pong, worker: pong } }\n";
    let pong = "  bindings:\n    - { name: Pong, durableObject: { className: Pong } }\n    - { name: Ping, durableObject: { className: Ping, worker: ping } }\n";
    let documents = [
        worker_yaml("app", "caller", caller, CALLER),
        worker_yaml("app", "host", host, HOST),
        worker_yaml("app", "ping", ping, &cycle("Ping", "Pong")),
        worker_yaml("app", "pong", pong, &cycle("Pong", "Ping")),
        neighbour_yaml(),
    ];
    documents.join("---\n")
}

async fn get(client: &HttpClient, port: u16, host: &str, path: &str) -> (u16, String) {
    request(client, port, host, path).await.unwrap()
}

#[tokio::test]
async fn every_durable_object_call_is_one_of_its_request_s_subrequests() {
    let (_dev, port, client, _dir) = serve_with_neighbour(&folder()).await;
    let refused = "TypeError: Too many subrequests: a request may make at most 50 fetch calls (each redirect counts as one)";
    for which in ["own", "hosted"] {
        for via in ["fetch", "rpc"] {
            let path = |n: u32| format!("/{which}/{via}?n={n}");
            assert_eq!(
                get(&client, port, "caller.test", &path(50)).await,
                (200, "50 of 50 answered".to_owned()),
                "{which} by {via}: the default allowance"
            );
            assert_eq!(
                get(&client, port, "caller.test", &path(80)).await,
                (200, format!("50 of 80 answered: {refused}")),
                "{which} by {via}: past it"
            );
        }
    }
}

#[tokio::test]
async fn objects_of_two_workers_calling_each_other_end_at_the_depth_bound() {
    let (_dev, port, client, _dir) = serve_with_neighbour(&folder()).await;
    let neighbour = (200, "neighbour ok".to_owned());
    assert_eq!(get(&client, port, "neighbour.test", "/").await, neighbour);
    assert_eq!(
        get(&client, port, "ping.test", "/").await,
        (
            200,
            "refused in object 32: Durable Object call failed: the chain of calls is deeper than 32 (objects or Workers calling each other in a cycle)"
                .to_owned()
        )
    );
    assert_eq!(get(&client, port, "neighbour.test", "/").await, neighbour);
}
