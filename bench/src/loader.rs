//! Section 16, Worker Loader and dispatch (issue 60).
//!
//! Loaded code, `isolane dev` against workerd's `workerLoader` binding
//! (`--experimental`), one caller Worker ([`CALLER`]) on both, each side one
//! engine thread, every request timed alone on a keep-alive connection,
//! the sides taking turns round by round:
//! - *never-seen code*: `/load/<new id>`, whose `LOADER.get(id, callback)`
//!   asks the callback for a module of its own (its text names the id, so no
//!   cache of either side has seen it) and fetches it once; every answer is
//!   checked to be the id. The load alone is that request less the median
//!   of a plain request to the caller (`/`);
//! - *warm*: per call, the median of `/load/warm?n=N+1` less that of
//!   `/load/warm?n=1` over N (`get` of an id the thread holds, then its
//!   `fetch`), against the same of `/svc/warm` (a service binding's
//!   `fetch` to a Worker of the caller's namespace).
//!
//! Dispatch, through the router and one node as processes (the
//! `distributed` section's cluster): wrk against a Worker by its own route
//! and against a platform Worker of another namespace that dispatches every
//! request to it (`env.D.get('hello').fetch(request)`), interleaved.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_testenv::workers::{apply, inline_worker, wait_ready};
use isolane_testenv::{free_port, workerd};
use isolane_worker::Binding;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::cluster::{self, ClusterBinaries, NAMESPACE};
use crate::report::{Section, Table, Target, build_kind};
use crate::servers::{self, Binaries, Server};
use crate::state::Client;
use crate::stats::{fmt_us, median, percentile, us};
use crate::warm::{self, Measured};

/// The caller both sides serve: `/load/<id>?n=` loads (or finds) `id`'s
/// code and fetches it `n` times; `/svc/<id>?n=` calls `env.SVC` `n`
/// times; anything else answers `ok`. Each answers the last body.
pub const CALLER: &str = r#"const code = (id) => ({
  compatibilityDate: '2025-06-01',
  mainModule: 'main.js',
  modules: { 'main.js': 'export default { fetch() { return new Response(' + JSON.stringify(id) + '); } };' },
  globalOutbound: null,
});
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const [, what, id] = url.pathname.split('/');
    const n = Number(url.searchParams.get('n') || '1');
    let last = 'ok';
    if (what === 'load') {
      for (let i = 0; i < n; i++) {
        const worker = env.LOADER.get(id, () => code(id));
        last = await (await worker.getEntrypoint().fetch('http://loaded/')).text();
      }
    } else if (what === 'svc') {
      for (let i = 0; i < n; i++) last = await (await env.SVC.fetch('http://backend/' + id)).text();
    }
    return new Response(last);
  },
};
"#;

/// The caller's service binding `SVC`: answers the path's id.
const BACKEND: &str = "export default { fetch(request) { return new Response(new URL(request.url).pathname.slice(1)); } };\n";

/// The Worker dispatched to, by its own route too.
const HELLO: &str = "export default { fetch() { return new Response('Hello, world!'); } };\n";

/// The platform Worker: every request dispatched to `hello`.
const DISPATCHER: &str =
    "export default { fetch(request, env) { return env.D.get('hello').fetch(request); } };\n";

const PLATFORM_NS: &str = "platform";
const DIRECT_HOST: &str = "hello.bench.test";
const DISPATCH_HOST: &str = "dispatch.bench.test";

/// What to run and how hard.
#[derive(Debug)]
pub struct Plan {
    pub bins: Binaries,
    pub bin_dir: PathBuf,
    /// Never-seen ids per side per round.
    pub ids: usize,
    /// Calls per long request of the warm rows (N).
    pub calls: usize,
    pub rounds: usize,
    pub warm: warm::Plan,
}

/// What one side measured, pooled over rounds.
#[derive(Default)]
struct Loads {
    first: Vec<Duration>,
    plain: Vec<Duration>,
    /// Per round, µs per call.
    warm_us: Vec<f64>,
    service_us: Vec<f64>,
}

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    std::fs::create_dir_all(work)?;
    let (ours, theirs, peer) = local(plan, work).await?;
    let mut markdown = render_loads(plan, &ours, peer.then_some(&theirs));
    let mut targets = load_targets(&ours, peer.then_some(&theirs));
    let (table, target) = dispatch(plan, work).await?;
    markdown.push_str(&table);
    targets.push(target);
    Ok(Section { markdown, targets })
}

/// The caller's Worker Loader binding beside `SVC`, on both sides.
const LOADER_BINDING: ExtraBinding = ExtraBinding {
    yaml: "{ name: LOADER, workerLoader: {} }",
    capnp: "(name = \"LOADER\", workerLoader = ())",
    // An experimental feature of workerd's.
    workerd_flags: &["--experimental"],
};

