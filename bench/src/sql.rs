//! Section 17, SQL next to the code, D1 and R2 (issue 58), through the
//! router and a node whose store is a PostgreSQL on the same host and
//! whose R2 buckets are in SeaweedFS's S3 gateway, against workerd's local
//! SQLite-backed Durable Objects in the same run.
//!
//! One script on both sides ([`SCRIPT`]). Every request is timed alone on
//! a keep-alive HTTP/1.1 connection, the sides taking turns round by round
//! (a connection per side and round), and every answer is checked:
//! - *point read with `sql.exec` inside an object*: `/sql/reads?n=N+1`
//!   against `/sql/reads?n=1` on one object, the difference of their
//!   medians over N reads (the hop and the request cancel out), as the
//!   state section does for storage reads; the answer is the last row read;
//! - *acknowledged SQL write*: `/sql/write`, one `INSERT … RETURNING id`
//!   answered once the write is durable (after the output gate: PostgreSQL's
//!   commit; workerd's SQLite on disk); each answer must be the id after the
//!   one before;
//! - *D1 point query*: `/d1?id=<k>`, `DB.prepare(SELECT …).bind(k).first('v')`.
//!   workerd alone has no D1 (wrangler's local D1 is Miniflare's, a SQLite
//!   object behind a wrapped binding), so its column is the same SELECT in
//!   a SQLite object of its own, reached from the Worker by a stub's
//!   `fetch` (what a D1 database is on Isolane too);
//! - *hello*: `/`, no state, the hop alone, for reference;
//! - *R2 get*: a 64 MiB object put through the Worker, then read whole
//!   through router → node → Worker → client, in turn with the same stored
//!   object read straight from the S3 server (a presigned `GET`), each body
//!   compared byte for byte after its clock stopped ([`crate::r2_get`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_storage::POSTGRES_URL_ENV;
use isolane_testenv::workers::inline_worker;
use isolane_testenv::{Postgres, S3_ACCESS_KEY, S3_SECRET_KEY, SeaweedFs};
use isolane_worker::Binding;

use crate::cluster::{self, Cluster, ClusterBinaries, NAMESPACE};
use crate::r2_get;
use crate::report::{Section, Table, Target, build_kind, verdict};
use crate::servers::Server;
use crate::state::{Client, ObjectWorker, workerd_objects};
use crate::stats::{fmt_us, median, percentile, us};

