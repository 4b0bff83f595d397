//! Durable Objects from workers, on a real SQLite file: ids as workerd
//! makes them, stubs (`fetch` and RPC), `state.storage` (get, put, delete,
//! list, transaction, deleteAll), `blockConcurrencyWhile`, the input and
//! output gates under concurrent requests (a counter ends exact; an answer
//! comes after its writes are in the store), state
//! that outlives the engine, one Kubernetes namespace (or Worker) never reaching
//! another's objects, and hostile workers (one filling its namespace's
//! storage quota, one hoarding objects) held to their own limits while a
//! benign worker on the same thread keeps answering.

use std::sync::Arc;

use isolane_engine::{ExecuteError, WorkerBundle};
use isolane_storage::Store;

use crate::support::*;

pub(crate) fn do_bundle(
    id: &str,
    script: &str,
    limits: isolane_engine::Limits,
) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, script, limits, &[]);
    bundle
        .durable_objects
        .insert("COUNTER".to_owned(), "Counter".to_owned());
    Arc::new(bundle)
}

/// A counter object: `/inc?name=N` increments object N by a get-then-put
/// with an async helper between (the input gate keeps it whole), `/get`
/// reads it through RPC.
const COUNTER: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  constructor(state, env) {
    super(state, env);
    this.ready = false;
    state.blockConcurrencyWhile(async () => {
      this.started = (await state.storage.get('started')) ?? 0;
      await state.storage.put('started', this.started + 1);
      this.ready = true;
    });
  }
  async read() { return (await this.ctx.storage.get('n')) ?? 0; }
  async fetch(request) {
    if (!this.ready) return new Response('not ready', { status: 500 });
    const n = (await this.read()) + 1;
    await this.ctx.storage.put('n', n);
    return new Response(String(n));
  }
  async count(extra) { extra.seen = true; return { n: await this.read(), extra }; }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const stub = env.COUNTER.getByName(url.searchParams.get('name') ?? 'a');
    if (url.pathname === '/inc') return stub.fetch(request);
    if (url.pathname === '/inc2') return stub.fetch('http://x/');
    if (url.pathname === '/inc3') { const r = await stub.fetch('http://x/'); return new Response(await r.text()); }
    const arg = { seen: false };
    const got = await stub.count(arg);
    return new Response(JSON.stringify({ got, argAfter: arg.seen }));
  }
};
"#;

#[tokio::test]
async fn a_counter_hit_by_concurrent_requests_counts_exactly_and_outlives_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let worker = do_bundle("shop/counter", COUNTER, Default::default());
    {
        let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
        let requests: Vec<_> = (0..200)
            .map(|i| {
                let engine = engine.clone();
                let worker = worker.clone();
                let name = if i % 2 == 0 { "a" } else { "b" };
                tokio::spawn(
                    async move { run(&engine, 0, &worker, &format!("/inc?name={name}")).await },
                )
            })
            .collect();
        let mut answers = Vec::new();
        for request in requests {
            let (status, body) = request.await.unwrap();
            assert_eq!(status, 200, "{body}");
            answers.push(body.parse::<u32>().unwrap());
        }
        answers.sort_unstable();
        // Each object answered 1..=100 once: no two increments interleaved.
        let expected: Vec<u32> = (1..=100).flat_map(|n| [n, n]).collect();
        assert_eq!(answers, expected);
        let (_, body) = run(&engine, 0, &worker, "/get?name=a").await;
        assert_eq!(
            body,
            r#"{"got":{"n":100,"extra":{"seen":true}},"argAfter":false}"#
        );
    }
    // A new engine (a restart) reads what the first one acknowledged.
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    assert_eq!(
        run(&engine, 0, &worker, "/inc?name=a").await,
        (200, "101".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &worker, "/inc?name=b").await,
        (200, "101".to_owned())
    );
}