/// `isolane dev` and workerd serving [`CALLER`], measured in turns.
async fn local(plan: &Plan, work: &Path) -> anyhow::Result<(Loads, Loads, bool)> {
    let pair = Pair {
        caller: CALLER,
        backend: BACKEND,
        host: "loader.bench.test",
        extra: Some(&LOADER_BINDING),
    };
    let (isolane, peer) = serve_pair(&pair, &plan.bins, &work.join("loader")).await?;
    let (mut ours, mut theirs) = (Loads::default(), Loads::default());
    // A connection per side and round: a server may close one left idle
    // through the other side's round.
    for r in 0..plan.rounds {
        let mut client = Client::connect(&isolane).await?;
        round(&mut client, &format!("isolane-{r}"), plan, &mut ours).await?;
        if let Some(server) = &peer {
            let mut client = Client::connect(server).await?;
            round(&mut client, &format!("workerd-{r}"), plan, &mut theirs).await?;
        }
    }
    Ok((ours, theirs, peer.is_some()))
}

/// Two Workers of one namespace served by `isolane dev --workers
/// --threads 1 --no-tail` and by workerd (compatibility date 2025-06-01):
/// `caller` on `host` (workerd's socket `main`), bound to `backend` (no
/// route) as `SVC`.
pub struct Pair<'a> {
    pub caller: &'a str,
    pub backend: &'a str,
    pub host: &'a str,
    /// One more binding of the caller's, before `SVC`.
    pub extra: Option<&'a ExtraBinding>,
}

/// A binding of a [`Pair`]'s caller, as each side spells it.
pub struct ExtraBinding {
    /// A flow item of `spec.bindings`.
    pub yaml: &'static str,
    /// An item of a `Workerd.Worker`'s `bindings`.
    pub capnp: &'static str,
    /// Flags workerd needs for it.
    pub workerd_flags: &'static [&'static str],
}

/// Starts both sides of `pair` (files and logs under `dir`) and waits for
/// each to answer `/`; workerd only when there is its binary.
pub async fn serve_pair(
    pair: &Pair<'_>,
    bins: &Binaries,
    dir: &Path,
) -> anyhow::Result<(Server, Option<Server>)> {
    let folder = dir.join("workers");
    std::fs::create_dir_all(&folder)?;
    std::fs::write(folder.join("workers.yaml"), workers_yaml(pair))?;
    let isolane =
        servers::isolane_dev_workers(bins, &folder, dir, &["--threads", "1", "--no-tail"]);
    let isolane = Server {
        host: Some(pair.host.into()),
        ..isolane
    };
    isolane.wait_ok(Duration::from_secs(60)).await?;
    let peer = match &bins.workerd {
        Some(_) => Some(workerd_pair(pair, bins, &dir.join("workerd"))?),
        None => None,
    };
    if let Some(server) = &peer {
        server.wait_ok(Duration::from_secs(60)).await?;
    }
    Ok((isolane, peer))
}

/// The pair as `isolane dev --workers` reads them.
fn workers_yaml(pair: &Pair<'_>) -> String {
    let indent = |js: &str| -> String { js.lines().map(|l| format!("    {l}\n")).collect() };
    let extra = pair
        .extra
        .map_or_else(String::new, |b| format!("{}, ", b.yaml));
    format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: caller, namespace: {PLATFORM_NS} }}\nspec:\n  routes: [{{ host: {} }}]\n  compatibilityDate: \"2025-06-01\"\n  limits: {{ cpuMs: 30000, subrequests: 1000 }}\n  bindings: [{extra}{{ name: SVC, service: {{ name: backend }} }}]\n  script: |\n{}---\napiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: backend, namespace: {PLATFORM_NS} }}\nspec:\n  compatibilityDate: \"2025-06-01\"\n  limits: {{ cpuMs: 30000, subrequests: 1000 }}\n  script: |\n{}",
        pair.host,
        indent(pair.caller),
        indent(pair.backend)
    )
}

/// workerd serving the pair: the caller as its socket `main`, `SVC` to
/// the backend.
fn workerd_pair(pair: &Pair<'_>, bins: &Binaries, dir: &Path) -> anyhow::Result<Server> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("caller.js"), pair.caller)?;
    std::fs::write(dir.join("backend.js"), pair.backend)?;
    let caller = workerd::Service {
        services: vec![workerd::ServiceBinding {
            binding: "SVC".into(),
            service: "backend".into(),
            entrypoint: None,
            props: None,
        }],
        ..workerd::Service::module(
            "main",
            "caller.js",
            "2025-06-01",
            ([127, 0, 0, 1], free_port()?).into(),
        )
    };
    let backend = workerd::Service::module(
        "backend",
        "backend.js",
        "2025-06-01",
        ([127, 0, 0, 1], free_port()?).into(),
    );
    let mut config = workerd::render(&[caller, backend]);
    let mut flags: &[&str] = &[];
    if let Some(extra) = pair.extra {
        config = config.replacen(
            "bindings = [(name = \"SVC\"",
            &format!("bindings = [{}, (name = \"SVC\"", extra.capnp),
            1,
        );
        flags = extra.workerd_flags;
    }
    let path = dir.join("config.capnp");
    std::fs::write(&path, config)?;
    servers::workerd_with(bins, &path, dir, flags)
}