/// The Worker both sides serve.
pub const SCRIPT: &str = r#"import { DurableObject } from 'cloudflare:workers';
const ROWS = 100;
export class Store extends DurableObject {
  fetch(request) {
    const url = new URL(request.url);
    const sql = this.ctx.storage.sql;
    const n = Number(url.searchParams.get('n') ?? 1);
    switch (url.pathname) {
      case '/seed': {
        sql.exec('CREATE TABLE IF NOT EXISTS kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
        sql.exec('CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
        for (let i = 1; i <= ROWS; i++) sql.exec('INSERT OR REPLACE INTO kv (id, v) VALUES (?, ?)', i, 'v' + i);
        return new Response(String(sql.exec('SELECT count(*) AS n FROM kv').one().n));
      }
      case '/reads': {
        let v;
        for (let i = 0; i < n; i++) v = sql.exec('SELECT v FROM kv WHERE id = ?', (i % ROWS) + 1).one().v;
        return new Response(v);
      }
      case '/write':
        return new Response(String(sql.exec('INSERT INTO log (v) VALUES (?) RETURNING id', 'x').one().id));
      case '/get':
        return new Response(sql.exec('SELECT v FROM kv WHERE id = ?', n).one().v);
    }
    return new Response('no such path', { status: 404 });
  }
}
const object = (env, name) => env.OBJ.get(env.OBJ.idFromName(name));
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === '/') return new Response('ok');
    if (path.startsWith('/sql/')) {
      return object(env, url.searchParams.get('name') ?? 'bench').fetch('http://object/' + path.slice(5) + url.search);
    }
    if (path === '/d1/seed') {
      if (env.DB === undefined) return object(env, 'd1').fetch('http://object/seed');
      const rows = [env.DB.prepare('CREATE TABLE IF NOT EXISTS kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)')];
      for (let i = 1; i <= ROWS; i++) rows.push(env.DB.prepare('INSERT OR REPLACE INTO kv (id, v) VALUES (?, ?)').bind(i, 'v' + i));
      await env.DB.batch(rows);
      return new Response(String(await env.DB.prepare('SELECT count(*) AS n FROM kv').first('n')));
    }
    if (path === '/d1') {
      const id = Number(url.searchParams.get('id'));
      if (env.DB === undefined) return object(env, 'd1').fetch('http://object/get?n=' + id);
      return new Response(await env.DB.prepare('SELECT v FROM kv WHERE id = ?').bind(id).first('v'));
    }
    if (path === '/r2') {
      if (env.B === undefined) return new Response('no R2', { status: 501 });
      const key = url.searchParams.get('key');
      if (request.method === 'PUT') return new Response(String((await env.B.put(key, request.body)).size));
      const o = await env.B.get(key);
      if (o === null) return new Response('no such object', { status: 404 });
      return new Response(o.body);
    }
    if (path === '/gen') {
      // The same bytes as the R2 object (byte i is i % 251), made in memory
      // in 1 MiB chunks: the streaming path without the store.
      const MIB = 1 << 20, size = Number(url.searchParams.get('mib')) * MIB;
      const block = new Uint8Array(MIB + 251);
      for (let i = 0; i < block.length; i++) block[i] = i % 251;
      let at = 0;
      return new Response(new ReadableStream({
        pull(c) {
          if (at >= size) return c.close();
          c.enqueue(block.slice(at % 251, at % 251 + MIB));
          at += MIB;
        },
      }));
    }
    return new Response('no such path', { status: 404 });
  },
};
"#;

const HOST: &str = "sql.bench.test";
/// The project `wrangler dev` serves: [`SCRIPT`], its SQLite class and a
/// local D1 database.
const WRANGLER_TOML: &str = r#"name = "sql-bench"
main = "worker.js"
compatibility_date = "2024-09-23"

[[durable_objects.bindings]]
name = "OBJ"
class_name = "Store"

[[migrations]]
tag = "v1"
new_sqlite_classes = ["Store"]

[[d1_databases]]
binding = "DB"
database_name = "bench"
database_id = "bench-local"
"#;
/// Rows of the table the reads and D1 queries read.
const ROWS: usize = 100;
/// The R2 bucket and the key of the big object.
const BUCKET: &str = "bench-files";
const KEY: &str = "big";

#[derive(Debug, Clone)]
pub struct Plan {
    /// Requests per measure per side per round.
    pub requests: usize,
    pub rounds: usize,
    /// Reads per long `/sql/reads` request (N).
    pub reads: usize,
    pub r2: r2_get::Plan,
}

pub struct Setup<'a> {
    pub cluster: &'a ClusterBinaries,
    /// workerd's native binary, when there is one.
    pub workerd: Option<&'a Path>,
    /// Node.js and wrangler's `bin/wrangler.js`, when there are.
    pub wrangler: Option<(&'a Path, &'a Path)>,
    pub work: &'a Path,
    /// What `--bin-dir` named (said in the section: release or debug).
    pub bin_dir: &'a Path,
}

/// What one side measured, pooled over rounds.
#[derive(Default)]
struct Measured {
    /// Per round, µs per point read inside the object.
    read_us: Vec<f64>,
    write: Vec<Duration>,
    /// The id the last write answered.
    last_id: Option<u64>,
    d1: Vec<Duration>,
    hello: Vec<Duration>,
}

/// The value of row `id` (1-based) as the script seeds it.
fn row(id: usize) -> String {
    format!("v{id}")
}

/// The row the last of `n` reads of `/reads?n=` reads.
fn last_read_row(n: usize) -> String {
    row((n - 1) % ROWS + 1)
}

