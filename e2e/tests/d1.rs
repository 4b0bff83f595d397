//! D1 and SQLite-backed Durable Objects in a cluster (issue 58): the
//! operator, two one-thread runtime nodes and the router as processes, one
//! real PostgreSQL, Workers applied with kubectl, real HTTP through the
//! router.
//!
//! 1. A Worker's D1 database (`shop`, database `orders`): a schema in one
//!    `batch`, 3 users and 30 orders inserted concurrently, then a query
//!    with a join asked concurrently until both nodes have served it: every
//!    answer is the same (the node that does not own the database on the
//!    ring sends its calls to the owner: one live copy).
//! 2. The same Worker and database name in another namespace is another,
//!    empty database; its writes do not show in the first.
//! 3. A recursive CTE without end ends at the Worker's CPU limit (50 ms),
//!    again and again until a neighbour Worker has answered three times
//!    from the database's owner node (where the query runs, on the node's
//!    one thread) during them; the neighbour answers before, during (every
//!    time a 200 within a second) and after; the database answers as before.
//! 4. The node owning both the database and a SQL object is SIGKILLed
//!    while four clients write to them (two to each), then a third node
//!    joins: both answer again, and every acknowledged row is there.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use isolane_e2e::cluster::{Cluster, ClusterOptions};
use isolane_e2e::ingress::{Ingress, Reply};
use isolane_e2e::kubectl;
use isolane_e2e::workers::{self, inline_worker};
use isolane_placement::{Node, NodeSet};
use isolane_testenv::{ControlPlane, Postgres, wait_until};
use isolane_worker::Binding;

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";
const SHOP: &str = "shop.test";
const SHOP_B: &str = "shop-b.test";
const NEIGHBOUR: &str = "neighbour.test";
/// Deadline for anything the system does on its own.
const SETTLE: Duration = Duration::from_secs(60);
/// The join's answer after step 1's writes.
const REPORT: &str = r#"[{"name":"alice","orders":15,"qty":225},{"name":"bob","orders":15,"qty":240},{"name":"carol","orders":0,"qty":0}]"#;

/// D1 (`env.DB`) and a SQLite-backed object class (`env.NOTES`); a failure
/// answers 500 with the error's name and message.
const SHOP_SCRIPT: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Notes extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS notes (v TEXT PRIMARY KEY)');
  }
  add(v) {
    this.ctx.storage.sql.exec('INSERT INTO notes (v) VALUES (?)', v);
    return this.ctx.storage.sql.exec('SELECT count(*) AS n FROM notes').one().n;
  }
  all() {
    return this.ctx.storage.sql.exec('SELECT v FROM notes').toArray().map((r) => r.v);
  }
}
const REPORT = 'SELECT u.name, count(o.id) AS orders, coalesce(sum(o.qty), 0) AS qty'
  + ' FROM users u LEFT JOIN orders o ON o.user_id = u.id GROUP BY u.name ORDER BY u.name';
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const q = (k) => url.searchParams.get(k);
    const db = env.DB;
    try {
      switch (url.pathname) {
        case '/setup':
          await db.batch([
            db.prepare('CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)'),
            db.prepare('CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, item TEXT UNIQUE NOT NULL, qty INTEGER NOT NULL)'),
          ]);
          return new Response('ok');
        case '/user':
          return Response.json(await db.prepare('INSERT INTO users (name) VALUES (?) RETURNING id').bind(q('name')).first('id'));
        case '/order': {
          const r = await db.prepare('INSERT INTO orders (user_id, item, qty) SELECT id, ?, ? FROM users WHERE name = ?')
            .bind(q('item'), Number(q('qty')), q('name')).run();
          return Response.json(r.meta.changes);
        }
        case '/report':
          return Response.json((await db.prepare(REPORT).all()).results);
        case '/items':
          return Response.json((await db.prepare('SELECT item FROM orders').raw()).map((r) => r[0]));
        case '/spin':
          return Response.json(await db.prepare('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c').first('n'));
        case '/id':
          return new Response(env.NOTES.idFromName(q('name')).toString());
        case '/note':
          return Response.json(await env.NOTES.getByName(q('name')).add(q('v')));
        case '/notes':
          return Response.json(await env.NOTES.getByName(q('name')).all());
      }
      return new Response('no such path', { status: 404 });
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  },
};
"#;