/// One side's round: never-seen ids, plain requests, then the warm pairs.
async fn round(
    client: &mut Client,
    prefix: &str,
    plan: &Plan,
    into: &mut Loads,
) -> anyhow::Result<()> {
    for i in 0..plan.ids {
        let id = format!("{prefix}-{i}");
        into.first
            .push(client.checked(&format!("/load/{id}"), &id).await?);
        into.plain.push(client.checked("/", "ok").await?);
    }
    for (kind, per_call) in [("load", &mut into.warm_us), ("svc", &mut into.service_us)] {
        let path = format!("/{kind}/warm");
        per_call.push(warm_per_call(client, &path, plan.calls, &|_| "warm".to_owned()).await?);
    }
    Ok(())
}

/// Requests whose work is a loop of `?n=` calls: µs per call, the median
/// of 9 requests making `n + 1` calls less that of 9 making 1, over `n`
/// (the request around the loop cancels out), after one unmeasured long
/// request. `answer(k)` is the body of a request making `k` calls.
pub async fn warm_per_call(
    client: &mut Client,
    path: &str,
    n: usize,
    answer: &dyn Fn(usize) -> String,
) -> anyhow::Result<f64> {
    let (long, short) = (format!("{path}?n={}", n + 1), format!("{path}?n=1"));
    let (long_answer, short_answer) = (answer(n + 1), answer(1));
    client.checked(&long, &long_answer).await?;
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        one.push(us(client.checked(&short, &short_answer).await?));
        many.push(us(client.checked(&long, &long_answer).await?));
    }
    Ok((median(&many) - median(&one)) / n as f64)
}

/// A row of the loads table: a side's value at a quantile.
type Quantile = fn(&Loads, f64) -> f64;
/// A row of per-call values (one per round).
type PerCall = fn(&Loads) -> &Vec<f64>;

fn p(samples: &[Duration], q: f64) -> f64 {
    us(percentile(samples, q))
}

/// The load alone at quantile `q`: the never-seen request less the median
/// plain request.
fn load_alone(loads: &Loads, q: f64) -> f64 {
    p(&loads.first, q) - p(&loads.plain, 0.5)
}

fn render_loads(plan: &Plan, ours: &Loads, theirs: Option<&Loads>) -> String {
    let build = build_kind(&plan.bin_dir);
    let mut markdown = format!(
        "## 16. Worker Loader and dispatch (issue 60)\n\n\
         Loaded code: one caller Worker with a Worker Loader binding and a service binding, \
         served by `isolane dev --workers --threads 1` ({build} binaries) and by `workerd \
         serve --experimental` (its `workerLoader` binding; it enforces no limits on loaded \
         code), every request alone on a keep-alive connection, {} rounds, the sides in \
         turn. Never-seen: per round {} ids, each `LOADER.get(id, callback)` with a module \
         whose text names the id (no cache has seen it), fetched once, the answer checked; \
         *the load alone* is that request less the median plain request to the same caller. \
         Warm: the median of 9 requests making {} calls of one id the thread holds (`get`, \
         then `fetch`) less that of requests making 1, per call; the same for a service \
         binding's `fetch` in the same caller.\n\n",
        plan.rounds,
        plan.ids,
        plan.calls + 1,
    );
    markdown.push_str(&loads_table(ours, theirs));
    markdown.push('\n');
    markdown
}

/// The loads' rows, both sides.
fn loads_table(ours: &Loads, theirs: Option<&Loads>) -> String {
    let mut table = Table::new(&[
        "what",
        ">isolane dev p50",
        ">p99",
        ">workerd p50",
        ">p99",
        "goal",
    ]);
    let peer = |f: &dyn Fn(&Loads) -> String| theirs.map_or_else(|| "—".to_owned(), f);
    let rows: [(&str, Quantile, &str); 3] = [
        ("plain request to the caller", |l, q| p(&l.plain, q), ""),
        (
            "request loading never-seen code, to its answer",
            |l, q| p(&l.first, q),
            "",
        ),
        (
            "never-seen code: the load alone",
            load_alone,
            "< 1 ms p50, < 5 ms p99",
        ),
    ];
    for (what, at, goal) in rows {
        table.row(vec![
            what.to_owned(),
            fmt_us(at(ours, 0.5)),
            fmt_us(at(ours, 0.99)),
            peer(&|l| fmt_us(at(l, 0.5))),
            peer(&|l| fmt_us(at(l, 0.99))),
            goal.to_owned(),
        ]);
    }
    let per_call: [(&str, PerCall, &str); 2] = [
        (
            "warm: a call of loaded code (get + fetch), per call",
            |l| &l.warm_us,
            "≤ a service-binding call",
        ),
        ("a service-binding fetch, per call", |l| &l.service_us, ""),
    ];
    for (what, values, goal) in per_call {
        table.row(vec![
            what.to_owned(),
            fmt_us(median(values(ours))),
            "—".to_owned(),
            peer(&|l| fmt_us(median(values(l)))),
            "—".to_owned(),
            goal.to_owned(),
        ]);
    }
    table.render()
}

