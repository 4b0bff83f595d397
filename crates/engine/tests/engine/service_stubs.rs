//! JS RPC passing by reference: a function or an `RpcTarget` in a call's
//! arguments or result is a stub that calls back into the isolate that
//! passed it, on the same thread, in the request that passed it. Methods
//! and getters of an `RpcTarget` through its stub, a stub passed on to a
//! third Worker, `Symbol.dispose`, the stubs of a call's arguments
//! disposed when it ends, a callback that throws; a callee that calls back
//! in a loop ends at its own limit while a neighbour answers; a stub whose
//! request ended rejects; a ping-pong through callbacks ends at the depth
//! bound.

use std::sync::Arc;

use isolane_engine::{Limits, WorkerBundle};

use crate::service_bindings::{served_engine, service, with_services};
use crate::support::*;

/// The called Worker's `Api`: calls what it is passed, returns an
/// `RpcTarget`, passes a callback on to `THIRD`, keeps one past its call.
const API: &str = r#"
import { WorkerEntrypoint, RpcTarget } from 'cloudflare:workers';
class Counter extends RpcTarget {
  secret = 'own';
  constructor(n) { super(); this.n = n; }
  increment(by) { this.n += by; return this.n; }
  get value() { return this.n; }
  spin() { for (;;) {} }
}
let kept = null;
export class Api extends WorkerEntrypoint {
  async apply(fn, x) { return (await fn(x)) + 1; }
  async greet(target) { return `${await target.hello('api')} / ${await target.name}`; }
  counter(n) { return new Counter(n); }
  relay(fn) { return this.env.THIRD.call(fn); }
  keep(fn) { kept = fn; return 'kept'; }
  async later() { try { return await kept(); } catch (e) { return `${e.constructor.name}: ${e.message}`; } }
  async tryThrow(fn) { try { return await fn(); } catch (e) { return `${e.constructor.name}: ${e.message} ${e instanceof RangeError}`; } }
  async loop(fn) { for (;;) await fn(); }
}
export default { fetch() { return new Response('api'); } };
"#;

/// The third Worker: calls the function it is passed.
const THIRD: &str = r#"
import { WorkerEntrypoint } from 'cloudflare:workers';
export default class extends WorkerEntrypoint {
  fetch() { return new Response('third'); }
  async call(fn) { return `third got ${await fn('third')}`; }
}
"#;

/// The caller: each path says what came back; an error as `name: message`.
const GATEWAY: &str = r#"
import { RpcTarget } from 'cloudflare:workers';
const show = (e) => `${e.constructor.name}: ${e.message}`;
async function attempt(f) { try { return `ok ${await f()}`; } catch (e) { return show(e); } }
class Greeter extends RpcTarget {
  hello(who) { return `hello ${who}`; }
  get name() { return 'greeter'; }
}
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    if (path === '/callback') {
      const calls = [];
      const twice = await env.API.apply((x) => { calls.push(x); return x * 2; }, 20);
      const nested = await env.API.apply({ f: async (x) => `${x}!` }.f, 'a');
      return new Response(`${twice} ${calls.join(',')} ${nested} ${await env.API.greet(new Greeter())}`);
    }
    if (path === '/target') {
      const counter = await env.API.counter(10);
      const out = [await counter.increment(5), await counter.value, await attempt(() => counter.secret),
        await attempt(() => counter.nothing())];
      counter[Symbol.dispose]();
      out.push(await attempt(() => counter.increment(1)));
      return new Response(out.join(' | '));
    }
    if (path === '/relay') return new Response(await env.API.relay((who) => `hello ${who}`));
    if (path === '/kept') return new Response(`${await env.API.keep(() => 'late')} ${await env.API.later()}`);
    if (path === '/throws') return new Response(await env.API.tryThrow(() => { throw new RangeError('cb bad'); }));
    if (path === '/gone') {
      const counter = await env.LOOP.counter(1);
      return new Response([await attempt(() => counter.spin()), await attempt(() => counter.increment(1))].join(' | '));
    }
    if (path === '/pingpong') {
      const ping = (n) => env.API.apply(ping, n + 1);
      return new Response(await attempt(() => ping(0)));
    }
    if (path === '/loop') {
      let n = 0;
      return new Response(`${await attempt(() => env.LOOP.loop(() => { n++; }))} after ${n > 0 ? 'some' : 'no'} calls`);
    }
    return new Response('?', { status: 404 });
  }
};
"#;

