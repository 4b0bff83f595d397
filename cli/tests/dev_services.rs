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
use support::{Dev, client, free_port, request, when_ready};

const WORKERS: &str = r#"apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: gateway, namespace: shop }
spec:
  routes: [{ host: gateway.test }]
  bindings:
    - { name: BACKEND, service: { name: backend } }
    - { name: ADMIN, service: { name: backend, entrypoint: Admin } }
    - { name: AUTH, service: { name: backend, entrypoint: Auth, props: { role: admin, scopes: [read] } } }
  script: |
    export default {
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
---
apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: backend, namespace: shop }
spec:
  env: [{ name: WHO, value: backend }]
  script: |
    import { WorkerEntrypoint, RpcTarget } from 'cloudflare:workers';
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

#[tokio::test]
async fn dev_gateway_calls_a_worker_without_routes_through_its_service_bindings_and_rpc() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), WORKERS).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::start(&[
        "--workers",
        dir.path().to_str().unwrap(),
        "--port",
        &port.to_string(),
    ]);
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