/// A worker whose `/?i=N` runs the N-th of `cases` (async function bodies
/// of `ns`, the binding, and `storage`, object `t`'s storage, run inside
/// the object) and answers with `JSON.stringify` of its result, or
/// `threw <name>: <message>`.
fn runner(cases: &[&str]) -> String {
    let cases: Vec<String> = cases
        .iter()
        .map(|body| format!("async (ns, storage, state) => {{ {body} }}"))
        .collect();
    format!(
        r#"
const cases = [{}];
export class Counter {{
  constructor(state, env) {{ this.state = state; }}
  async run(i) {{ return cases[i](null, this.state.storage, this.state); }}
}}
const show = (v) => v instanceof Map ? {{ map: [...v] }} : v;
export default {{
  async fetch(request, env) {{
    const i = Number(new URL(request.url).searchParams.get('i'));
    try {{
      const result = i >= 100 ? await cases[i](env.COUNTER, null, null)
        : await env.COUNTER.getByName('t').run(i);
      return new Response(JSON.stringify(show(result)));
    }} catch (e) {{
      return new Response(`threw ${{e.constructor.name}}: ${{e.message}}`);
    }}
  }}
}};
"#,
        cases.join(",\n")
    )
}

#[tokio::test]
async fn ids_stubs_and_storage_behave_as_workerds() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    // (case, expected answer); cases from 100 on run in the Worker, the
    // others inside object `t`.
    let inside = [
        (
            "await storage.put('b', 2); await storage.put({ a: 1, c: { deep: [3] } }); return await storage.get(['a', 'b', 'c', 'x'])",
            r#"{"map":[["a",1],["b",2],["c",{"deep":[3]}]]}"#,
        ),
        ("return await storage.get('c')", r#"{"deep":[3]}"#),
        (
            "return [await storage.delete('a'), await storage.delete('a'), await storage.delete(['b', 'x'])]",
            "[true,false,1]",
        ),
        (
            "await storage.put({ 'k:1': 1, 'k:2': 2, 'k:3': 3, 'l': 4 }); return await storage.list({ prefix: 'k:', reverse: true, limit: 2 })",
            r#"{"map":[["k:3",3],["k:2",2]]}"#,
        ),
        (
            "return [...(await storage.list({ start: 'k:2', end: 'l' })).keys()]",
            r#"["k:2","k:3"]"#,
        ),
        (
            "await storage.transaction(async (txn) => { await txn.put('t', 1); txn.rollback(); }); return await storage.get('t') ?? 'none'",
            r#""none""#,
        ),
        (
            "try { await storage.transaction(async (txn) => { await txn.put('t', 1); throw new Error('no'); }); } catch {} return await storage.get('t') ?? 'none'",
            r#""none""#,
        ),
        (
            "return await storage.transaction(async (txn) => { await txn.put('t', (await txn.get('k:1')) + 10); return txn.get('t'); })",
            "11",
        ),
        ("return await storage.get('t')", "11"),
        (
            "await storage.deleteAll(); return [...(await storage.list()).keys()]",
            "[]",
        ),
        (
            "return await storage.put('f', () => 1)",
            "threw DOMException: () => 1 could not be cloned.",
        ),
        (
            "return await storage.put('big', 'x'.repeat(200000))",
            "threw RangeError: Values cannot be larger than 131072 bytes; this one is 200006 bytes once serialized.",
        ),
        (
            "return await state.blockConcurrencyWhile(async () => 'blocked')",
            r#""blocked""#,
        ),
        (
            "return await storage.setAlarm(Date.now() + 1000)",
            "threw TypeError: Your Durable Object class must have an alarm() handler in order to call setAlarm().",
        ),
    ];
    let outside = [
        (
            "const a = ns.idFromName('x'), b = ns.idFromName('x'); return [a.equals(b), a.toString() === b.toString(), a.name, /^[0-9a-f]{64}$/.test(a.toString())]",
            r#"[true,true,"x",true]"#,
        ),
        (
            "const a = ns.newUniqueId(), b = ns.newUniqueId(); return [a.equals(b), a.name, ns.idFromString(a.toString()).equals(a)]",
            "[false,null,true]",
        ),
        (
            "return ns.idFromString('0'.repeat(64))",
            "threw TypeError: Invalid Durable Object ID: must be 64 hex digits, made by this namespace.",
        ),
        (
            "return await ns.get(ns.idFromName('t')).nothing()",
            r#"threw TypeError: The RPC receiver does not implement the method "nothing"."#,
        ),
        (
            "return await ns.get(ns.idFromName('t')).fetch('http://x/')",
            "threw TypeError: Handler does not export a fetch() function.",
        ),
        (
            "return typeof ns.get(ns.idFromName('t')).then",
            r#""undefined""#,
        ),
    ];
    let mut script_cases: Vec<&str> = inside.iter().map(|(c, _)| *c).collect();
    // Pad so the outside cases sit at 100 and up.
    while script_cases.len() < 100 {
        script_cases.push("return null");
    }
    script_cases.extend(outside.iter().map(|(c, _)| *c));
    let worker = do_bundle("shop/api", &runner(&script_cases), Default::default());
    for (i, (code, expected)) in inside.iter().enumerate() {
        let (status, body) = run(&engine, 0, &worker, &format!("/?i={i}")).await;
        assert_eq!((status, body.as_str()), (200, *expected), "{code}");
    }
    for (i, (code, expected)) in outside.iter().enumerate() {
        let (status, body) = run(&engine, 0, &worker, &format!("/?i={}", 100 + i)).await;
        assert_eq!((status, body.as_str()), (200, *expected), "{code}");
    }
}

