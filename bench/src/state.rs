//! Comparison 11, state (issue 32): Durable Objects and KV through the
//! router and a node whose store is a PostgreSQL on the same host, against
//! workerd's local Durable Objects (SQLite on disk) in the same run.
//!
//! One script on both sides ([`SCRIPT`]). Every request is timed alone on a
//! keep-alive HTTP/1.1 connection (one at a time: latency, not
//! throughput), and the two sides take turns round by round:
//! - *first request to a never-seen object*: `/first?name=<new>`, whose
//!   object reads its storage once (a miss: the store is asked); and the
//!   same request to an object seen before (`name=warm`);
//! - *warm storage read*: `/reads?n=10001` against `/reads?n=1` on one
//!   warm object, the difference of their medians over 10,000 reads (so
//!   the hop and the request cancel out);
//! - *acknowledged write*: `/write`, a get-then-put answered once the put
//!   is durable (PostgreSQL's commit; workerd's SQLite on disk);
//! - *hot KV read*: `/kv`, one `KV.get` of a key read before (the node's
//!   KV cache). workerd has no KV of its own (wrangler's local KV is
//!   Miniflare's), so that row has no peer;
//! - *hello*: `/`, no state, the hop alone, for reference.

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use isolane_storage::POSTGRES_URL_ENV;
use isolane_testenv::workers::inline_worker;
use isolane_testenv::{Postgres, free_port};
use isolane_worker::Binding;

use crate::cluster::{self, ClusterBinaries};
use crate::report::{Section, Table, Target};
use crate::servers::Server;
use crate::stats::{fmt_us, median, percentile, us};

/// The Worker both sides serve.
pub const SCRIPT: &str = r#"import { DurableObject } from 'cloudflare:workers';
export class Counter extends DurableObject {
  async fetch(request) {
    const url = new URL(request.url);
    const s = this.ctx.storage;
    if (url.pathname === '/reads') {
      const n = Number(url.searchParams.get('n') ?? 1);
      let v;
      for (let i = 0; i < n; i++) v = await s.get('n');
      return new Response(String(v ?? 0));
    }
    if (url.pathname === '/write') {
      const n = ((await s.get('n')) ?? 0) + 1;
      await s.put('n', n);
      return new Response(String(n));
    }
    return new Response(String((await s.get('n')) ?? 0));
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/') return new Response('ok');
    if (url.pathname === '/kv') {
      if (env.KV === undefined) return new Response('no KV', { status: 501 });
      const value = await env.KV.get('hot');
      if (value === null) await env.KV.put('hot', 'x'.repeat(64));
      return new Response(value ?? 'put');
    }
    const name = url.searchParams.get('name') ?? 'warm';
    return env.COUNTER.get(env.COUNTER.idFromName(name)).fetch(request);
  },
};
"#;

const HOST: &str = "state.bench.test";
/// Reads per `/reads` request of the long kind: enough that they take
/// well over the hop's jitter.
const READS: usize = 10_000;

#[derive(Debug, Clone)]
pub struct Plan {
    /// Never-seen objects per side per round.
    pub first: usize,
    /// Requests per measure per side per round.
    pub requests: usize,
    pub rounds: usize,
}

pub struct Setup<'a> {
    pub cluster: &'a ClusterBinaries,
    /// workerd's native binary, when there is one.
    pub workerd: Option<&'a Path>,
    pub work: &'a Path,
    /// What `--bin-dir` named (said in the section: release or debug).
    pub bin_dir: &'a Path,
}

/// One keep-alive HTTP/1.1 connection to a server (the loader section
/// times its requests with it too).
pub struct Client {
    sender: SendRequest<Empty<Bytes>>,
    host: String,
}

impl Client {
    pub async fn connect(server: &Server) -> anyhow::Result<Self> {
        let tcp = tokio::net::TcpStream::connect(server.addr).await?;
        tcp.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(connection);
        let host = server
            .host
            .clone()
            .unwrap_or_else(|| server.addr.to_string());
        Ok(Self { sender, host })
    }

    /// `GET path`: how long it took; fails unless it answers 200.
    pub async fn get(&mut self, path: &str) -> anyhow::Result<Duration> {
        Ok(self.get_body(path).await?.0)
    }

    /// `GET path` whose body must be `expected`: how long it took.
    pub async fn checked(&mut self, path: &str, expected: &str) -> anyhow::Result<Duration> {
        let (took, body) = self.get_body(path).await?;
        anyhow::ensure!(
            body == expected.as_bytes(),
            "GET {path} answered {:?}, not {expected:?}",
            String::from_utf8_lossy(&body)
        );
        Ok(took)
    }

