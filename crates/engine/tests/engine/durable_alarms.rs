//! Durable Object alarms on a real SQLite file, delivered by the engine's
//! `AlarmRunner`: `setAlarm`/`getAlarm`/`deleteAlarm`, an alarm set over
//! HTTP firing once (in the past: at once), a throwing `alarm()` retried
//! with `retryCount`/`isRetry` until it succeeds or is dropped after six
//! retries, an alarm outliving its engine and runner, and a Worker
//! hammering alarms (re-arming in a loop, burning CPU, throwing) while a
//! benign Worker on the same thread is checked before, during and after.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{AlarmHost, AlarmRunner, WorkerBundle};
use isolane_storage::Store;

use crate::support::*;

/// Workers by id, all on thread 0.
struct Hosted(HashMap<String, Arc<WorkerBundle>>);

impl AlarmHost for Hosted {
    fn worker(&self, worker_id: &str) -> Option<(Arc<WorkerBundle>, usize)> {
        self.0.get(worker_id).map(|bundle| (bundle.clone(), 0))
    }
}

/// Starts an alarm loop for `workers` (quick polls and retries).
fn runner(
    engine: &isolane_engine::Engine,
    store: &Store,
    workers: &[&Arc<WorkerBundle>],
) -> tokio::task::JoinHandle<()> {
    let hosted = workers
        .iter()
        .map(|w| (w.id.clone(), Arc::clone(w)))
        .collect();
    let runner = AlarmRunner::new(engine.clone(), store.clone(), Arc::new(Hosted(hosted)))
        .with_timing(
            Duration::from_millis(10),
            Duration::from_secs(60),
            Duration::from_millis(20),
        );
    tokio::spawn(runner.run())
}

fn alarm_bundle(id: &str, script: &str) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, script, Default::default(), &[]);
    for (binding, class) in [("PINGER", "Pinger"), ("PLAIN", "Plain")] {
        bundle
            .durable_objects
            .insert(binding.to_owned(), class.to_owned());
    }
    Arc::new(bundle)
}

/// `/set?name=N&in=MS` sets object N's alarm MS from now (negative: in the
/// past), `/fail?name=N&times=K` makes its next K alarms throw,
/// `/get?name=N` answers `{alarm, fired, seen, inside}` (`seen`: each
/// delivery's `retryCount:isRetry`; `inside`: what `getAlarm()` answered in
/// each `alarm()`, and after re-arming there), `/rearm?name=N&in=MS` makes
/// its next `alarm()` set the alarm again MS from then, `/delete` deletes
/// the alarm, `/plain` sets an alarm on a class with no handler.
const PINGER: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Pinger extends DurableObject {
  async alarm(info) {
    const s = this.ctx.storage;
    const seen = (await s.get('seen')) ?? [];
    seen.push(`${info.retryCount}:${info.isRetry}`);
    await s.put('seen', seen);
    const inside = (await s.get('inside')) ?? [];
    inside.push(await s.getAlarm());
    const rearm = await s.get('rearm');
    if (rearm !== undefined) {
      await s.delete('rearm');
      await s.setAlarm(Date.now() + rearm);
      inside.push(typeof (await s.getAlarm()));
    }
    await s.put('inside', inside);
    const fail = (await s.get('fail')) ?? 0;
    if (fail > 0) { await s.put('fail', fail - 1); throw new Error('not yet'); }
    await s.put('fired', ((await s.get('fired')) ?? 0) + 1);
  }
  async fetch(request) {
    const url = new URL(request.url);
    const s = this.ctx.storage;
    if (url.pathname === '/set') await s.setAlarm(Date.now() + Number(url.searchParams.get('in')));
    if (url.pathname === '/fail') await s.put('fail', Number(url.searchParams.get('times')));
    if (url.pathname === '/delete') await s.deleteAlarm();
    if (url.pathname === '/rearm') await s.put('rearm', Number(url.searchParams.get('in')));
    return Response.json({ alarm: await s.getAlarm(), fired: (await s.get('fired')) ?? 0, seen: (await s.get('seen')) ?? [], inside: (await s.get('inside')) ?? [] });
  }
}
export class Plain extends DurableObject {
  async fetch() {
    try { await this.ctx.storage.setAlarm(Date.now()); return new Response('set'); }
    catch (e) { return new Response(`${e.name}: ${e.message}`); }
  }
}
export default {
  fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/plain') return env.PLAIN.getByName('p').fetch(request);
    return env.PINGER.getByName(url.searchParams.get('name') ?? 'a').fetch(request);
  }
};
"#;

