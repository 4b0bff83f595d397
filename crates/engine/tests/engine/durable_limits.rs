//! Durable Objects' storage limits beside the namespace quota
//! (`durable_objects.rs`), on a real SQLite file and a real PostgreSQL
//! (`isolane_testenv::Postgres`): one object filling its per-object limit
//! (`Store::with_object_quota`), one namespace hammering storage past its
//! operations per second (`Store::with_namespace_ops`), each while a
//! benign Worker of another namespace on the same thread counts before,
//! during and after; and alarm writes fenced by the owner epoch (a stale
//! instance cannot set or delete its object's alarm).

use std::sync::Arc;

use isolane_engine::{ExecuteError, WorkerBundle};
use isolane_storage::{PostgresSettings, Store};

use crate::support::*;

/// A Worker binding its own class `Counter` as `COUNTER`.
fn do_bundle(id: &str, script: &str) -> Arc<WorkerBundle> {
    crate::durable_objects::do_bundle(id, script, Default::default())
}

/// The benign Worker: `/` increments object `a`.
const COUNTER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    const n = ((await this.state.storage.get('n')) ?? 0) + 1;
    await this.state.storage.put('n', n);
    return new Response(String(n));
  }
}
export default {
  fetch(request, env) { return env.COUNTER.getByName('a').fetch(request); }
};
"#;

/// `/fill?name=N` writes 1 KiB values into object N until a write fails;
/// `/small?name=N` stores one 1 KiB value; `/shrink?name=N` deletes one.
const FILLER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch(request) {
    const path = new URL(request.url).pathname;
    const storage = this.state.storage;
    if (path === '/small') { await storage.put('small', 'x'.repeat(1024)); return new Response('stored'); }
    if (path === '/shrink') { await storage.delete('k0'); return new Response('shrunk'); }
    for (let i = 0; ; i++) {
      await storage.put('k' + i, 'x'.repeat(1024));
      await storage.sync();
    }
  }
}
export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name') ?? 'fill';
    return env.COUNTER.getByName(name).fetch(request);
  }
};
"#;

/// A real PostgreSQL with the schema applied, and its store.
pub(crate) async fn postgres() -> (isolane_testenv::Postgres, Store) {
    let server = isolane_testenv::Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap();
    (server, store)
}

fn refused_with(result: Result<http::Response<isolane_engine::Body>, ExecuteError>, text: &str) {
    match result {
        Err(ExecuteError::Exception { message }) => {
            assert!(message.contains(text), "{message}")
        }
        other => panic!("{:?}", other.map(|r| r.status())),
    }
}

/// One object of a hostile Worker fills its per-object limit: its write is
/// refused with the limit's error, another object of the same Worker still
/// stores, the full one still shrinks; a benign Worker of another
/// namespace on the same thread counts before, during and after.
async fn an_object_is_held_to_its_limit(store: Store) {
    let (engine, _) = store_engine(
        store
            .with_namespace_quota(1 << 20)
            .with_object_quota(64 << 10),
    );
    let neighbour = do_bundle("calm/counter", COUNTER);
    let filler = do_bundle("greedy/filler", FILLER);
    assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, "1".into()));
    let attack = {
        let (engine, filler) = (engine.clone(), filler.clone());
        tokio::spawn(async move { engine.execute(0, filler, get("/fill")).await })
    };
    assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, "2".into()));
    let limit = "this object's storage limit of 65536 bytes is used up";
    refused_with(attack.await.unwrap(), limit);
    assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, "3".into()));
    // The full object grows no more; another object of the same Worker
    // has its own room; shrinking goes through.
    refused_with(
        engine.execute(0, filler.clone(), get("/small")).await,
        limit,
    );
    let other = run(&engine, 0, &filler, "/small?name=other").await;
    assert_eq!(other, (200, "stored".into()));
    let shrunk = run(&engine, 0, &filler, "/shrink").await;
    assert_eq!(shrunk, (200, "shrunk".into()));
    assert_eq!(
        run(&engine, 0, &filler, "/small").await,
        (200, "stored".into())
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, "4".into()));
}

#[tokio::test]
async fn an_object_filling_its_limit_is_refused_and_its_neighbour_keeps_counting_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    an_object_is_held_to_its_limit(Store::open_sqlite(dir.path()).unwrap()).await;
}

#[tokio::test]
async fn an_object_filling_its_limit_is_refused_and_its_neighbour_keeps_counting_postgres() {
    let (_server, store) = postgres().await;
    an_object_is_held_to_its_limit(store).await;
}

/// `/` lists object N's storage (a store operation each time: lists are
/// not cached) until one is refused: answers how many went through, and
/// the refusal's message.
const HAMMER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    let n = 0;
    try {
      for (;; n++) await this.state.storage.list({ prefix: 'p' + n });
    } catch (e) {
      return new Response(`${n} ${e.message}`);
    }
  }
}
export default {
  fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name') ?? 'h';
    return env.COUNTER.getByName(name).fetch(request);
  }
};
"#;

