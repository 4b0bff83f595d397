//! Service bindings through `isolane dev --workers` as a user runs it: the
//! real binary, real HTTP. A gateway Worker answers on its route by
//! calling a backend Worker that has no routes (reachable only through
//! bindings) with `env.BACKEND.fetch`, and its `Admin` entrypoint with
//! `env.ADMIN.fetch`, and its `Auth` entrypoint's methods over JS RPC
//! with the binding's `props`, a callback and an `RpcTarget` passed by
//! reference; the backend's own host answers nothing.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use std::net::SocketAddr;

use isolane_testenv::workerd;
use support::{Dev, client, free_port, request, when_ready};

/// The gateway: `/check` by RPC with props, `/stubs` a callback and an
/// `RpcTarget` by reference, any other path by `fetch`.
const GATEWAY: &str = r#"export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/check') {
      const seen = await env.AUTH.check(url.searchParams.get('token'), new Map([['at', new Date(0)]]));
      try {
        await env.AUTH.check('');
      } catch (e) {
        return Response.json({ ...seen, refused: `${e.constructor.name}: ${e.message}` });
      }
    }
    if (url.pathname === '/stubs') {
      const seen = [];
      const sum = await env.AUTH.each([1, 2, 3], (n) => { seen.push(n); return n * 10; });
      const counter = await env.AUTH.counter(5);
      const out = [sum, seen.join(','), await counter.add(2), await counter.total];
      counter[Symbol.dispose]();
      return new Response(out.join(' '));
    }
    const target = url.pathname === '/admin' ? env.ADMIN : env.BACKEND;
    const r = await target.fetch(new Request(`http://backend${url.pathname}`, { method: 'POST', body: 'hi' }));
    return new Response(`gateway got ${r.status}: ${await r.text()}`);
  }
};
"#;

/// The backend: `Admin` and `Auth` entrypoints, a fetch handler, no route.
const BACKEND: &str = r#"import { WorkerEntrypoint, RpcTarget } from 'cloudflare:workers';
class Counter extends RpcTarget {
  constructor(n) { super(); this.n = n; }
  add(k) { return this.n += k; }
  get total() { return this.n; }
}
export class Admin extends WorkerEntrypoint {
  fetch() { return new Response(`admin of ${this.env.WHO}`); }
}
export class Auth extends WorkerEntrypoint {
  check(token, extra) {
    if (!token) throw new RangeError('no token');
    return { token, props: this.ctx.props, who: this.env.WHO, at: extra.get('at').toISOString() };
  }
  async each(list, fn) { let sum = 0; for (const n of list) sum += await fn(n); return sum; }
  counter(n) { return new Counter(n); }
}
export default {
  async fetch(request, env) {
    return new Response(`${env.WHO} ${request.method} ${new URL(request.url).pathname} ${await request.text()}`);
  }
};
"#;

/// The gateway's Worker, its script after it.
const GATEWAY_SPEC: &str = r#"apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: gateway, namespace: shop }
spec:
  routes: [{ host: gateway.test }]
  bindings:
    - { name: BACKEND, service: { name: backend } }
    - { name: ADMIN, service: { name: backend, entrypoint: Admin } }
    - { name: AUTH, service: { name: backend, entrypoint: Auth, props: { role: admin, scopes: [read] } } }
  script: |
"#;

/// The backend's Worker, its script after it.
const BACKEND_SPEC: &str = r#"apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: backend, namespace: shop }
spec:
  env: [{ name: WHO, value: backend }]
  script: |
"#;

/// The two Workers as `isolane dev --workers` reads them.
fn workers_yaml() -> String {
    let indent = |js: &str| js.lines().map(|l| format!("    {l}\n")).collect::<String>();
    format!(
        "{GATEWAY_SPEC}{}---\n{BACKEND_SPEC}{}",
        indent(GATEWAY),
        indent(BACKEND)
    )
}