/// Both tables seeded (the object's and the database's), checked.
async fn seed(server: &Server) -> anyhow::Result<()> {
    let mut client = Client::connect(server).await?;
    client.checked("/sql/seed", &ROWS.to_string()).await?;
    client.checked("/d1/seed", &ROWS.to_string()).await?;
    Ok(())
}

/// One acknowledged write: its time, its id checked to follow the last.
async fn write(client: &mut Client, into: &mut Measured) -> anyhow::Result<()> {
    let (took, body) = client.get_body("/sql/write").await?;
    let text = String::from_utf8_lossy(&body);
    let id: u64 = text
        .parse()
        .with_context(|| format!("/sql/write answered {text:?}, not an id"))?;
    if let Some(last) = into.last_id {
        anyhow::ensure!(id == last + 1, "/sql/write answered id {id} after {last}");
    }
    into.last_id = Some(id);
    into.write.push(took);
    Ok(())
}

async fn round(server: &Server, plan: &Plan, into: &mut Measured) -> anyhow::Result<()> {
    let mut client = Client::connect(server).await?;
    let long = format!("/sql/reads?n={}", plan.reads + 1);
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..(plan.requests / 5).max(5) {
        one.push(us(client.checked("/sql/reads?n=1", &row(1)).await?));
        many.push(us(client
            .checked(&long, &last_read_row(plan.reads + 1))
            .await?));
    }
    into.read_us
        .push((median(&many) - median(&one)) / plan.reads as f64);
    for _ in 0..plan.requests {
        write(&mut client, into).await?;
    }
    d1_queries(&mut client, plan, into).await
}

/// The D1 point queries and the hello requests of a round.
async fn d1_queries(client: &mut Client, plan: &Plan, into: &mut Measured) -> anyhow::Result<()> {
    for i in 0..plan.requests {
        let id = i % ROWS + 1;
        let took = client.checked(&format!("/d1?id={id}"), &row(id)).await?;
        into.d1.push(took);
    }
    for _ in 0..plan.requests {
        into.hello.push(client.checked("/", "ok").await?);
    }
    Ok(())
}

/// A round of `wrangler dev`'s: D1 and hello only.
async fn d1_round(server: &Server, plan: &Plan, into: &mut Measured) -> anyhow::Result<()> {
    let mut client = Client::connect(server).await?;
    d1_queries(&mut client, plan, into).await
}

/// `wrangler dev` serving [`SCRIPT`] with a local D1 database (workerd and
/// Miniflare's D1 object), seeded; none without Node.js and wrangler.
async fn local_d1(setup: &Setup<'_>) -> anyhow::Result<Option<Server>> {
    let Some((node, wrangler_js)) = setup.wrangler else {
        return Ok(None);
    };
    let project = setup.work.join("wrangler-d1");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("worker.js"), SCRIPT)?;
    std::fs::write(project.join("wrangler.toml"), WRANGLER_TOML)?;
    let log = setup.work.join("wrangler-d1.log");
    let server = crate::servers::wrangler_dev(node, wrangler_js, &project, &log).await?;
    let mut client = Client::connect(&server).await?;
    client.checked("/d1/seed", &ROWS.to_string()).await?;
    Ok(Some(server))
}

/// workerd with [`SCRIPT`], its class SQLite-backed on local disk.
fn peer(setup: &Setup<'_>) -> anyhow::Result<Option<Server>> {
    let Some(bin) = setup.workerd else {
        return Ok(None);
    };
    let worker = ObjectWorker {
        script: SCRIPT,
        binding: "OBJ",
        class: "Store",
        sql: true,
    };
    Ok(Some(workerd_objects(
        bin,
        &setup.work.join("workerd-sql"),
        &worker,
    )?))
}

