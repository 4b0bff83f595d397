//! One instance of each Durable Object in a cluster: two engines (two
//! nodes, one thread each) on one store, each with `ObjectPeers` that names
//! an object's owner by the placement ring of the two and hands a call for
//! the other to that engine (as a node's `peers.rs` does over gRPC). A
//! Worker served by both reaches one live instance of each object: the
//! calls made on the node that does not own it go to the owner (`stub.fetch`
//! with its body, RPC results and thrown errors); a call the owner refuses
//! before it runs is sent again (at most `MAX_ATTEMPTS` times, then a clear
//! error); after the ring moves an object and moves it back, the stale
//! instance's fenced write is sent again and counts once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use isolane_engine::{
    Body, Engine, EngineConfig, ObjectCall, ObjectPeers, PeerAnswer, PeerError, PoolMode, Work,
    WorkerBundle,
};
use isolane_placement::{Node, NodeSet};
use isolane_storage::Store;

use crate::support::*;

const NODES: [&str; 2] = ["node-a", "node-b"];

/// `/inc?name=N` increments object N through `stub.fetch` (answering its
/// count and the body it read); `/stats` reads its count and how many
/// instances were ever made, `/fail` throws, both through RPC.
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
    return new Response(`${n} ${await request.text()}`);
  }
  async stats() { return { n: (await this.ctx.storage.get('n')) ?? 0, started: this.started }; }
  async fail() { throw new RangeError('too far'); }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const stub = env.COUNTER.getByName(url.searchParams.get('name') ?? 'a');
    try {
      if (url.pathname === '/inc') {
        const r = await stub.fetch('http://object/', { method: 'POST', body: 'sent' });
        return new Response(await r.text());
      }
      if (url.pathname === '/id') return new Response(stub.id.toString());
      if (url.pathname === '/stats') return Response.json(await stub.stats());
      await stub.fail();
      return new Response('no throw');
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 409 });
    }
  }
};
"#;

/// The peers of node `me` of [`NODES`].
#[derive(Debug)]
struct TwoNodes {
    me: usize,
    engines: Arc<OnceLock<[Engine; 2]>>,
    worker: Arc<WorkerBundle>,
    /// Every object is owned by the other node than the ring says.
    flipped: Arc<AtomicBool>,
    /// Calls this node sent to the other.
    sent: AtomicUsize,
    /// How many of the next calls the other node refuses before they run.
    refuse: AtomicUsize,
}

impl ObjectPeers for TwoNodes {
    fn owner(&self, key: &str) -> Option<String> {
        let ring = NodeSet::new(NODES.iter().map(|n| Node::new(*n, 1)).collect());
        let mut owner = ring.primary(key)?;
        if self.flipped.load(Ordering::SeqCst) {
            owner = 1 - owner;
        }
        let name = ring.nodes()[owner].name.clone();
        (name != NODES[self.me]).then_some(name)
    }

    fn call(
        &self,
        node: &str,
        _: &WorkerBundle,
        call: ObjectCall,
        request: http::Request<Body>,
    ) -> PeerAnswer {
        self.sent.fetch_add(1, Ordering::SeqCst);
        let node = node.to_owned();
        let refused = self
            .refuse
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let other = self.engines.get().expect("both engines started")[1 - self.me].clone();
        let worker = self.worker.clone();
        Box::pin(async move {
            if refused {
                return Err(PeerError::NotOwner { node });
            }
            let answer = other
                .run(0, worker, Work::ObjectCall { call, request })
                .await;
            answer.map_err(|error| PeerError::Failed {
                node,
                reason: error.to_string(),
            })
        })
    }
}

struct Cluster {
    engines: [Engine; 2],
    peers: [Arc<TwoNodes>; 2],
    worker: Arc<WorkerBundle>,
    flipped: Arc<AtomicBool>,
}

fn cluster(store: &Store, id: &str) -> Cluster {
    let mut bundle = bundle_with(id, COUNTER, Default::default(), &[]);
    bundle
        .durable_objects
        .insert("COUNTER".to_owned(), "Counter".to_owned());
    let worker = Arc::new(bundle);
    let engines = Arc::new(OnceLock::new());
    let flipped = Arc::new(AtomicBool::new(false));
    let peers = [0, 1].map(|me| {
        Arc::new(TwoNodes {
            me,
            engines: engines.clone(),
            worker: worker.clone(),
            flipped: flipped.clone(),
            sent: AtomicUsize::new(0),
            refuse: AtomicUsize::new(0),
        })
    });
    let started = peers.clone().map(|peers| {
        engine_with(EngineConfig {
            threads: 1,
            pin_threads: false,
            pool_mode: PoolMode::Pinned,
            spare_isolates: 1,
            store: Some(store.clone()),
            objects: Some(peers),
            ..EngineConfig::default()
        })
        .0
    });
    engines.set(started.clone()).expect("set once");
    Cluster {
        engines: started,
        peers,
        worker,
        flipped,
    }
}

impl Cluster {
    async fn run(&self, node: usize, path: &str) -> (u16, String) {
        run(&self.engines[node], 0, &self.worker, path).await
    }

