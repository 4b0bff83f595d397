//! JS RPC over service bindings (`env.SVC.method(...)`): a
//! `WorkerEntrypoint`'s methods called from another Worker on the same
//! thread, arguments and results structured-cloned (Map, Date, Set, BigInt,
//! nested, a stream as bytes), thrown errors with their class, the
//! binding's `props` as `ctx.props`, workerd's refusals (reserved names,
//! own properties, a plain object's handler rules); a callee method that
//! never stops ends at its own CPU limit while a neighbour answers; a chain
//! of RPC calls deeper than 32 ends with an error.

use std::sync::Arc;

use isolane_engine::{Limits, ServiceCallKind, ServicePlace, WorkerBundle};

use crate::service_bindings::{
    loops_end_with, served_engine, served_engine_recorded, service, with_services,
};
use crate::support::*;

/// The called Worker: an `Auth` entrypoint with methods, a getter, a
/// method that throws the error class it is named, one that never stops;
/// a plain default export with handler functions.
const AUTH: &str = r#"
import { WorkerEntrypoint } from 'cloudflare:workers';
export class Auth extends WorkerEntrypoint {
  echo(value) { return value; }
  add(a, b) { return a + b + Number(this.env.BASE); }
  props() { return this.ctx.props; }
  get version() { return 'v7'; }
  async upper(stream) { return new Response((await new Response(stream).text()).toUpperCase()).body; }
  fail(kind) { throw new globalThis[kind](`bad ${kind}`); }
  async later() { await null; throw new RangeError('async bad'); }
  spin() { for (;;) {} }
  fetch() { return new Response(`fetch sees ${JSON.stringify(this.ctx.props)}`); }
}
export default {
  fetch() { return new Response('default'); },
  ping(arg, env, ctx) { return `pong ${arg} ${env.BASE} ${JSON.stringify(ctx.props)}`; },
  two(a, b, env, ctx) { return 'never'; },
};
"#;

/// The caller: each path makes some calls and says what came back; an
/// error as `name: message`.
const GATEWAY: &str = r#"
const show = (e) => `${e.constructor.name}: ${e.message}`;
async function attempt(f) { try { return `ok ${await f()}`; } catch (e) { return show(e); } }
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    try {
      if (path === '/clone') {
        const sent = { m: new Map([['a', 1], ['b', { deep: [1, 2, { at: new Date(0) }] }]]), d: new Date(86400000),
          s: new Set([1, 2]), big: 10n, bytes: new Uint8Array([1, 2, 3]), re: /a+/g, nothing: undefined, nil: null };
        const r = await env.AUTH.echo(sent);
        return new Response([r.m instanceof Map, r.m.get('b').deep[2].at instanceof Date, r.m.get('b').deep[2].at.getTime(),
          r.d.toISOString(), [...r.s].join('+'), r.big === 10n, r.bytes instanceof Uint8Array, r.bytes.join('.'),
          `${r.re.source}/${r.re.flags}`, 'nothing' in r, r.nil, r !== sent].join(' '));
      }
      if (path === '/calls') {
        const out = [await env.AUTH.add(2, 3), await env.AUTH.version, JSON.stringify(await env.AUTH.props()),
          await new Response(await env.AUTH.upper(new Response('abc').body)).text(),
          await (await env.AUTH.fetch('http://auth/')).text(), await env.PLAIN.ping('x')];
        return new Response(out.join(' | '));
      }
      if (path === '/errors') {
        const out = [];
        for (const kind of ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError']) {
          try { await env.AUTH.fail(kind); } catch (e) { out.push(`${show(e)} ${e instanceof globalThis[kind]}`); }
        }
        out.push(await attempt(() => env.AUTH.later()));
        return new Response(out.join('\n'));
      }
      if (path === '/refused') {
        const out = [];
        for (const f of [() => env.AUTH.missing(), () => env.AUTH.ctx(), () => env.AUTH.dup(), () => env.AUTH.connect(),
          () => env.AUTH.version(), () => env.AUTH.echo(Symbol('s')), () => env.AUTH.echo(new URL('http://a/')), () => env.PLAIN.ping('a', 'b'), () => env.PLAIN.two(1),
          () => env.PLAIN.fetch2(1), () => env.NONE.anything()]) {
          out.push(await attempt(f));
        }
        out.push(typeof env.AUTH.then, 'then' in env.AUTH, String(env.AUTH));
        return new Response(out.join('\n'));
      }
      if (path === '/spin') return new Response(await attempt(() => env.AUTH.spin()));
      return new Response('?', { status: 404 });
    } catch (e) {
      return new Response(show(e), { status: 500 });
    }
  }
};
"#;

fn auth(limits: Limits) -> Arc<WorkerBundle> {
    Arc::new(bundle_with("shop/auth", AUTH, limits, &[("BASE", "100")]))
}