/// `isolane-bench sql`'s own flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long)]
    workerd: Option<PathBuf>,
    /// Node.js 22 or later, for `wrangler dev` (its local D1: workerd and
    /// Miniflare's D1 object), the D1 row's second peer; with `--wrangler`.
    #[arg(long, requires = "wrangler")]
    node: Option<PathBuf>,
    /// wrangler's `bin/wrangler.js`.
    #[arg(long, requires = "node")]
    wrangler: Option<PathBuf>,
    /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Requests per measure per side per round.
    #[arg(long, default_value_t = 300)]
    requests: usize,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Point reads per long in-object read request.
    #[arg(long, default_value_t = 10_000)]
    reads: usize,
    /// The R2 object's size, MiB.
    #[arg(long, default_value_t = 64)]
    r2_mib: usize,
    /// Whole reads of it per way per round.
    #[arg(long, default_value_t = 3)]
    r2_gets: usize,
}

/// The section as `args` ask, processes' logs in `work`.
pub async fn run(args: &Args, work: &Path) -> anyhow::Result<Section> {
    anyhow::ensure!(
        args.requests > 0
            && args.rounds > 0
            && args.reads > 0
            && args.r2_gets > 0
            && (1..=1024).contains(&args.r2_mib),
        "--requests, --rounds, --reads and --r2-gets must be positive, --r2-mib 1 to 1024"
    );
    let cluster = ClusterBinaries::in_dir(&args.bin_dir)?;
    // `wrangler dev` runs in its project folder: no relative paths.
    let wrangler = match (&args.node, &args.wrangler) {
        (Some(node), Some(js)) => Some((
            node.clone(),
            std::fs::canonicalize(js).with_context(|| format!("{}", js.display()))?,
        )),
        _ => None,
    };
    let setup = Setup {
        cluster: &cluster,
        workerd: args.workerd.as_deref(),
        wrangler: wrangler.as_ref().map(|(n, w)| (n.as_path(), w.as_path())),
        work,
        bin_dir: &args.bin_dir,
    };
    let plan = Plan {
        requests: args.requests,
        rounds: args.rounds,
        reads: args.reads,
        r2: r2_get::Plan {
            mib: args.r2_mib,
            gets: args.r2_gets,
            rounds: args.rounds,
        },
    };
    section(&setup, &plan).await
}

/// Runs the comparison and writes nothing: the section.
pub async fn section(setup: &Setup<'_>, plan: &Plan) -> anyhow::Result<Section> {
    std::fs::create_dir_all(setup.work)?;
    let database = Postgres::start().context("starting PostgreSQL (hack/install-deps.sh)")?;
    let store = SeaweedFs::start().context("starting SeaweedFS (hack/build-seaweedfs.sh)")?;
    let endpoint = store.s3_endpoint();
    let cluster = start(setup, &database.connection_string(), &endpoint).await?;
    let peer = peer(setup)?;
    if let Some(server) = &peer {
        server.wait_ok(Duration::from_secs(60)).await?;
        seed(server).await?;
    }
    let local_d1 = local_d1(setup).await?;
    seed(&cluster.router).await?;
    let (mut ours, mut theirs) = (Measured::default(), Measured::default());
    let mut wrangler = Measured::default();
    for _ in 0..plan.rounds {
        round(&cluster.router, plan, &mut ours).await?;
        if let Some(server) = &peer {
            round(server, plan, &mut theirs).await?;
        }
        if let Some(server) = &local_d1 {
            d1_round(server, plan, &mut wrangler).await?;
        }
    }
    let object = r2_get::Object {
        bytes: r2_get::pattern(plan.r2.mib << 20),
        key: KEY,
        stored_as: format!("{NAMESPACE}/{BUCKET}/{KEY}"),
    };
    let rates = r2_get::measure(&cluster.router, &endpoint, &object, &plan.r2).await?;
    let peers = Peers {
        workerd: peer.is_some().then_some(&theirs),
        wrangler: local_d1.is_some().then_some(&wrangler),
    };
    let mut markdown = render(setup, plan, &ours, &peers);
    markdown.push_str(&r2_get::render(&plan.r2, &rates));
    let mut targets = targets(&ours);
    targets.push(r2_get::target(&plan.r2, &rates));
    // The router, node and operator stop before their stores.
    drop(cluster);
    drop(peer);
    drop(local_d1);
    drop(store);
    drop(database);
    Ok(Section { markdown, targets })
}