/// `path` on `host`, answered 200 (a 503 is a node's refusal before the
/// request ran, or the router's while a node is being replaced: sent
/// again, as a client would).
async fn get(ingress: &Ingress, host: &str, path: &str) -> Reply {
    wait_until(&format!("{host}{path} answered"), SETTLE, || async move {
        let reply = ingress.get(host, path).await.ok()?;
        if reply.status == 503 {
            return None;
        }
        assert_eq!(reply.status, 200, "{host}{path}: {reply:?}");
        Some(reply)
    })
    .await
}

/// The node of `nodes` (one thread each) that owns placement key `key`:
/// the first of its rendezvous order (`runtime-node/src/peers.rs`).
fn ring_owner(nodes: &[String], key: &str) -> String {
    let set = NodeSet::new(nodes.iter().map(|n| Node::new(n.clone(), 1)).collect());
    let first = set.primary(key).unwrap();
    set.nodes()[first].name.clone()
}

/// The D1 database's placement key (`isolane_engine::object_key`).
fn database_key() -> String {
    format!("{TEAM}/#d1/orders")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_and_a_sql_object_have_one_owner_and_survive_its_death() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM, OTHER]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = ClusterOptions::with_postgres(&database.connection_string());
    let mut cluster = Cluster::start(&cp, dir.path(), options).await;
    apply(&cp, dir.path(), &cluster).await;
    let ingress = Ingress::new(cluster.ingress());
    for (route, path) in [
        (SHOP, "/id?name=probe"),
        (SHOP_B, "/id?name=probe"),
        (NEIGHBOUR, "/"),
    ] {
        // The router learns the routes a little after the Workers are Ready.
        wait_until(&format!("{route} routed"), SETTLE, || {
            let ingress = &ingress;
            async move { (ingress.get(route, path).await.ok()?.status == 200).then_some(()) }
        })
        .await;
    }
    let nodes = cluster.node_names();
    a_join_answers_the_same_from_both_nodes(&ingress, &nodes).await;
    namespaces_are_apart(&ingress).await;
    let owner = ring_owner(&nodes, &database_key());
    a_query_without_end_stops_at_the_cpu_limit(&ingress, &owner).await;
    the_owner_dies_during_writes(&cp, &mut cluster, &ingress).await;
}

/// `shop` and `neighbour` in team-a, `shop` in team-b; every node loaded
/// team-a's `shop`.
async fn apply(cp: &ControlPlane, dir: &std::path::Path, cluster: &Cluster) {
    let shop = |route: &str| {
        let mut shop = inline_worker("shop", SHOP_SCRIPT, &[route]);
        shop.spec.bindings = vec![
            Binding::d1("DB", "orders"),
            Binding::sqlite_durable_object("NOTES", "Notes"),
        ];
        shop.spec.limits.cpu_ms = 50;
        shop
    };
    let neighbour = inline_worker(
        "neighbour",
        "export default { fetch() { return new Response('ok'); } };",
        &[NEIGHBOUR],
    );
    let team_a = [shop(SHOP), neighbour];
    kubectl::apply_workers(cp, &dir.join("a.yaml"), TEAM, &team_a).await;
    kubectl::apply_workers(cp, &dir.join("b.yaml"), OTHER, &[shop(SHOP_B)]).await;
    for (namespace, name) in [(TEAM, "shop"), (TEAM, "neighbour"), (OTHER, "shop")] {
        workers::wait_ready(&cp.client(), namespace, name, SETTLE).await;
    }
    let loaded = format!("bundle loaded worker.id={TEAM}/shop");
    wait_until("every node to load the shop Worker", SETTLE, || {
        let logs: Vec<String> = cluster.nodes.iter().map(|n| n.process.log()).collect();
        let loaded = &loaded;
        async move {
            logs.iter()
                .all(|log| log.contains(loaded.as_str()))
                .then_some(())
        }
    })
    .await;
}

/// Step 1: schema, users, 30 concurrent orders; the join asked 20 at a
/// time until both nodes answered it, always the same.
async fn a_join_answers_the_same_from_both_nodes(ingress: &Ingress, nodes: &[String]) {
    get(ingress, SHOP, "/setup").await;
    for name in ["alice", "bob", "carol"] {
        get(ingress, SHOP, &format!("/user?name={name}")).await;
    }
    let orders: Vec<_> = (0..30)
        .map(|i| {
            let ingress = ingress.clone();
            let who = ["alice", "bob"][i % 2];
            let path = format!("/order?name={who}&item=o{i}&qty={}", i + 1);
            tokio::spawn(async move { get(&ingress, SHOP, &path).await })
        })
        .collect();
    for order in orders {
        assert_eq!(order.await.unwrap().body, "1");
    }
    let owner = ring_owner(nodes, &database_key());
    let mut served = std::collections::BTreeMap::<String, usize>::new();
    let deadline = Instant::now() + SETTLE;
    while served.len() < 2 {
        assert!(Instant::now() < deadline, "one node answered: {served:?}");
        let asked: Vec<_> = (0..20)
            .map(|_| {
                let ingress = ingress.clone();
                tokio::spawn(async move { get(&ingress, SHOP, "/report").await })
            })
            .collect();
        for reply in asked {
            let reply = reply.await.unwrap();
            assert_eq!(reply.body, REPORT, "{reply:?}");
            *served.entry(reply.node.unwrap_or_default()).or_default() += 1;
        }
    }
    eprintln!("the join answered the same {served:?} (the database's owner: {owner})");
}