async fn state(
    engine: &isolane_engine::Engine,
    worker: &Arc<WorkerBundle>,
    name: &str,
) -> serde_json::Value {
    let (status, body) = run(engine, 0, worker, &format!("/get?name={name}")).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// Waits (up to 20 s) until object `name`'s state satisfies `done`.
async fn until(
    engine: &isolane_engine::Engine,
    worker: &Arc<WorkerBundle>,
    name: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = state(engine, worker, name).await;
        if done(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "never reached: {now}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn alarms_fire_once_retry_with_their_count_and_outlive_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let worker = alarm_bundle("shop/pinger", PINGER);
    {
        let store = Store::open_sqlite(dir.path()).unwrap();
        let (engine, _) = store_engine(store.clone());
        // Kept and read back before any runner delivers anything.
        let (_, body) = run(&engine, 0, &worker, "/set?name=a&in=-1000").await;
        let set: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(set["alarm"].is_number(), "{set}");
        let (_, body) = run(&engine, 0, &worker, "/set?name=d&in=-1000").await;
        assert!(body.contains(r#""alarm":"#), "{body}");
        let (_, body) = run(&engine, 0, &worker, "/delete?name=d").await;
        assert!(body.contains(r#""alarm":null"#), "{body}");
        assert_eq!(
            run(&engine, 0, &worker, "/plain").await.1,
            "TypeError: Your Durable Object class must have an alarm() handler in order to call setAlarm()."
        );
        let loop_ = runner(&engine, &store, &[&worker]);
        // Set in the past: fires at the next look, once.
        let a = until(&engine, &worker, "a", |s| {
            s["fired"] == 1 && s["alarm"].is_null()
        })
        .await;
        assert_eq!(a["seen"], serde_json::json!(["0:false"]));
        // Inside alarm(), the firing alarm looks deleted (workerd: null).
        assert_eq!(a["inside"], serde_json::json!([null]));
        // Re-armed by its handler: getAlarm() there answers the new time,
        // and the new alarm fires in turn.
        run(&engine, 0, &worker, "/rearm?name=f&in=50").await;
        run(&engine, 0, &worker, "/set?name=f&in=-1000").await;
        let f = until(&engine, &worker, "f", |s| {
            s["fired"] == 2 && s["alarm"].is_null()
        })
        .await;
        assert_eq!(f["inside"], serde_json::json!([null, "number", null]));
        // Throws twice, then succeeds: retried with its count.
        run(&engine, 0, &worker, "/fail?name=b&times=2").await;
        run(&engine, 0, &worker, "/set?name=b&in=0").await;
        let b = until(&engine, &worker, "b", |s| {
            s["fired"] == 1 && s["alarm"].is_null()
        })
        .await;
        assert_eq!(
            b["seen"],
            serde_json::json!(["0:false", "1:true", "2:true"])
        );
        assert_eq!(b["alarm"], serde_json::Value::Null);
        // A failed delivery leaves the alarm for its retry: each of the
        // three saw it as deleted while it ran.
        assert_eq!(b["inside"], serde_json::json!([null, null, null]));
        // Throws every time: dropped after six retries.
        run(&engine, 0, &worker, "/fail?name=c&times=100").await;
        run(&engine, 0, &worker, "/set?name=c&in=0").await;
        // (While a delivery runs, the alarm looks deleted: wait for the
        // seventh delivery's end too.)
        let c = until(&engine, &worker, "c", |s| {
            s["alarm"].is_null() && s["seen"].as_array().is_some_and(|seen| seen.len() >= 7)
        })
        .await;
        assert_eq!(c["seen"].as_array().unwrap().len(), 7, "{c}");
        assert_eq!(c["fired"], 0);
        // `a` fired once and no more (b's and c's nine deliveries came after).
        assert_eq!(state(&engine, &worker, "a").await["fired"], 1);
        assert_eq!(state(&engine, &worker, "d").await["fired"], 0, "deleted");
        // An alarm in a while, then the process goes away.
        run(&engine, 0, &worker, "/set?name=e&in=300").await;
        loop_.abort();
        let _ = loop_.await;
    }
    // A new engine and loop (a restart) deliver what the first kept.
    let store = Store::open_sqlite(dir.path()).unwrap();
    let (engine, _) = store_engine(store.clone());
    let _loop = runner(&engine, &store, &[&worker]);
    let e = until(&engine, &worker, "e", |s| {
        s["fired"] == 1 && s["alarm"].is_null()
    })
    .await;
    assert_eq!(e["seen"], serde_json::json!(["0:false"]));
}

/// Objects whose `alarm()` re-arms at once, burns CPU (a loop: `Date.now()`
/// stands still while JavaScript runs), and throws every
/// other time; `/start` arms forty of them, `/?name=N` reads one's count.
const HAMMER: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Pinger extends DurableObject {
  async alarm(info) {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    await this.ctx.storage.setAlarm(Date.now() - 1);
    let x = 0;
    for (let i = 0; i < 3e6; i++) x += i % 7;
    if (x < 0) throw new Error('never');
    if (n % 2 === 0) throw new Error('hostile');
  }
  async fetch(request) {
    if (new URL(request.url).pathname === '/arm') await this.ctx.storage.setAlarm(0);
    return new Response(String((await this.ctx.storage.get('n')) ?? 0));
  }
}
export class Plain extends DurableObject {}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/start') {
      await Promise.all([...Array(40).keys()].map((i) => env.PINGER.getByName(`h${i}`).fetch('http://x/arm')));
      return new Response('ok');
    }
    if (url.pathname === '/sum') {
      const counts = await Promise.all([...Array(40).keys()].map(async (i) =>
        Number(await (await env.PINGER.getByName(`h${i}`).fetch('http://x/')).text())));
      return new Response(String(counts.filter((n) => n > 0).length));
    }
    return env.PINGER.getByName(url.searchParams.get('name') ?? 'h0').fetch(request);
  }
};
"#;

#[tokio::test]
async fn a_worker_hammering_alarms_leaves_its_neighbour_answering() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).unwrap();
    let (engine, _) = store_engine(store.clone());
    let hammer = alarm_bundle("evil/hammer", HAMMER);
    let neighbour = bundle("good/hello", HELLO);
    // Before.
    neighbour_ok(&engine, &neighbour).await;
    assert_eq!(
        run(&engine, 0, &hammer, "/start").await,
        (200, "ok".to_owned())
    );
    let _loop = runner(&engine, &store, &[&hammer, &neighbour]);
    // During: the alarms keep coming (each object re-arms itself at once),
    // and the neighbour answers every time.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        neighbour_ok(&engine, &neighbour).await;
        let (_, n) = run(&engine, 0, &hammer, "/?name=h0").await;
        if n.parse::<u32>().unwrap_or(0) >= 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the hammer's alarms stalled at {n}"
        );
    }
    // Every hostile object's alarm ran at least once.
    loop {
        let (_, ran) = run(&engine, 0, &hammer, "/sum").await;
        neighbour_ok(&engine, &neighbour).await;
        if ran == "40" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {ran} of 40 objects' alarms ran"
        );
    }
    // After.
    neighbour_ok(&engine, &neighbour).await;
}