    /// The node owning object `name` (by the ring, unflipped).
    async fn owner(&self, name: &str) -> usize {
        let (_, id) = self.run(0, &format!("/id?name={name}")).await;
        let key = isolane_engine::object_key(&self.worker.id, "Counter", &id);
        usize::from(self.peers[0].owner(&key).is_some())
    }
}

#[tokio::test]
async fn a_worker_on_two_nodes_reaches_one_instance_of_each_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).unwrap();
    let cluster = Arc::new(cluster(&store, "shop/nodes"));
    // Objects owned by each node (of 16 names, some by each).
    let mut owners = Vec::new();
    for i in 0..16 {
        owners.push(cluster.owner(&format!("o{i}")).await);
    }
    let a = format!("o{}", owners.iter().position(|o| *o == 0).unwrap());
    let b = format!("o{}", owners.iter().position(|o| *o == 1).unwrap());
    // 200 concurrent increments of two objects, one owned by each node,
    // the requests spread over both nodes.
    let requests: Vec<_> = (0..200)
        .map(|i| {
            let cluster = cluster.clone();
            let name = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(
                async move { cluster.run((i / 2) % 2, &format!("/inc?name={name}")).await },
            )
        })
        .collect();
    let mut counts = Vec::new();
    for request in requests {
        let (status, body) = request.await.unwrap();
        assert_eq!(status, 200, "{body}");
        let (n, read) = body.split_once(' ').unwrap();
        assert_eq!(read, "sent", "the object read the request's body");
        counts.push(n.parse::<u32>().unwrap());
    }
    counts.sort_unstable();
    let expected: Vec<u32> = (1..=100).flat_map(|n| [n, n]).collect();
    assert_eq!(counts, expected, "each object counted 1..=100 once");
    // Half of each object's calls were made on the node that does not own it.
    let sent: Vec<usize> = cluster
        .peers
        .iter()
        .map(|p| p.sent.load(Ordering::SeqCst))
        .collect();
    assert_eq!(sent, [50, 50]);
    for node in 0..2 {
        for name in [&a, &b] {
            // One instance of the object in the cluster, whichever node asks.
            assert_eq!(
                cluster.run(node, &format!("/stats?name={name}")).await,
                (200, r#"{"n":100,"started":1}"#.to_owned()),
                "node {node}, object {name}"
            );
            assert_eq!(
                cluster.run(node, &format!("/fail?name={name}")).await,
                (409, "RangeError: too far".to_owned())
            );
        }
    }
}

#[tokio::test]
async fn calls_refused_before_they_run_are_sent_again_a_few_times() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).unwrap();
    let cluster = cluster(&store, "shop/refused");
    let mut theirs = 0;
    while cluster.owner(&format!("o{theirs}")).await != 1 {
        theirs += 1;
    }
    let inc = format!("/inc?name=o{theirs}");
    // Refused three times: the fourth attempt runs.
    cluster.peers[0].refuse.store(3, Ordering::SeqCst);
    assert_eq!(cluster.run(0, &inc).await, (200, "1 sent".to_owned()));
    // Refused every time: a clear error after MAX_ATTEMPTS, nothing ran.
    cluster.peers[0].refuse.store(100, Ordering::SeqCst);
    let (status, body) = cluster.run(0, &inc).await;
    assert_eq!(status, 409);
    assert_eq!(
        body,
        "Error: Durable Object call failed: node node-b is not the object's owner"
    );
    assert_eq!(
        100 - cluster.peers[0].refuse.load(Ordering::SeqCst),
        isolane_engine::MAX_ATTEMPTS
    );
    cluster.peers[0].refuse.store(0, Ordering::SeqCst);
    assert_eq!(cluster.run(1, &inc).await, (200, "2 sent".to_owned()));
}

#[tokio::test]
async fn after_the_ring_moves_an_object_and_back_its_stale_instance_is_fenced_and_the_call_sent_again()
 {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).unwrap();
    let cluster = cluster(&store, "shop/moved");
    let mut mine = 0;
    while cluster.owner(&format!("o{mine}")).await != 0 {
        mine += 1;
    }
    let inc = format!("/inc?name=o{mine}");
    // Owned by node a: increments from node b go there.
    for n in 1..=3 {
        assert_eq!(cluster.run(1, &inc).await, (200, format!("{n} sent")));
    }
    // The ring moves it to node b, which makes an instance (taking the
    // object's epoch); node a's calls go there.
    cluster.flipped.store(true, Ordering::SeqCst);
    for n in 4..=6 {
        assert_eq!(cluster.run(0, &inc).await, (200, format!("{n} sent")));
    }
    // And back: node a's old instance is stale. Node b's call reaches it,
    // its write is fenced, and the call is sent again to a fresh instance.
    cluster.flipped.store(false, Ordering::SeqCst);
    for n in 7..=9 {
        assert_eq!(cluster.run(1, &inc).await, (200, format!("{n} sent")));
    }
    assert_eq!(
        cluster.run(0, &format!("/stats?name=o{mine}")).await,
        (200, r#"{"n":9,"started":3}"#.to_owned())
    );
}
