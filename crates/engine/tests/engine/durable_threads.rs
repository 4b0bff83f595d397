//! One instance of each Durable Object per process: a Worker served by
//! three engine threads at once (requests handed to each, as fairness moves
//! do) reaches one live instance of each object, on its home thread; calls
//! from the other threads are forwarded there (`stub.fetch` with its
//! status, headers and body; RPC with structured-cloned arguments and
//! results, and thrown errors with their name and message).

use std::sync::Arc;

use isolane_engine::{EngineConfig, PoolMode, WorkerBundle};
use isolane_storage::Store;

use isolane_testenv::wait_until;

use crate::support::*;

const THREADS: usize = 3;

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

fn engine(store: Store) -> isolane_engine::Engine {
    engine_with(EngineConfig {
        threads: THREADS,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        store: Some(store),
        ..EngineConfig::default()
    })
    .0
}

fn counter(id: &str) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, COUNTER, Default::default(), &[]);
    bundle
        .durable_objects
        .insert("COUNTER".to_owned(), "Counter".to_owned());
    Arc::new(bundle)
}

/// `/inc?name=N` increments object N through `stub.fetch` (a get-then-put);
/// `/stats` reads its count and how many instances were ever made (each
/// constructor counts itself in storage) through RPC; `/fail` and
/// `/missing` throw through RPC.
const COUNTER: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  constructor(state, env) {
    super(state, env);
    state.blockConcurrencyWhile(async () => {
      this.started = ((await state.storage.get('started')) ?? 0) + 1;
      await state.storage.put('started', this.started);
    });
  }
  async fetch(request) {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    const seen = `${request.method} ${request.url} ${await request.text()}`;
    return new Response(String(n), { status: 201, headers: { 'x-n': String(n), 'x-seen': seen } });
  }
  async stats(arg) {
    return { n: (await this.ctx.storage.get('n')) ?? 0, started: this.started, arg: [...arg.m] };
  }
  async fail(kind) {
    if (kind === 'range') throw new RangeError('too far');
    const e = new Error('custom');
    e.name = 'MyError';
    throw e;
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const stub = env.COUNTER.getByName(url.searchParams.get('name') ?? 'a');
    if (url.pathname === '/inc') {
      const r = await stub.fetch('http://object/inc?x=1', { method: 'POST', body: 'sent' });
      return new Response(`${r.status} ${r.headers.get('x-n')} ${r.headers.get('x-seen')} ${await r.text()}`);
    }
    if (url.pathname === '/id') return new Response(stub.id.toString());
    if (url.pathname === '/stats') return Response.json(await stub.stats({ m: new Map([[1, 'one']]) }));
    try {
      if (url.pathname === '/fail') await stub.fail(url.searchParams.get('kind'));
      else await stub.nope();
      return new Response('no throw');
    } catch (e) {
      return new Response(`${e instanceof RangeError} ${e.name}: ${e.message}`);
    }
  }
};
"#;