struct Workers {
    gateway: Arc<WorkerBundle>,
    api: Arc<WorkerBundle>,
    looping: Arc<WorkerBundle>,
    third: Arc<WorkerBundle>,
}

fn workers() -> Workers {
    let generous = Limits {
        cpu_ms: 30_000,
        subrequests: 1_000_000,
        ..Limits::default()
    };
    let gateway = bundle_with("shop/gateway", GATEWAY, generous, &[]);
    let gateway = with_services(
        gateway,
        &[
            ("API", service("api", Some("Api"))),
            ("LOOP", service("loop", Some("Api"))),
        ],
    );
    let api = bundle_with("shop/api", API, Limits::default(), &[]);
    let api = with_services(api, &[("THIRD", service("third", None))]);
    // The same code, whose `loop` runs until its CPU limit ends it.
    let hostile = Limits {
        cpu_ms: 100,
        ..generous
    };
    let looping = Arc::new(bundle_with("shop/loop", API, hostile, &[]));
    let third = bundle("shop/third", THIRD);
    Workers {
        gateway,
        api,
        looping,
        third,
    }
}

async fn answer(path: &str) -> String {
    let w = workers();
    let engine = served_engine(1, &[&w.gateway, &w.api, &w.looping, &w.third]);
    let (status, body) = run(&engine, 0, &w.gateway, path).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn a_function_and_an_rpc_target_passed_as_arguments_are_called_back() {
    assert_eq!(answer("/callback").await, "41 20 a!1 hello api / greeter");
}

#[tokio::test]
async fn a_returned_rpc_target_is_a_stub_with_its_methods_and_getters_until_disposed() {
    let expected = [
        "15",
        "15",
        r#"TypeError: The RPC receiver does not implement the method "secret"."#,
        r#"TypeError: The RPC receiver does not implement the method "nothing"."#,
        "Error: Attempted to use RPC stub after it has been disposed.",
    ];
    assert_eq!(answer("/target").await, expected.join(" | "));
}

#[tokio::test]
async fn a_stub_passed_on_to_a_third_worker_calls_back_into_the_first() {
    assert_eq!(answer("/relay").await, "third got hello third");
}

#[tokio::test]
async fn an_arguments_stub_is_disposed_when_its_call_ends() {
    assert_eq!(
        answer("/kept").await,
        "kept Error: Attempted to use RPC stub after it has been disposed."
    );
}

#[tokio::test]
async fn a_callback_that_throws_rejects_the_stub_call_with_its_error() {
    assert_eq!(answer("/throws").await, "RangeError: cb bad true");
}

#[tokio::test]
async fn a_callee_calling_back_in_a_loop_ends_at_its_limit_and_the_neighbour_answers() {
    let w = workers();
    let neighbour = bundle("web/neighbour", HELLO);
    let engine = Arc::new(served_engine(
        1,
        &[&w.gateway, &w.api, &w.looping, &w.third, &neighbour],
    ));
    neighbour_ok(&engine, &neighbour).await;
    let call = tokio::spawn({
        let (engine, gateway) = (engine.clone(), w.gateway.clone());
        async move { run(&engine, 0, &gateway, "/loop").await }
    });
    neighbour_ok(&engine, &neighbour).await;
    let (status, body) = call.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("Error: Service call failed") && body.ends_with("after some calls"),
        "{body}"
    );
    neighbour_ok(&engine, &neighbour).await;
    // The callee answers its next call.
    assert_eq!(run(&engine, 0, &w.gateway, "/callback").await.0, 200);
}

#[tokio::test]
async fn a_ping_pong_through_callbacks_ends_at_the_depth_bound() {
    let started = std::time::Instant::now();
    assert_eq!(
        answer("/pingpong").await,
        "Error: Service call failed: the chain of service calls is deeper than 32 (a Worker calling itself, or a cycle of Workers)"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn a_stub_whose_request_ended_at_its_cpu_limit_rejects_its_calls() {
    // `spin` ends the request that returned the counter (its CPU limit);
    // the call in flight is told so, and the token is gone with it.
    let expected = [
        "Error: RPC stub call failed: the Worker that passed it is gone, or the request that passed it has ended.",
        "Error: Attempted to use RPC stub after it has been disposed.",
    ];
    assert_eq!(answer("/gone").await, expected.join(" | "));
}