/// The control plane, operator, node and router serving [`SCRIPT`] with
/// its object class, D1 database and R2 bucket; the node's store the
/// PostgreSQL at `postgres`, its R2 store the S3 server at `endpoint`.
async fn start(setup: &Setup<'_>, postgres: &str, endpoint: &str) -> anyhow::Result<Cluster> {
    let env: [(&str, &OsStr); 3] = [
        (POSTGRES_URL_ENV, OsStr::new(postgres)),
        ("ISOLANE_R2_S3_ACCESS_KEY_ID", OsStr::new(S3_ACCESS_KEY)),
        ("ISOLANE_R2_S3_SECRET_ACCESS_KEY", OsStr::new(S3_SECRET_KEY)),
    ];
    let r2 = ["--r2-s3-endpoint", endpoint];
    let mut worker = inline_worker("sql", SCRIPT, &[HOST]);
    worker.spec.bindings = vec![
        Binding::sqlite_durable_object("OBJ", "Store"),
        Binding::d1("DB", "bench"),
        Binding::r2("B", BUCKET),
    ];
    // The long read requests and the big object, in a debug build too.
    worker.spec.limits.wall_ms = 120_000;
    let flags = cluster::Flags {
        node: &r2,
        operator: &r2,
        router: &["--request-timeout", "120s"],
    };
    cluster::start_worker(setup.cluster, setup.work, &worker, HOST, &flags, &env).await
}

fn p(samples: &[Duration], q: f64) -> f64 {
    us(percentile(samples, q))
}

/// Which samples of a side a row shows.
type Samples = fn(&Measured) -> &Vec<Duration>;

/// What the peers measured, those that ran.
struct Peers<'a> {
    workerd: Option<&'a Measured>,
    /// `wrangler dev`: D1 and hello only.
    wrangler: Option<&'a Measured>,
}

fn render(setup: &Setup<'_>, plan: &Plan, ours: &Measured, peers: &Peers<'_>) -> String {
    let build = build_kind(setup.bin_dir);
    let mut markdown = format!(
        "## 17. SQL next to the code, D1 and R2 (issue 58)\n\n\
         One Worker with a SQLite-backed Durable Object class, a D1 database and an R2 \
         bucket, applied to a local kube-apiserver and served by one `isolane-node` behind \
         the `isolane-router` ({build} binaries from `{}`), its store a PostgreSQL on the \
         same host and its R2 store SeaweedFS's S3 gateway (isolane-testenv, both); against \
         workerd's local SQLite-backed objects (`enableSql`, `durableObjectStorage = \
         localDisk`). Every request alone on a keep-alive connection and its answer \
         checked; {} rounds, the sides in turn; per round {} pairs of read requests and {} \
         requests of each other kind. Point read: the median of `/sql/reads?n={}` minus \
         that of `/sql/reads?n=1` (one object, `sql.exec('SELECT v FROM kv WHERE id = ?', \
         k).one()` in a loop), over {} reads. Write: `INSERT … RETURNING id` in one object, \
         answered after the output gate, each id checked to follow the last. D1: \
         `prepare('SELECT v FROM kv WHERE id = ?').bind(k).first('v')` of a {ROWS}-row \
         table. workerd alone has no D1 binding (wrangler's local D1 is Miniflare's SQLite \
         object behind a wrapped binding), so its D1 column is the same SELECT in a SQLite \
         object of its own, called from the Worker by a stub's `fetch`{}.\n\n",
        setup.bin_dir.display(),
        plan.rounds,
        (plan.requests / 5).max(5),
        plan.requests,
        plan.reads + 1,
        plan.reads,
        if peers.wrangler.is_some() {
            "; and the same Worker under `wrangler dev` (Node.js 22, the npm wrangler of \
             `compat/`), whose local D1 is workerd running Miniflare's D1 object, in the same \
             rounds (D1 and hello only; its rows are in the workerd columns, and its hello \
             passes wrangler's proxy Worker)"
        } else {
            ""
        },
    );
    markdown.push_str(&table(ours, peers));
    markdown.push_str(
        "\nThe write, D1 and hello rows go client → router → node (gRPC) and back; \
         workerd serves in one process, so its column has no hop: the hello row shows what \
         the hop costs.\n\n",
    );
    markdown
}