#[tokio::test]
async fn a_worker_on_three_threads_reaches_one_instance_of_each_object() {
    let dir = tempfile::tempdir().unwrap();
    let worker = counter("shop/threads");
    let engine = engine(Store::open_sqlite(dir.path()).unwrap());
    // 200 concurrent increments of two objects, spread over every thread.
    let requests: Vec<_> = (0..200)
        .map(|i| {
            let engine = engine.clone();
            let worker = worker.clone();
            let name = if i % 2 == 0 { "a" } else { "b" };
            let thread = (i / 2) % THREADS;
            tokio::spawn(async move {
                run(&engine, thread, &worker, &format!("/inc?name={name}")).await
            })
        })
        .collect();
    let mut counts = Vec::new();
    for request in requests {
        let (status, body) = request.await.unwrap();
        assert_eq!(status, 200, "{body}");
        let fields: Vec<&str> = body.split(' ').collect();
        // The object's own answer: status, headers, body, and the request
        // it read (method, URL, body).
        assert_eq!(fields[0], "201", "{body}");
        assert_eq!(fields[1], fields[5], "{body}");
        assert_eq!(
            &fields[2..5],
            ["POST", "http://object/inc?x=1", "sent"],
            "{body}"
        );
        counts.push(fields[1].parse::<u32>().unwrap());
    }
    counts.sort_unstable();
    // Each object answered 1..=100 once: one instance, its gate whole.
    let expected: Vec<u32> = (1..=100).flat_map(|n| [n, n]).collect();
    assert_eq!(counts, expected);
    // What a call costs from each thread (printed, not asserted): one
    // of them is the object's home, the others forward.
    let (_, id) = run(&engine, 0, &worker, "/id?name=a").await;
    let home = isolane_engine::home_thread(&worker.id, "Counter", &id, THREADS);
    for round in 0..2 {
        for thread in 0..THREADS {
            let start = std::time::Instant::now();
            for _ in 0..100 {
                run(&engine, thread, &worker, "/stats?name=a").await;
            }
            let mean = start.elapsed().as_micros() / 100;
            let at = if thread == home { "home" } else { "forwarded" };
            eprintln!(
                "round {round}, thread {thread} ({at}): {mean} µs a request making one RPC call"
            );
        }
    }
    for thread in 0..THREADS {
        for name in ["a", "b"] {
            // One instance of the object was ever made, whichever thread asks.
            assert_eq!(
                run(&engine, thread, &worker, &format!("/stats?name={name}")).await,
                (200, r#"{"n":100,"started":1,"arg":[[1,"one"]]}"#.to_owned()),
                "thread {thread}, object {name}"
            );
        }
        assert_eq!(
            run(&engine, thread, &worker, "/fail?kind=range").await,
            (200, "true RangeError: too far".to_owned())
        );
        assert_eq!(
            run(&engine, thread, &worker, "/fail").await,
            (200, "false MyError: custom".to_owned())
        );
        assert_eq!(
            run(&engine, thread, &worker, "/missing").await,
            (
                200,
                r#"false TypeError: The RPC receiver does not implement the method "nope"."#
                    .to_owned()
            )
        );
    }
}

/// Two revisions of one Worker warm on one thread at once (a traffic split
/// between revisions) each hold an instance of the object; each instance
/// takes the object's owner epoch when made, so the older one's writes are
/// refused (the call fails, the instance is dropped and the next call
/// makes a fresh one from the store): no increment is lost or doubled.
#[tokio::test]
async fn a_stale_instance_in_another_revision_cannot_write() {
    const FENCED: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  async fetch() {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    return new Response(String(n));
  }
}
export default {
  async fetch(request, env) {
    try {
      return await env.COUNTER.getByName('a').fetch('http://object/');
    } catch (e) {
      return new Response(`threw ${e.message}`, { status: 409 });
    }
  }
};
"#;
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(Store::open_sqlite(dir.path()).unwrap());
    let revision = || {
        let mut bundle = bundle_with("shop/split", FENCED, Default::default(), &[]);
        bundle
            .durable_objects
            .insert("COUNTER".to_owned(), "Counter".to_owned());
        Arc::new(bundle)
    };
    let (old, new) = (revision(), revision());
    assert_ne!(old.revision, new.revision);
    let mut acknowledged = Vec::new();
    let mut refused = 0;
    for i in 0..20 {
        let bundle = if i % 2 == 0 { &old } else { &new };
        match run(&engine, 0, bundle, "/").await {
            (200, body) => acknowledged.push(body.parse::<u32>().unwrap()),
            (409, body) => {
                assert!(body.contains("no longer its owner"), "{body}");
                refused += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    // Every acknowledged increment counted once, in order.
    let expected: Vec<u32> = (1..=acknowledged.len() as u32).collect();
    assert_eq!(acknowledged, expected, "{refused} refused");
    assert!(refused > 0, "the revisions took turns owning the object");
    let last = run(&engine, 0, &new, "/").await;
    let last = if last.0 == 409 {
        run(&engine, 0, &new, "/").await
    } else {
        last
    };
    assert_eq!(last, (200, (acknowledged.len() + 1).to_string()));
}

/// A forwarded call runs under the called Worker's limits on the home
/// thread: a Worker whose object spins forever, called from every thread,
/// ends at its CPU limit (the caller on another thread gets an Error, not a
/// hang), while a benign Worker of another namespace keeps counting on
/// every thread before, during and after.
#[tokio::test]
async fn a_spinning_object_called_from_another_thread_is_held_to_its_cpu_limit() {
    const SPINNER: &str = r#"
export class Counter {
  async fetch() { for (;;) {} }
}
export default {
  async fetch(request, env) {
    try {
      await env.COUNTER.getByName('spin').fetch('http://object/');
      return new Response('returned');
    } catch (e) {
      return new Response(`threw ${e.message}`);
    }
  }
};
"#;
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(Store::open_sqlite(dir.path()).unwrap());
    let benign = counter("shop/benign");
    let limits = isolane_engine::Limits {
        cpu_ms: 100,
        wall_ms: 2_000,
        ..Default::default()
    };
    let mut spinner = bundle_with("greedy/spinner", SPINNER, limits, &[]);
    spinner
        .durable_objects
        .insert("COUNTER".to_owned(), "Counter".to_owned());
    let spinner = Arc::new(spinner);
    let mut expected = 0;
    let count_on_every_thread = async |expected: &mut u32| {
        for thread in 0..THREADS {
            *expected += 1;
            let (status, body) = run(&engine, thread, &benign, "/inc?name=n").await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body.split(' ').nth(1), Some(expected.to_string().as_str()));
        }
    };
    count_on_every_thread(&mut expected).await;
    // The benign Worker's turns (long ones in a debug build on a loaded
    // machine) may have marked threads as busy with its namespace, and a
    // spinner's request for such a thread would be moved (`fairness.rs`),
    // perhaps onto the object's home: wait until each request stays where
    // it is sent, so that two of the three calls are forwarded.
    wait_until(
        "no thread busy with the benign namespace",
        DEADLINE,
        || async {
            (0..THREADS).all(|thread| engine.serving_thread(thread, spinner.namespace()) == thread)
        },
    )
    .await;
    let spins: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (engine, spinner) = (engine.clone(), spinner.clone());
            tokio::spawn(async move {
                match engine.execute(thread, spinner, get("/")).await {
                    Ok(response) => Ok(text(Ok(response)).await),
                    Err(error) => Err(error.to_string()),
                }
            })
        })
        .collect();
    // Let each spin be placed (its first poll) before the benign Worker's
    // next turns can mark a thread again.
    tokio::task::yield_now().await;
    count_on_every_thread(&mut expected).await;
    let mut forwarded_errors = 0;
    for spin in spins {
        match spin.await.unwrap() {
            // The caller whose request ran the call (on the home thread)
            // ended at its limit; the others got the call's Error back.
            Err(error) => assert!(error.contains("limit"), "{error}"),
            Ok((status, body)) => {
                assert_eq!(status, 200, "{body}");
                assert!(
                    body.starts_with("threw Durable Object call failed"),
                    "{body}"
                );
                forwarded_errors += 1;
            }
        }
    }
    assert!(
        forwarded_errors > 0,
        "a caller on another thread got an Error back"
    );
    count_on_every_thread(&mut expected).await;
}