/// The same two Workers as workerd serves them (its service bindings, the
/// entrypoints, the props as JSON), each on its own socket.
fn workerd_services(gateway: SocketAddr, backend: SocketAddr) -> [workerd::Service; 2] {
    let bind =
        |binding: &str, entrypoint: Option<&str>, props: Option<&str>| workerd::ServiceBinding {
            binding: binding.to_owned(),
            service: "backend".to_owned(),
            entrypoint: entrypoint.map(str::to_owned),
            props: props.map(str::to_owned),
        };
    let gateway = workerd::Service {
        services: vec![
            bind("BACKEND", None, None),
            bind("ADMIN", Some("Admin"), None),
            bind(
                "AUTH",
                Some("Auth"),
                Some(r#"{"role":"admin","scopes":["read"]}"#),
            ),
        ],
        ..workerd::Service::module("gateway", "gateway.js", "2025-06-01", gateway)
    };
    let backend = workerd::Service {
        bindings: vec![("WHO".to_owned(), "backend".to_owned())],
        ..workerd::Service::module("backend", "backend.js", "2025-06-01", backend)
    };
    [gateway, backend]
}

#[tokio::test]
async fn dev_gateway_calls_a_worker_without_routes_through_its_service_bindings_and_rpc() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), workers_yaml()).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &[]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "gateway.test", "/users").await,
        (200, "gateway got 200: backend POST /users hi".to_owned())
    );
    assert_eq!(
        request(&client, port, "gateway.test", "/admin")
            .await
            .unwrap(),
        (200, "gateway got 200: admin of backend".to_owned())
    );
    let (status, body) = request(&client, port, "gateway.test", "/check?token=t1")
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let seen: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        seen,
        serde_json::json!({
            "token": "t1",
            "props": {"role": "admin", "scopes": ["read"]},
            "who": "backend",
            "at": "1970-01-01T00:00:00.000Z",
            "refused": "RangeError: no token",
        })
    );
    // A callback and an RpcTarget by reference: the backend calls the
    // gateway's function back, the gateway the backend's counter.
    assert_eq!(
        request(&client, port, "gateway.test", "/stubs")
            .await
            .unwrap(),
        (200, "60 1,2,3 7 7".to_owned())
    );
    // The backend has no route: no host reaches it but the gateway's calls.
    let (status, _) = request(&client, port, "backend.test", "/users")
        .await
        .unwrap();
    assert_eq!(status, 404);
    assert!(dev.interrupt().success());
}

/// workerd serving the same two Workers answers each path as `isolane dev`
/// does: RPC with props and an error's class, a callback and an
/// `RpcTarget` by reference, `fetch` through both bindings.
#[tokio::test]
async fn dev_answers_as_workerd_serving_the_same_workers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), workers_yaml()).unwrap();
    std::fs::write(dir.path().join("gateway.js"), GATEWAY).unwrap();
    std::fs::write(dir.path().join("backend.js"), BACKEND).unwrap();
    let (port, workerd_port) = (free_port().unwrap(), free_port().unwrap());
    let local = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let services = workerd_services(local(workerd_port), local(free_port().unwrap()));
    let config = workerd::write_config(dir.path(), "workerd.capnp", &services).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let log = dir.path().join("workerd.log");
    let _workerd = workerd::serve(&bin, &config, &[], &log).unwrap();
    let mut dev = Dev::workers(dir.path(), port, &[]);
    let client = client();
    when_ready(&client, &mut dev, port, "gateway.test", "/users").await;
    isolane_testenv::wait_until("workerd to answer", support::DEADLINE, || {
        request(&client, workerd_port, "gateway.test", "/users")
    })
    .await;
    for path in ["/check?token=t1", "/stubs", "/users", "/admin"] {
        let ours = request(&client, port, "gateway.test", path).await.unwrap();
        let theirs = request(&client, workerd_port, "gateway.test", path)
            .await
            .unwrap();
        assert_eq!(ours, theirs, "{path}");
    }
    assert!(dev.interrupt().success());
}