    /// `GET path`: how long it took and its body; fails unless it answers
    /// 200.
    pub async fn get_body(&mut self, path: &str) -> anyhow::Result<(Duration, Bytes)> {
        let request = http::Request::get(path)
            .header(http::header::HOST, &self.host)
            .body(Empty::new())?;
        self.sender.ready().await?;
        let started = Instant::now();
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let took = started.elapsed();
        anyhow::ensure!(
            status == http::StatusCode::OK,
            "GET {path} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        Ok((took, body))
    }

    async fn times(&mut self, path: &str, count: usize) -> anyhow::Result<Vec<Duration>> {
        let mut took = Vec::with_capacity(count);
        for _ in 0..count {
            took.push(self.get(path).await?);
        }
        Ok(took)
    }
}

/// What one side measured, pooled over rounds.
#[derive(Default)]
struct Measured {
    first: Vec<Duration>,
    /// The same request to an object seen before.
    warm: Vec<Duration>,
    /// Per round: the median `/reads?n=1001` minus the median `/reads?n=1`,
    /// over 1,000 reads (µs per read).
    read_us: Vec<f64>,
    write: Vec<Duration>,
    kv: Vec<Duration>,
    hello: Vec<Duration>,
}

async fn round(
    client: &mut Client,
    side: &str,
    round: usize,
    plan: &Plan,
    kv: bool,
    into: &mut Measured,
) -> anyhow::Result<()> {
    for i in 0..plan.first {
        into.first.push(
            client
                .get(&format!("/first?name={side}-{round}-{i}"))
                .await?,
        );
    }
    into.warm
        .extend(client.times("/first?name=warm", plan.requests).await?);
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..(plan.requests / 5).max(5) {
        one.push(us(client.get("/reads?n=1").await?));
        many.push(us(client.get(&format!("/reads?n={}", READS + 1)).await?));
    }
    into.read_us
        .push((median(&many) - median(&one)) / READS as f64);
    into.write
        .extend(client.times("/write?name=written", plan.requests).await?);
    if kv {
        client.get("/kv").await?;
        into.kv.extend(client.times("/kv", plan.requests).await?);
    }
    into.hello.extend(client.times("/", plan.requests).await?);
    Ok(())
}

/// A Worker workerd serves with one Durable Object class on local disk
/// (`durableObjectStorage = localDisk`: SQLite files).
pub struct ObjectWorker<'a> {
    pub script: &'a str,
    /// The binding's name and its class.
    pub binding: &'a str,
    pub class: &'a str,
    /// SQLite-backed (`enableSql`: `ctx.storage.sql`).
    pub sql: bool,
}

/// workerd serving `worker` from `dir` on a free port.
pub fn workerd_objects(
    bin: &Path,
    dir: &Path,
    worker: &ObjectWorker<'_>,
) -> anyhow::Result<Server> {
    std::fs::create_dir_all(dir)?;
    let storage = dir.join("objects");
    std::fs::create_dir_all(&storage)?;
    std::fs::write(dir.join("worker.js"), worker.script)?;
    let port = free_port()?;
    let service = isolane_testenv::workerd::Service {
        durable_objects: vec![(worker.binding.to_owned(), worker.class.to_owned())],
        object_storage: Some(storage),
        enable_sql: worker.sql,
        ..isolane_testenv::workerd::Service::module(
            "main",
            "worker.js",
            "2024-09-23",
            ([127, 0, 0, 1], port).into(),
        )
    };
    let config = isolane_testenv::workerd::write_config(dir, "config.capnp", &[service])?;
    let process = isolane_testenv::workerd::serve(bin, &config, &[], &dir.join("workerd.log"))
        .context("starting workerd")?;
    Ok(Server {
        name: "workerd",
        addr: ([127, 0, 0, 1], port).into(),
        host: None,
        process: Some(process),
        helpers: Vec::new(),
    })
}

/// Runs the comparison and writes nothing: the section.
pub async fn section(setup: &Setup<'_>, plan: &Plan) -> anyhow::Result<Section> {
    std::fs::create_dir_all(setup.work)?;
    let database = Postgres::start().context("starting PostgreSQL (hack/install-deps.sh)")?;
    let url = database.connection_string();
    let env: [(&str, &OsStr); 1] = [(POSTGRES_URL_ENV, OsStr::new(&url))];
    let mut worker = inline_worker("state", SCRIPT, &[HOST]);
    worker.spec.bindings = vec![
        Binding::durable_object("COUNTER", "Counter"),
        Binding::kv("KV", "bench-kv"),
    ];
    let cluster = cluster::start_worker(
        setup.cluster,
        setup.work,
        &worker,
        HOST,
        &cluster::Flags::default(),
        &env,
    )
    .await?;
    let peer = match setup.workerd {
        Some(bin) => {
            let worker = ObjectWorker {
                script: SCRIPT,
                binding: "COUNTER",
                class: "Counter",
                sql: false,
            };
            let server = workerd_objects(bin, &setup.work.join("workerd-state"), &worker)?;
            server.wait_ok(Duration::from_secs(60)).await?;
            Some(server)
        }
        None => None,
    };
    let mut ours = Measured::default();
    let mut theirs = Measured::default();
    let mut our_client = Client::connect(&cluster.router).await?;
    let mut their_client = match &peer {
        Some(server) => Some(Client::connect(server).await?),
        None => None,
    };
    for r in 0..plan.rounds {
        round(&mut our_client, "isolane", r, plan, true, &mut ours).await?;
        if let Some(client) = &mut their_client {
            round(client, "workerd", r, plan, false, &mut theirs).await?;
        }
    }
    let markdown = render(setup, plan, &ours, peer.is_some().then_some(&theirs));
    let targets = targets(&ours);
    // The router, node and operator stop before their database.
    drop(cluster);
    drop(peer);
    drop(database);
    Ok(Section { markdown, targets })
}

