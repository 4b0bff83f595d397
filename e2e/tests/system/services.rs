//! Service bindings in a cluster (issue 56): the operator, two nodes and
//! the router as processes. A gateway Worker bound to a route-less backend
//! answers through the router by calling the backend's `fetch` and a JS
//! RPC method; every call runs on the gateway's own thread
//! (`isolane_service_calls_total{where="same_thread"}` counts each, on the
//! node that served the gateway); a binding to a Worker that does not
//! exist rejects with an error the gateway catches.

use isolane_crds::Worker;
use isolane_e2e::workers::inline_worker;
use isolane_worker::Binding;

use super::{System, names};

const HOST: &str = "gateway.test";
const CALLS: usize = 40;

const BACKEND: &str = "import { WorkerEntrypoint } from 'cloudflare:workers';\n\
export default class Backend extends WorkerEntrypoint {\n\
  async fetch(request) { return new Response('backend ' + new URL(request.url).pathname); }\n\
  async check(token, when) { return { ok: token === 'secret', year: when.getUTCFullYear(), props: this.ctx.props }; }\n\
}\n";

const GATEWAY: &str = "export default {\n\
  async fetch(request, env) {\n\
    const path = new URL(request.url).pathname;\n\
    if (path === '/rpc') return Response.json(await env.BACKEND.check('secret', new Date(Date.UTC(2026, 0, 1))));\n\
    if (path === '/ghost') { try { await env.GHOST.fetch('http://ghost/'); return new Response('no error'); } catch (e) { return new Response(e.constructor.name + ': ' + e.message); } }\n\
    return env.BACKEND.fetch(request);\n\
  },\n\
};\n";

fn workers() -> [Worker; 2] {
    let backend = inline_worker("backend", BACKEND, &[]);
    let mut gateway = inline_worker("gateway", GATEWAY, &[HOST]);
    gateway.spec.bindings = vec![
        Binding::service("BACKEND", "backend", None),
        Binding::service("GHOST", "ghost", None),
    ];
    [backend, gateway]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_calls_a_routeless_backend_on_its_own_thread_through_the_router() {
    let system = System::start(2).await;
    let workers = workers();
    system.kubectl_apply("services.yaml", &workers).await;
    system.wait_ready_and_placed(&names(&workers)).await;
    system.wait_served(HOST, "/hello", "backend /hello").await;
    let ingress = system.ingress();
    let rpc = ingress.get(HOST, "/rpc").await.expect("answered");
    assert_eq!(
        (rpc.status, rpc.body.as_str()),
        (200, r#"{"ok":true,"year":2026,"props":{}}"#)
    );
    let ghost = ingress.get(HOST, "/ghost").await.expect("answered");
    assert!(
        ghost.body.starts_with("Error: Service call failed") && ghost.body.contains("ghost"),
        "{}",
        ghost.body
    );
    let before = calls(&system).await;
    for i in 0..CALLS {
        let path = if i % 2 == 0 { "/rpc" } else { "/item" };
        let reply = ingress.get(HOST, path).await.expect("answered");
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    }
    let after = calls(&system).await;
    assert_eq!(
        after - before,
        CALLS as f64,
        "every call on its caller's thread"
    );
}

/// Service calls on the caller's own thread, over both nodes.
async fn calls(system: &System) -> f64 {
    let mut sum = 0.0;
    for node in &system.cluster.nodes {
        sum += node
            .metric_sum("isolane_service_calls_total", "where=\"same_thread\"")
            .await
            .unwrap_or(0.0);
    }
    sum
}
