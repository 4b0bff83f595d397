//! Durable Object classes hosted by another Worker of the namespace
//! (`durableObject: {className, worker}`): the binding Worker's stubs run
//! the object in the host's isolate (its env, its storage scope), so caller
//! and host reach one instance; a Worker of another namespace naming the
//! same worker and class reaches its own namespace's Worker or nothing.

use std::sync::Arc;

use isolane_engine::{EngineConfig, HostedClass, PoolMode, WorkerBundle};
use isolane_storage::Store;

use crate::support::*;

/// The hosting Worker: `Counter` counts, says whose env it sees and how
/// many instances were made; `/inc`, `/id` on its own binding.
const HOST: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.made = ((await ctx.storage.get('made')) ?? 0) + 1;
      await ctx.storage.put('made', this.made);
    });
  }
  async inc() {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    return `${n} ${this.env.WHO} made=${this.made}`;
  }
  async fetch() { return new Response(await this.inc()); }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const name = url.searchParams.get('name') ?? 'a';
    if (url.pathname === '/id') return new Response(env.COUNTER.idFromName(name).toString());
    return new Response(await env.COUNTER.getByName(name).inc());
  }
};
"#;

/// A Worker binding the host's class: `/inc` by RPC, `/fetch` by
/// `stub.fetch`, `/id` its id for the name, `/byid?id=` a stub of an id
/// string; errors come back as 500 with their message.
const CALLER: &str = r#"
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const name = url.searchParams.get('name') ?? 'a';
    try {
      if (url.pathname === '/id') return new Response(env.HOSTED.idFromName(name).toString());
      if (url.pathname === '/fetch') return await env.HOSTED.getByName(name).fetch('http://object/');
      if (url.pathname === '/byid') {
        const stub = env.HOSTED.get(env.HOSTED.idFromString(url.searchParams.get('id')));
        return new Response(await stub.inc());
      }
      return new Response(await env.HOSTED.getByName(name).inc());
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  }
};
"#;

fn host(namespace: &str) -> Arc<WorkerBundle> {
    let id = format!("{namespace}/host");
    let who = format!("host of {namespace}");
    let mut bundle = bundle_with(&id, HOST, Default::default(), &[("WHO", &who)]);
    bundle
        .durable_objects
        .insert("COUNTER".to_owned(), "Counter".to_owned());
    Arc::new(bundle)
}

fn caller(id: &str, worker: &str, class: &str) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, CALLER, Default::default(), &[("WHO", "caller")]);
    let hosted = HostedClass {
        worker: worker.to_owned(),
        class: class.to_owned(),
    };
    bundle.hosted_objects.insert("HOSTED".to_owned(), hosted);
    Arc::new(bundle)
}

fn hosted_engine(store: Store, threads: usize) -> (isolane_engine::Engine, Arc<Served>) {
    let engine = engine_with(EngineConfig {
        threads,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        store: Some(store),
        ..EngineConfig::default()
    })
    .0;
    let served = Arc::new(Served::default());
    engine.set_workers(served.clone());
    (engine, served)
}

/// Caller and host, on every thread, reach one instance of each object:
/// the counts interleave, the object sees the host's env, one instance
/// was made; the caller's ids are the host's.
#[tokio::test]
async fn a_class_hosted_by_another_worker_is_one_instance_for_caller_and_host() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, served) = hosted_engine(Store::open_sqlite(dir.path()).unwrap(), 2);
    let (host, caller) = (host("team-a"), caller("team-a/caller", "host", "Counter"));
    served.add(&host);
    served.add(&caller);
    let mut n = 0;
    for round in 0..3 {
        for thread in 0..2 {
            for (bundle, path) in [(&caller, "/inc"), (&host, "/inc"), (&caller, "/fetch")] {
                n += 1;
                let expected = format!("{n} host of team-a made=1");
                let got = run(&engine, thread, bundle, path).await;
                assert_eq!(
                    got,
                    (200, expected),
                    "round {round}, thread {thread}, {path}"
                );
            }
        }
    }
    let id = run(&engine, 0, &caller, "/id?name=b").await;
    assert_eq!(id, run(&engine, 1, &host, "/id?name=b").await);
    let by_id = run(&engine, 1, &caller, &format!("/byid?id={}", id.1)).await;
    assert_eq!(by_id, (200, "1 host of team-a made=1".to_owned()));
    assert_eq!(
        run(&engine, 0, &host, "/inc?name=b").await,
        (200, "2 host of team-a made=1".to_owned())
    );
}

/// A Worker of another namespace naming the same worker and class reaches
/// its own namespace's Worker of that name, never team-a's: nothing while
/// there is none, then its own objects. A binding to a Worker that does
/// not bind the class gets an Error saying so.
#[tokio::test]
async fn another_namespace_naming_the_same_worker_reaches_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, served) = hosted_engine(Store::open_sqlite(dir.path()).unwrap(), 1);
    let (host_a, caller_a) = (host("team-a"), caller("team-a/caller", "host", "Counter"));
    let caller_b = caller("team-b/caller", "host", "Counter");
    for bundle in [&host_a, &caller_a, &caller_b] {
        served.add(bundle);
    }
    for _ in 0..3 {
        run(&engine, 0, &caller_a, "/inc").await;
    }
    let (status, body) = run(&engine, 0, &caller_b, "/inc").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains(
            "Worker host, which hosts the class Counter, is not running in this namespace"
        ),
        "{body}"
    );
    // team-a's id is not one of team-b's.
    let id_a = run(&engine, 0, &caller_a, "/id").await.1;
    let (status, body) = run(&engine, 0, &caller_b, &format!("/byid?id={id_a}")).await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("Invalid Durable Object ID"), "{body}");
    // team-b's own host: its own objects, from 1.
    let host_b = host("team-b");
    served.add(&host_b);
    assert_eq!(
        run(&engine, 0, &caller_b, "/inc").await,
        (200, "1 host of team-b made=1".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &caller_a, "/inc").await,
        (200, "4 host of team-a made=1".to_owned())
    );
    // A class the named Worker does not bind.
    let wrong = caller("team-a/wrong", "host", "Other");
    served.add(&wrong);
    let (status, body) = run(&engine, 0, &wrong, "/inc").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("Worker host does not bind the Durable Object class Other"),
        "{body}"
    );
}