/// Step 2: team-b's `orders` is another database.
async fn namespaces_are_apart(ingress: &Ingress) {
    let reply = ingress.get(SHOP_B, "/report").await.unwrap();
    assert_eq!(reply.status, 500, "{reply:?}");
    assert!(
        reply.body.contains("D1_ERROR: no such table: users"),
        "{reply:?}"
    );
    get(ingress, SHOP_B, "/setup").await;
    get(ingress, SHOP_B, "/user?name=zed").await;
    assert_eq!(
        get(ingress, SHOP_B, "/order?name=zed&item=o1&qty=7")
            .await
            .body,
        "1"
    );
    let theirs = get(ingress, SHOP_B, "/report").await.body;
    assert_eq!(theirs, r#"[{"name":"zed","orders":1,"qty":7}]"#);
    assert_eq!(get(ingress, SHOP, "/report").await.body, REPORT);
}

/// The neighbour's answers: status, time, the node that served it.
type Answers = Arc<Mutex<Vec<(u16, Duration, Option<String>)>>>;

/// The neighbour asked over and over until `stop`.
fn neighbour(
    ingress: Ingress,
    stop: Arc<AtomicBool>,
    answers: Answers,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let start = Instant::now();
            let (status, node) = match ingress.get(NEIGHBOUR, "/").await {
                Ok(reply) => (reply.status, reply.node),
                Err(_) => (0, None),
            };
            answers
                .lock()
                .unwrap()
                .push((status, start.elapsed(), node));
        }
    })
}

/// One `/spin`: it ends at the CPU limit. Run on the node it came to (the
/// owner), the request ends there (503); sent to the owner, the call does
/// there and the Worker catches its error.
async fn spin(ingress: &Ingress) {
    let start = Instant::now();
    let reply = ingress.get(SHOP, "/spin").await.unwrap();
    let took = start.elapsed();
    let message = "failed the call: CPU time limit of 50 ms exceeded";
    let at_limit = reply.status == 503 || (reply.status == 500 && reply.body.contains(message));
    assert!(at_limit, "{reply:?}");
    assert!(took < Duration::from_secs(5), "the query ran {took:?}");
    eprintln!(
        "a query without end ended in {took:?}: {} {:?} {:?}",
        reply.status, reply.reason, reply.body
    );
}

/// Step 3: a recursive CTE without end, again and again until the
/// neighbour has answered from the database's owner node (where the
/// query runs, on the node's one thread) three times during them; every
/// neighbour answer is a 200 within a second.
async fn a_query_without_end_stops_at_the_cpu_limit(ingress: &Ingress, owner: &str) {
    get(ingress, NEIGHBOUR, "/").await;
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Answers::default();
    let asking = neighbour(ingress.clone(), stop.clone(), answers.clone());
    let on_owner = |answers: &Answers| {
        let answers = answers.lock().unwrap();
        answers
            .iter()
            .filter(|a| a.2.as_deref() == Some(owner))
            .count()
    };
    let mut spins = 0;
    while spins < 3 || on_owner(&answers) < 3 {
        assert!(spins < 30, "the neighbour was not served by {owner}");
        spin(ingress).await;
        spins += 1;
    }
    stop.store(true, Ordering::Relaxed);
    asking.await.unwrap();
    let by_owner = on_owner(&answers);
    let answers = answers.lock().unwrap().clone();
    let slowest = answers.iter().map(|a| a.1).max().unwrap();
    eprintln!(
        "{spins} queries without end; the neighbour answered {} times during them ({} on {owner}), slowest {slowest:?}",
        answers.len(),
        by_owner
    );
    assert!(answers.iter().all(|a| a.0 == 200), "{answers:?}");
    assert!(slowest < Duration::from_secs(1), "{answers:?}");
    get(ingress, NEIGHBOUR, "/").await;
    assert_eq!(get(ingress, SHOP, "/report").await.body, REPORT);
}