fn table(ours: &Measured, peers: &Peers<'_>) -> String {
    let mut table = Table::new(&[
        "what",
        ">router → node, PostgreSQL p50",
        ">p99",
        ">workerd p50",
        ">p99",
        "goal",
        "result",
    ]);
    let peer = |f: &dyn Fn(&Measured) -> String| peers.workerd.map_or_else(|| "—".to_owned(), f);
    let read = median(&ours.read_us);
    table.row(vec![
        "point read with `sql.exec` inside an object (median per read)".to_owned(),
        fmt_us(read),
        "—".to_owned(),
        peer(&|m| fmt_us(median(&m.read_us))),
        "—".to_owned(),
        "< 20 µs p50".to_owned(),
        verdict(read < 20.0),
    ]);
    let rows: [(&str, Samples, &str, Option<bool>); 3] = [
        (
            "acknowledged SQL write (`INSERT`, answered once durable)",
            |m| &m.write,
            "< 5 ms p99",
            Some(p(&ours.write, 0.99) < 5_000.0),
        ),
        (
            "D1 point query (workerd: the SELECT in its own SQLite object)",
            |m| &m.d1,
            "< 2 ms p50",
            Some(p(&ours.d1, 0.5) < 2_000.0),
        ),
        ("hello, no state (the hop alone)", |m| &m.hello, "", None),
    ];
    for (what, samples, goal, met) in rows {
        table.row(vec![
            what.to_owned(),
            fmt_us(p(samples(ours), 0.50)),
            fmt_us(p(samples(ours), 0.99)),
            peer(&|m| fmt_us(p(samples(m), 0.50))),
            peer(&|m| fmt_us(p(samples(m), 0.99))),
            goal.to_owned(),
            met.map_or_else(String::new, verdict),
        ]);
    }
    if let Some(wrangler) = peers.wrangler {
        wrangler_rows(&mut table, wrangler);
    }
    table.render()
}

/// `wrangler dev`'s D1 and hello, in the peer columns.
fn wrangler_rows(table: &mut Table, wrangler: &Measured) {
    let rows: [(&str, Samples); 2] = [
        (
            "D1 point query, `wrangler dev`'s local D1 (workerd + Miniflare's D1 object)",
            |m| &m.d1,
        ),
        ("hello through `wrangler dev` (its proxy Worker)", |m| {
            &m.hello
        }),
    ];
    for (what, samples) in rows {
        table.row(vec![
            what.to_owned(),
            "—".to_owned(),
            "—".to_owned(),
            fmt_us(p(samples(wrangler), 0.50)),
            fmt_us(p(samples(wrangler), 0.99)),
            String::new(),
            String::new(),
        ]);
    }
}

fn targets(ours: &Measured) -> Vec<Target> {
    let read = median(&ours.read_us);
    let write = p(&ours.write, 0.99);
    let d1 = p(&ours.d1, 0.5);
    vec![
        Target::new(
            "point read with `sql.exec` inside an object: < 20 µs p50 (issue 58)",
            fmt_us(read),
            read < 20.0,
        ),
        Target::new(
            "acknowledged SQL write, PostgreSQL on the same host: < 5 ms p99 (issue 58)",
            fmt_us(write),
            write < 5_000.0,
        ),
        Target::new(
            "D1 query through router + node: < 2 ms p50 (issue 58)",
            fmt_us(d1),
            d1 < 2_000.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_read_row_wraps_at_the_table() {
        assert_eq!(last_read_row(1), "v1");
        assert_eq!(last_read_row(100), "v100");
        assert_eq!(last_read_row(101), "v1");
        assert_eq!(last_read_row(10_001), "v1");
        assert_eq!(last_read_row(5_050), "v50");
    }
}