fn load_targets(ours: &Loads, theirs: Option<&Loads>) -> Vec<Target> {
    let (p50, p99) = (load_alone(ours, 0.5), load_alone(ours, 0.99));
    let (warm, service) = (median(&ours.warm_us), median(&ours.service_us));
    let workerd = theirs.map_or_else(String::new, |l| {
        format!(
            " (workerd: {}, {})",
            fmt_us(load_alone(l, 0.5)),
            fmt_us(load_alone(l, 0.99))
        )
    });
    vec![
        Target::new(
            "never-seen code, `LOADER.get` to its first answer: < 1 ms p50, < 5 ms p99 (issue 60)",
            format!("{}, {}{workerd}", fmt_us(p50), fmt_us(p99)),
            p50 < 1_000.0 && p99 < 5_000.0,
        ),
        Target::new(
            "the same id again (warm), per call ≤ a service-binding call (issue 60)",
            format!("{} vs {}", fmt_us(warm), fmt_us(service)),
            warm <= service,
        ),
    ]
}

/// The cluster: `hello` by its route and through the platform's dispatch
/// binding, under wrk in turns.
async fn dispatch(plan: &Plan, work: &Path) -> anyhow::Result<(String, Target)> {
    let dir = work.join("loader-cluster");
    std::fs::create_dir_all(&dir)?;
    let bins = ClusterBinaries::in_dir(&plan.bin_dir)?;
    let hello = inline_worker("hello", HELLO, &[DIRECT_HOST]);
    let flags = cluster::Flags::default();
    let mut cluster = cluster::start_worker(&bins, &dir, &hello, DIRECT_HOST, &flags, &[]).await?;
    cluster.router.name = "direct route";
    let client = cluster.control_plane.client();
    cluster
        .control_plane
        .create_namespace(PLATFORM_NS)
        .await
        .context("creating the platform namespace")?;
    // The consent a cluster admin gives (docs/dispatch.md).
    let label = isolane_worker::dispatch::consent_label(PLATFORM_NS);
    let patch = serde_json::json!({ "metadata": { "labels": { label: "true" } } });
    Api::<Namespace>::all(client.clone())
        .patch(NAMESPACE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("labelling the customer namespace")?;
    let mut dispatcher = inline_worker("dispatcher", DISPATCHER, &[DISPATCH_HOST]);
    dispatcher.spec.bindings = vec![Binding::dispatch_namespace("D", NAMESPACE)];
    apply(&client, PLATFORM_NS, &dispatcher).await;
    wait_ready(&client, PLATFORM_NS, "dispatcher", Duration::from_secs(60)).await;
    let through = Server {
        name: "dispatch: platform → hello",
        addr: cluster.router.addr,
        host: Some(DISPATCH_HOST.into()),
        process: None,
        helpers: Vec::new(),
    };
    through.wait_ok(Duration::from_secs(60)).await?;
    let measured = warm::measure(&[&cluster.router, &through], &plan.warm).await?;
    let markdown = render_dispatch(plan, &measured);
    let target = measured.ratio_target(
        "a dispatch call through router + node ≥ 0.9× a direct route to the same Worker's \
         req/s (issue 60)",
        1,
        0,
        0.9,
    );
    Ok((markdown, target))
}

fn render_dispatch(plan: &Plan, measured: &Measured) -> String {
    format!(
        "Dispatch: a hello Worker of namespace `bench` applied to a local kube-apiserver, \
         served by one `isolane-node` behind the `isolane-router` (the binaries of `{}`, the \
         cluster of section 2), by its own route and through a platform Worker of namespace \
         `platform` whose dispatch namespace binding calls it for every request (two Workers \
         in one request, on the node's thread that took it). wrk, {} rounds of {} s per side \
         per concurrency, the sides alternating. `CPU µs/req` is the router's and the node's \
         processes together, for the direct row only (the same processes serve both rows).\n\n{}\n",
        plan.bin_dir.display(),
        plan.warm.rounds,
        plan.warm.duration.as_secs(),
        measured.table(&[0])
    )
}