#[tokio::test]
async fn a_binding_to_a_class_the_worker_does_not_export_fails_its_load() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    let worker = do_bundle(
        "shop/missing",
        "export default { fetch() { return new Response('x'); } };",
        Default::default(),
    );
    match engine.execute(0, worker, get("/")).await {
        Err(ExecuteError::Script { message }) => assert!(
            message.contains("names the Durable Object class Counter, which the Worker's main module does not export"),
            "{message}"
        ),
        other => panic!("{:?}", other.map(|r| r.status())),
    }
}

/// The same Worker script in two Kubernetes namespaces: the same name is
/// another object, with its own data.
#[tokio::test]
async fn one_kubernetes_namespace_never_reaches_anothers_objects() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    let a = do_bundle("team-a/counter", COUNTER, Default::default());
    let b = do_bundle("team-b/counter", COUNTER, Default::default());
    for _ in 0..3 {
        run(&engine, 0, &a, "/inc?name=shared").await;
    }
    assert_eq!(
        run(&engine, 0, &b, "/inc?name=shared").await,
        (200, "1".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &a, "/inc?name=shared").await,
        (200, "4".to_owned())
    );
}

/// Writes 1 KiB values under new keys without end.
const FILLER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    for (let i = 0; ; i++) {
      await this.state.storage.put('k' + i, 'x'.repeat(1024));
      await this.state.storage.sync();
    }
  }
}
export default {
  fetch(request, env) { return env.COUNTER.getByName('fill').fetch(request); }
};
"#;

/// A worker filling its namespace's storage quota gets the quota's error;
/// a worker of another namespace on the same thread keeps counting before,
/// during and after.
#[tokio::test]
async fn a_worker_filling_its_storage_quota_is_refused_and_its_neighbour_keeps_counting() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path())
        .unwrap()
        .with_namespace_quota(64 << 10);
    let (engine, _) = store_engine(store);
    let neighbour = do_bundle("calm/counter", COUNTER, Default::default());
    let filler = do_bundle("greedy/filler", FILLER, Default::default());
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "1".to_owned())
    );
    let attack = {
        let engine = engine.clone();
        let filler = filler.clone();
        tokio::spawn(async move { engine.execute(0, filler, get("/")).await })
    };
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "2".to_owned())
    );
    let refused = |result: Result<http::Response<isolane_engine::Body>, ExecuteError>| match result
    {
        Err(ExecuteError::Exception { message }) => {
            assert!(
                message.contains("storage quota of 65536 bytes is used up"),
                "{message}"
            )
        }
        other => panic!("{:?}", other.map(|r| r.status())),
    };
    refused(attack.await.unwrap());
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "3".to_owned())
    );
    // The quota is per namespace: the filler's next write is refused too,
    // and the neighbour still counts.
    refused(engine.execute(0, filler, get("/")).await);
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "4".to_owned())
    );
}