/// A namespace hammering storage spends its own operations per second and
/// is refused past them, before the database; a benign Worker of another
/// namespace on the same thread counts before, during (four hammers in
/// flight, and right after they were refused: the hostile bucket empty)
/// and after.
async fn a_namespace_is_held_to_its_operations(store: Store) {
    const RATE: u32 = 200;
    let (engine, _) = store_engine(store.with_namespace_ops(RATE));
    let neighbour = do_bundle("calm/counter", COUNTER);
    let hammer = do_bundle("noisy/hammer", HAMMER);
    assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, "1".into()));
    let started = std::time::Instant::now();
    let hammers: Vec<_> = (0..4)
        .map(|i| {
            let (engine, hammer) = (engine.clone(), hammer.clone());
            tokio::spawn(async move { run(&engine, 0, &hammer, &format!("/?name=h{i}")).await })
        })
        .collect();
    for n in 2..=4 {
        assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, n.to_string()));
    }
    let mut through = 0;
    for hammer in hammers {
        let (status, body) = hammer.await.unwrap();
        assert_eq!(status, 200, "{body}");
        let (n, message) = body.split_once(' ').unwrap();
        assert!(
            message.contains("200 storage operations per second on this node are used up"),
            "{message}"
        );
        through += n.parse::<u64>().unwrap();
    }
    // The burst (one second's worth) and what refilled meanwhile, at most:
    // one take per hammer's object instance comes out of it too.
    let refilled = (started.elapsed().as_secs_f64() * f64::from(RATE)).ceil() as u64;
    assert!(
        through <= u64::from(RATE) + refilled,
        "{through} operations went through in {:?}",
        started.elapsed()
    );
    // The hostile bucket is empty now; the benign namespace's is not.
    for n in 5..=8 {
        assert_eq!(run(&engine, 0, &neighbour, "/").await, (200, n.to_string()));
    }
    println!(
        "hammer: {through} operations through in {:?} at {RATE}/s",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_namespace_hammering_storage_is_throttled_and_its_neighbour_keeps_counting_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_namespace_is_held_to_its_operations(Store::open_sqlite(dir.path()).unwrap()).await;
}

#[tokio::test]
async fn a_namespace_hammering_storage_is_throttled_and_its_neighbour_keeps_counting_postgres() {
    let (_server, store) = postgres().await;
    a_namespace_is_held_to_its_operations(store).await;
}

/// `/set?t=T` sets the alarm, `/delete` deletes it, `/touch` writes a key
/// (so the instance has taken the object when it answers), `/get` reads
/// the alarm; a refused write answers 409 with its message.
const ALARMED: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async alarm() {}
  async fetch(request) {
    const url = new URL(request.url);
    const storage = this.state.storage;
    if (url.pathname === '/set') await storage.setAlarm(Number(url.searchParams.get('t')));
    if (url.pathname === '/delete') await storage.deleteAlarm();
    if (url.pathname === '/touch') await storage.put('touched', true);
    return new Response(String(await storage.getAlarm()));
  }
}
export default {
  async fetch(request, env) {
    try {
      return await env.COUNTER.getByName('a').fetch(request);
    } catch (e) {
      return new Response(`threw ${e.message}`, { status: 409 });
    }
  }
};
"#;

/// Two revisions of one Worker warm at once each hold an instance of the
/// object; the older instance, once the newer took the object, can neither
/// set nor delete the alarm (its write is refused and changes nothing), and
/// its next call makes a fresh instance that can.
async fn alarm_writes_are_fenced(store: Store) {
    let (engine, _) = store_engine(store);
    let (old, new) = (
        do_bundle("shop/alarms", ALARMED),
        do_bundle("shop/alarms", ALARMED),
    );
    let far = 4_102_444_800_000_i64;
    let set = |t: i64| format!("/set?t={t}");
    assert_eq!(
        run(&engine, 0, &old, &set(far)).await,
        (200, far.to_string())
    );
    // The newer revision's instance takes the object.
    assert_eq!(
        run(&engine, 0, &new, "/touch").await,
        (200, far.to_string())
    );
    let (status, body) = run(&engine, 0, &old, &set(far + 1)).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("no longer its owner"), "{body}");
    assert_eq!(run(&engine, 0, &new, "/get").await, (200, far.to_string()));
    // The old revision's next call is a fresh instance: it takes the object
    // and deletes the alarm; then the newer instance is the stale one.
    assert_eq!(run(&engine, 0, &old, "/delete").await, (200, "null".into()));
    let (status, body) = run(&engine, 0, &new, &set(far + 2)).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("no longer its owner"), "{body}");
    assert_eq!(run(&engine, 0, &new, "/get").await, (200, "null".into()));
}

#[tokio::test]
async fn a_stale_instance_cannot_set_or_delete_its_alarm_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    alarm_writes_are_fenced(Store::open_sqlite(dir.path()).unwrap()).await;
}

#[tokio::test]
async fn a_stale_instance_cannot_set_or_delete_its_alarm_postgres() {
    let (_server, store) = postgres().await;
    alarm_writes_are_fenced(store).await;
}