fn p(samples: &[Duration], q: f64) -> f64 {
    us(percentile(samples, q))
}

/// Which samples of a side a row shows.
type Samples = fn(&Measured) -> &Vec<Duration>;

fn render(setup: &Setup<'_>, plan: &Plan, ours: &Measured, theirs: Option<&Measured>) -> String {
    let build = if setup.bin_dir.ends_with("release") {
        "release"
    } else {
        "debug (not release: slower than a deployment)"
    };
    let mut markdown = format!(
        "## 11. State: Durable Objects and KV (issue 32)\n\n\
         One Worker with a Durable Object class and a KV namespace, applied to a local \
         kube-apiserver and served by one `isolane-node` behind the `isolane-router` \
         ({build} binaries from `{}`), its store a PostgreSQL on the same host \
         (isolane-testenv, Debian's); against workerd's local Durable Objects \
         (`durableObjectStorage = localDisk`: SQLite files on the same disk). Every request \
         alone on a keep-alive connection; {} rounds, the sides in turn; per round {} \
         never-seen objects, {} pairs of read requests and {} requests of each other kind. Warm read: the median of \
         `/reads?n={}` minus that of `/reads?n=1`, over {READS} reads.\n\n",
        setup.bin_dir.display(),
        plan.rounds,
        plan.first,
        (plan.requests / 5).max(5),
        plan.requests,
        READS + 1,
    );
    let mut table = Table::new(&[
        "what",
        ">router → node, PostgreSQL p50",
        ">p99",
        ">workerd p50",
        ">p99",
        "goal",
    ]);
    let peer = |f: &dyn Fn(&Measured) -> String| theirs.map_or_else(|| "—".to_owned(), f);
    let rows: [(&str, Samples, &str); 5] = [
        (
            "first request to a never-seen object",
            |m| &m.first,
            "< 2 ms p50",
        ),
        ("the same request to an object seen before", |m| &m.warm, ""),
        (
            "acknowledged write (get, put, answer once durable)",
            |m| &m.write,
            "< 5 ms p99",
        ),
        ("hello, no state (the hop alone)", |m| &m.hello, ""),
        ("hot KV read", |m| &m.kv, "< 1 ms p99"),
    ];
    for (what, samples, goal) in rows {
        let kv = what.starts_with("hot KV");
        table.row(vec![
            what.to_owned(),
            fmt_us(p(samples(ours), 0.50)),
            fmt_us(p(samples(ours), 0.99)),
            if kv {
                "no KV".to_owned()
            } else {
                peer(&|m| fmt_us(p(samples(m), 0.50)))
            },
            if kv {
                "—".to_owned()
            } else {
                peer(&|m| fmt_us(p(samples(m), 0.99)))
            },
            goal.to_owned(),
        ]);
    }
    table.row(vec![
        "warm storage read inside an object (median per read)".to_owned(),
        fmt_us(median(&ours.read_us)),
        "—".to_owned(),
        peer(&|m| fmt_us(median(&m.read_us))),
        "—".to_owned(),
        "< 100 µs".to_owned(),
    ]);
    markdown.push_str(&table.render());
    markdown.push_str(
        "\nThe first request, the write, KV and hello go client → router → node \
         (gRPC) and back; workerd serves in one process, so its column has no hop: \
         the hello row shows what the hop costs.\n\n",
    );
    markdown
}

fn targets(ours: &Measured) -> Vec<Target> {
    let first = p(&ours.first, 0.50);
    let read = median(&ours.read_us);
    let write = p(&ours.write, 0.99);
    let kv = p(&ours.kv, 0.99);
    vec![
        Target::new(
            "first request to a never-seen object, router + node: < 2 ms p50",
            fmt_us(first),
            first < 2_000.0,
        ),
        Target::new(
            "warm storage read inside an object: < 100 µs",
            fmt_us(read),
            read < 100.0,
        ),
        Target::new(
            "acknowledged write, PostgreSQL on the same host: < 5 ms p99",
            fmt_us(write),
            write < 5_000.0,
        ),
        Target::new(
            "hot KV read through the router: < 1 ms p99",
            fmt_us(kv),
            kv < 1_000.0,
        ),
    ]
}