/// Makes objects without end, each holding a 1 MiB value in its cache.
const HOARDER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    await this.state.storage.put('v', new Uint8Array(100 << 10));
    return new Response('ok');
  }
}
export default {
  async fetch(request, env) {
    for (let i = 0; ; i++) await env.COUNTER.getByName('o' + i).fetch(request);
  }
};
"#;

/// Objects live in their Worker's isolate: a Worker making objects without
/// end ends at its own memory limit; its neighbour keeps counting.
#[tokio::test]
async fn a_worker_hoarding_objects_is_held_to_its_own_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    let neighbour = do_bundle("calm/counter", COUNTER, Default::default());
    // Each object call is one of the request's subrequests: room for the
    // ~320 objects of 100 KiB that reach 32 MiB, so the memory limit ends it.
    let limits = isolane_engine::Limits {
        wall_ms: 60_000,
        cpu_ms: 30_000,
        subrequests: 1000,
        ..memory_limits(32)
    };
    let hoarder = do_bundle("greedy/hoarder", HOARDER, limits);
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "1".to_owned())
    );
    let attack = {
        let engine = engine.clone();
        let hoarder = hoarder.clone();
        tokio::spawn(async move { engine.execute(0, hoarder, get("/")).await })
    };
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "2".to_owned())
    );
    match attack.await.unwrap() {
        Err(ExecuteError::MemoryLimit { limit_mib: 32 }) => {}
        Ok(response) => panic!("the hoarder answered {}", response.status()),
        Err(error) => panic!("{error:?}"),
    }
    assert_eq!(
        run(&engine, 0, &neighbour, "/inc").await,
        (200, "3".to_owned())
    );
}

/// Two Workers of one namespace exporting a class of the same name keep
/// their objects apart (Cloudflare's namespaces are per script and class).
#[tokio::test]
async fn two_workers_exporting_a_class_of_one_name_keep_their_objects_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    let one = do_bundle("team-a/one", COUNTER, Default::default());
    let two = do_bundle("team-a/two", COUNTER, Default::default());
    for _ in 0..2 {
        run(&engine, 0, &one, "/inc?name=same").await;
    }
    assert_eq!(
        run(&engine, 0, &two, "/inc?name=same").await,
        (200, "1".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &one, "/inc?name=same").await,
        (200, "3".to_owned())
    );
}

/// The output gate: when a stub call's answer arrives, its writes are in
/// the store (read here through another handle on the same file), though
/// the object never awaited them.
#[tokio::test]
async fn an_answer_comes_after_its_writes_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = store_engine(Store::open_sqlite(dir.path()).unwrap());
    let script = r#"
export class Counter {
  constructor(state) { this.state = state; }
  fetch() {
    for (let i = 0; i < 50; i++) this.state.storage.put('k' + i, i);
    return new Response(this.state.id.toString());
  }
}
export default {
  fetch(request, env) { return env.COUNTER.getByName('gate').fetch(request); }
};
"#;
    let worker = do_bundle("team-a/gate", script, Default::default());
    let (status, id) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{id}");
    let other = Store::open_sqlite(dir.path()).unwrap();
    let scope = isolane_storage::ObjectScope::new("team-a", "gate/Counter", id);
    let keys: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
    let stored = other.object_get(scope, keys).await.unwrap();
    assert!(stored.iter().all(Option::is_some), "{stored:?}");
}