type Acked = Arc<Mutex<Vec<String>>>;

/// A client writing `<tag>-<n>` for n = 0, 1, … with `path(value)` until
/// `stop`; the values acknowledged (answered 200) go to `acked`.
fn writer(
    ingress: Ingress,
    tag: String,
    path: fn(&str, &str) -> String,
    object: String,
    stop: Arc<AtomicBool>,
    acked: Acked,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut failed = 0;
        for n in 0.. {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let value = format!("{tag}-{n}");
            match ingress.get(SHOP, &path(&object, &value)).await {
                Ok(reply) if reply.status == 200 => acked.lock().unwrap().push(value),
                _ => failed += 1,
            }
        }
        failed
    })
}

/// A SQL object (its name) that `victim` owns, as the ring of `nodes` says.
async fn object_owned_by(ingress: &Ingress, nodes: &[String], victim: &str) -> String {
    for i in 0.. {
        let name = format!("notes{i}");
        let id = get(ingress, SHOP, &format!("/id?name={name}")).await.body;
        if ring_owner(nodes, &format!("{TEAM}/shop/Notes/{id}")) == victim {
            return name;
        }
    }
    unreachable!()
}

/// Waits until `acked` holds at least `count` values.
async fn acked_at_least(acked: &Acked, count: usize) {
    wait_until(&format!("{count} writes acknowledged"), SETTLE, || async {
        (acked.lock().unwrap().len() >= count).then_some(())
    })
    .await;
}

/// Step 4: the owner of the database and of a SQL object dies mid-writes.
async fn the_owner_dies_during_writes(cp: &ControlPlane, cluster: &mut Cluster, ingress: &Ingress) {
    let nodes = cluster.node_names();
    let victim = ring_owner(&nodes, &database_key());
    let object = object_owned_by(ingress, &nodes, &victim).await;
    let stop = Arc::new(AtomicBool::new(false));
    let (rows, notes): (Acked, Acked) = Default::default();
    let order: fn(&str, &str) -> String = |_, v| format!("/order?name=carol&item={v}&qty=1");
    let note: fn(&str, &str) -> String = |o, v| format!("/note?name={o}&v={v}");
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let (path, acked) = if i % 2 == 0 {
                (order, &rows)
            } else {
                (note, &notes)
            };
            let (ingress, stop) = (ingress.clone(), stop.clone());
            writer(
                ingress,
                format!("c{i}"),
                path,
                object.clone(),
                stop,
                acked.clone(),
            )
        })
        .collect();
    acked_at_least(&rows, 20).await;
    acked_at_least(&notes, 20).await;
    let killed = Instant::now();
    cluster.node_mut(&victim).process.kill();
    let joined = cluster.add_node(cp).await;
    cluster.wait_live_nodes(2).await;
    let (before_rows, before_notes) = (rows.lock().unwrap().len(), notes.lock().unwrap().len());
    acked_at_least(&rows, before_rows + 20).await;
    acked_at_least(&notes, before_notes + 20).await;
    stop.store(true, Ordering::Relaxed);
    let mut failed = 0;
    for client in clients {
        failed += client.await.unwrap();
    }
    let stored_rows: Vec<String> =
        serde_json::from_str(&get(ingress, SHOP, "/items").await.body).unwrap();
    let stored_notes: Vec<String> = serde_json::from_str(
        &get(ingress, SHOP, &format!("/notes?name={object}"))
            .await
            .body,
    )
    .unwrap();
    let (rows, notes) = (rows.lock().unwrap().clone(), notes.lock().unwrap().clone());
    eprintln!(
        "{victim} (the owner) killed mid-writes, {joined} joined, writes stopped {:?} after: D1 {} acknowledged, {} stored; object {} acknowledged, {} stored; {failed} writes failed",
        killed.elapsed(),
        rows.len(),
        stored_rows.len(),
        notes.len(),
        stored_notes.len()
    );
    let lost_rows: Vec<_> = rows.iter().filter(|v| !stored_rows.contains(v)).collect();
    let lost_notes: Vec<_> = notes.iter().filter(|v| !stored_notes.contains(v)).collect();
    assert!(
        lost_rows.is_empty(),
        "acknowledged D1 rows lost: {lost_rows:?}"
    );
    assert!(
        lost_notes.is_empty(),
        "acknowledged object rows lost: {lost_notes:?}"
    );
    // At most one write in flight per client at the kill landed unanswered.
    assert!(stored_rows.len() <= 30 + rows.len() + 2, "{stored_rows:?}");
    assert!(stored_notes.len() <= notes.len() + 2, "{stored_notes:?}");
}