fn gateway() -> Arc<WorkerBundle> {
    let bundle = bundle_with("shop/gateway", GATEWAY, Limits::default(), &[]);
    let mut admin = service("auth", Some("Auth"));
    admin.props = Some(r#"{"role":"admin","tenant":7}"#.to_owned());
    let services = [
        ("AUTH", admin),
        ("PLAIN", service("auth", None)),
        ("NONE", service("auth", Some("Missing"))),
    ];
    with_services(bundle, &services)
}

#[tokio::test]
async fn rpc_arguments_and_results_are_structured_clones() {
    let (gateway, auth) = (gateway(), auth(Limits::default()));
    let engine = served_engine(1, &[&gateway, &auth]);
    assert_eq!(
        run(&engine, 0, &gateway, "/clone").await,
        (
            200,
            "true true 0 1970-01-02T00:00:00.000Z 1+2 true true 1.2.3 a+/g true  true".to_owned()
        )
    );
}

#[tokio::test]
async fn rpc_calls_methods_getters_streams_and_sees_the_bindings_props() {
    let (gateway, auth) = (gateway(), auth(Limits::default()));
    let (engine, recorder) = served_engine_recorded(1, &[&gateway, &auth]);
    assert_eq!(
        run(&engine, 0, &gateway, "/calls").await,
        (
            200,
            r#"105 | v7 | {"role":"admin","tenant":7} | ABC | fetch sees {"role":"admin","tenant":7} | pong x 100 {}"#
                .to_owned()
        )
    );
    // Five RPC calls (a property's read among them) and a fetch, each
    // counted as run on the caller's own thread.
    let calls = recorder.service_calls.lock().unwrap().clone();
    let rpc = (ServicePlace::SameThread, ServiceCallKind::Rpc);
    let fetch = (ServicePlace::SameThread, ServiceCallKind::Fetch);
    assert_eq!(calls, [rpc, rpc, rpc, rpc, fetch, rpc]);
}

#[tokio::test]
async fn rpc_errors_arrive_with_their_class_and_message() {
    let (gateway, auth) = (gateway(), auth(Limits::default()));
    let engine = served_engine(1, &[&gateway, &auth]);
    let (status, body) = run(&engine, 0, &gateway, "/errors").await;
    assert_eq!(status, 200, "{body}");
    let expected = [
        "Error: bad Error true",
        "TypeError: bad TypeError true",
        "RangeError: bad RangeError true",
        "SyntaxError: bad SyntaxError true",
        "ReferenceError: bad ReferenceError true",
        "RangeError: async bad",
    ];
    assert_eq!(body.lines().collect::<Vec<_>>(), expected);
}

#[tokio::test]
async fn rpc_refuses_what_workerd_refuses() {
    let (gateway, auth) = (gateway(), auth(Limits::default()));
    let engine = served_engine(1, &[&gateway, &auth]);
    let (status, body) = run(&engine, 0, &gateway, "/refused").await;
    assert_eq!(status, 200, "{body}");
    let lines: Vec<_> = body.lines().collect();
    let expected = [
        r#"TypeError: The RPC receiver does not implement the method "missing"."#,
        r#"TypeError: The RPC receiver does not implement the method "ctx"."#,
        "TypeError: 'dup' is a reserved method and cannot be called over RPC.",
        "TypeError: 'connect' is a reserved method and cannot be called over RPC.",
        r#"TypeError: "version" is not a function."#,
    ];
    assert_eq!(lines[..5], expected, "{body}");
    assert!(lines[5].starts_with("DOMException: "), "{body}");
    assert_eq!(
        lines[6], "DOMException: URL object could not be cloned.",
        "{body}"
    );
    assert!(
        lines[7].starts_with(r#"TypeError: Attempted to call RPC function "ping" with the wrong number of arguments."#),
        "{body}"
    );
    assert!(
        lines[8].starts_with(r#"TypeError: Cannot call handler function "two" over RPC because it has the wrong number of arguments."#),
        "{body}"
    );
    assert_eq!(
        lines[9..],
        [
            r#"TypeError: The RPC receiver does not implement the method "fetch2"."#,
            r#"TypeError: Worker does not export an entrypoint named "Missing"."#,
            "undefined",
            "false",
            "[object Fetcher]",
        ],
        "{body}"
    );
}

#[tokio::test]
async fn a_method_that_never_stops_ends_at_the_callees_cpu_limit_and_the_neighbour_answers() {
    let limits = Limits {
        cpu_ms: 100,
        ..Limits::default()
    };
    let (gateway, auth) = (gateway(), auth(limits));
    let neighbour = bundle("web/neighbour", HELLO);
    let engine = Arc::new(served_engine(1, &[&gateway, &auth, &neighbour]));
    neighbour_ok(&engine, &neighbour).await;
    let call = tokio::spawn({
        let (engine, gateway) = (engine.clone(), gateway.clone());
        async move { run(&engine, 0, &gateway, "/spin").await }
    });
    neighbour_ok(&engine, &neighbour).await;
    let (status, body) = call.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("Error: Service call failed"), "{body}");
    neighbour_ok(&engine, &neighbour).await;
    // The callee answers its next call.
    assert_eq!(run(&engine, 0, &gateway, "/calls").await.0, 200);
    neighbour_ok(&engine, &neighbour).await;
}

/// Calls its own `deeper` (`SELF`) or its partner's (`NEXT`) over RPC
/// until refused; the first call's error says why.
const RECURSE: &str = r#"
import { WorkerEntrypoint } from 'cloudflare:workers';
export default class extends WorkerEntrypoint {
  async fetch() {
    try { return new Response(`ok ${await this.deeper(0)}`); }
    catch (e) { return new Response(`${e.constructor.name}: ${e.message}`); }
  }
  deeper(n) { return (this.env.SELF ?? this.env.NEXT).deeper(n + 1); }
}
"#;

#[tokio::test]
async fn a_chain_of_rpc_calls_deeper_than_32_and_a_cycle_end_with_an_error() {
    let refused = "Error: Service call failed: the chain of service calls is deeper than 32 (a Worker calling itself, or a cycle of Workers)";
    loops_end_with(RECURSE, refused).await;
}
