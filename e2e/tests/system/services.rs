//! Service bindings in a cluster (issue 56): the operator, two nodes and
//! the router as processes. A gateway Worker bound to a route-less backend
//! answers through the router by calling the backend's `fetch` and a JS
//! RPC method; every call runs on the gateway's own thread
//! (`isolane_service_calls_total{where="same_thread"}` counts each, on the
//! node that served the gateway); a binding to a Worker that does not
//! exist rejects with an error the gateway catches, and the gateway's
//! `ServicesBound` condition names it until the Worker is made, when the
//! same binding answers.

use isolane_crds::Worker;
use isolane_e2e::workers::{has_condition, inline_worker};
use isolane_testenv::wait_until;
use isolane_worker::Binding;

use super::{SETTLE, System, names};

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
    if (path === '/ghost') { try { return await env.GHOST.fetch('http://ghost/'); } catch (e) { return new Response(e.constructor.name + ': ' + e.message); } }\n\
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
    ghost_appears(&system).await;
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

/// The gateway reports its binding to the missing `ghost` in
/// `ServicesBound`; once `ghost` is applied, the condition turns True and
/// the same binding reaches it.
async fn ghost_appears(system: &System) {
    let api = system.workers_api();
    let gateway = api.get("gateway").await.expect("the gateway");
    assert!(has_condition(&gateway, "Ready", "True", None));
    assert!(has_condition(
        &gateway,
        "ServicesBound",
        "False",
        Some("ServiceNotFound")
    ));
    let message = gateway.status.as_ref().and_then(|status| {
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == "ServicesBound")?;
        Some(condition.message.clone())
    });
    assert!(
        message.as_deref().is_some_and(
            |m| m.contains("binding GHOST names Worker ghost") && !m.contains("BACKEND")
        ),
        "{message:?}"
    );
    let ghost = inline_worker(
        "ghost",
        "export default { fetch() { return new Response('ghost here'); } };\n",
        &[],
    );
    system.kubectl_apply("ghost.yaml", &[ghost]).await;
    wait_until(
        "the gateway's ServicesBound to turn True",
        SETTLE,
        || async {
            let gateway = api.get("gateway").await.ok()?;
            has_condition(&gateway, "ServicesBound", "True", Some("ServicesFound")).then_some(())
        },
    )
    .await;
    system.wait_served(HOST, "/ghost", "ghost here").await;
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