/// Two hundred objects whose alarms are all overdue and each burn CPU;
/// `/start?from=N` arms fifty of them (a request's 50 subrequests: each
/// object call is one), `/count` answers how many alarms ran in this
/// isolate.
const FLOOD: &str = r#"
import { DurableObject } from 'cloudflare:workers';
let fired = 0;
export class Pinger extends DurableObject {
  async alarm() {
    let x = 0;
    for (let i = 0; i < 1e7; i++) x += i % 7;
    if (x >= 0) fired += 1;
  }
  async fetch() {
    await this.ctx.storage.setAlarm(0);
    return new Response('armed');
  }
}
export class Plain extends DurableObject {}
export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === '/count') return new Response(String(fired));
    const from = Number(new URL(request.url).searchParams.get('from'));
    await Promise.all([...Array(50).keys()].map((i) => env.PINGER.getByName(`f${from + i}`).fetch('http://x/')));
    return new Response('ok');
  }
};
"#;

#[tokio::test]
async fn a_namespaces_alarm_backlog_leaves_anothers_alarm_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).unwrap();
    let (engine, _) = store_engine(store.clone());
    let flood = alarm_bundle("evil/flood", FLOOD);
    let benign = alarm_bundle("good/pinger", PINGER);
    // Before: 200 overdue alarms, then the neighbour's, due after them.
    assert_eq!(state(&engine, &benign, "a").await["fired"], 0);
    for from in [0, 50, 100, 150] {
        assert_eq!(
            run(&engine, 0, &flood, &format!("/start?from={from}")).await,
            (200, "ok".to_owned())
        );
    }
    run(&engine, 0, &benign, "/set?name=a&in=-1000").await;
    let _loop = runner(&engine, &store, &[&flood, &benign]);
    // During: the neighbour's alarm is claimed at the first look, beside
    // the flood's share, rather than after the flood's whole backlog
    // (soonest first alone would run at least 136 of them before it).
    let a = until(&engine, &benign, "a", |s| s["fired"] == 1).await;
    assert_eq!(a["seen"], serde_json::json!(["0:false"]));
    let (_, ran) = run(&engine, 0, &flood, "/count").await;
    let ran: u32 = ran.parse().unwrap();
    assert!(
        ran < 100,
        "the flood ran {ran} of 200 alarms before its neighbour's one"
    );
    // After: the flood's alarms all run in their turn.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, ran) = run(&engine, 0, &flood, "/count").await;
        state(&engine, &benign, "a").await;
        if ran == "200" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {ran} of the flood's 200 alarms ran"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
