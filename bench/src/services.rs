//! Section 18, service bindings and JS RPC (issue 56).
//!
//! Warm calls, `isolane dev --workers --threads 1` against workerd serving
//! the same two Workers with its service binding (the Worker Loader
//! section's pair, [`loader::serve_pair`]): [`CALLER`] bound to
//! [`BACKEND`], a `WorkerEntrypoint`, as `SVC`. Every request is timed
//! alone on a keep-alive connection, the sides taking turns round by round,
//! and every answer is checked (a request making `k` calls answers the sum
//! of what they returned):
//! - *per call*: `/rpc?n=N+1` (`await env.SVC.add(i, 1)` in a loop) against
//!   `/rpc?n=1`, the difference of their medians over N
//!   ([`loader::warm_per_call`]); the same for `/fetch` (`env.SVC.fetch`,
//!   its body read);
//! - *per request*: the p50 of a request making one call less that of a
//!   plain request (`/`) to the same caller;
//! - where the time goes: the server process's CPU time over the per-call
//!   requests, per call made.
//!
//! A chain through the router and one node as processes (the `distributed`
//! section's cluster): wrk against a gateway Worker that calls an auth
//! Worker by RPC and a data Worker by `fetch` (neither has a route), and
//! against a single Worker doing the same work in its own code,
//! interleaved. Each Worker checks its answer and fails the request (a
//! 500, counted by wrk as an error) when it is wrong.

use std::path::{Path, PathBuf};
use std::time::Duration;

use isolane_testenv::workers::{apply, inline_worker, wait_ready};
use isolane_worker::Binding;

use crate::cluster::{self, ClusterBinaries, NAMESPACE};
use crate::loader::{self, Pair, warm_per_call};
use crate::report::{Section, Table, Target, build_kind, verdict};
use crate::servers::{self, Binaries, Server};
use crate::state::Client;
use crate::stats::{fmt_us, median, percentile, us};
use crate::warm::{self, Measured};

/// The caller both sides serve: `/rpc?n=` and `/fetch?n=` call `env.SVC`
/// `n` times and answer the sum of the answers; `/callback?n=` passes a
/// function the callee calls back `n` times (a stub call each) and answers
/// the callee's sum; anything else answers `ok`.
pub const CALLER: &str = r#"export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n') || '1');
    let sum = 0;
    if (url.pathname === '/rpc') {
      for (let i = 0; i < n; i++) sum += await env.SVC.add(i, 1);
    } else if (url.pathname === '/fetch') {
      for (let i = 0; i < n; i++) sum += Number(await (await env.SVC.fetch('http://backend/')).text());
    } else if (url.pathname === '/callback') {
      sum = await env.SVC.each(n, (i) => i + 1);
    } else {
      return new Response('ok');
    }
    return new Response(String(sum));
  },
};
"#;

/// The callee: RPC `add` and `each`, and `fetch` answering `1`.
pub const BACKEND: &str = r#"import { WorkerEntrypoint } from 'cloudflare:workers';
export default class Backend extends WorkerEntrypoint {
  async fetch() { return new Response('1'); }
  add(a, b) { return a + b; }
  async each(n, fn) { let sum = 0; for (let i = 0; i < n; i++) sum += await fn(i); return sum; }
}
"#;

/// The work of the chain, the same code in the chain's Workers and in the
/// single Worker.
const WORK: &str = r#"const TOKEN = 'Bearer bench';
function check(token) {
  if (token !== TOKEN) throw new Error('bad token');
  return { user: 42, roles: ['reader'] };
}
function data(user) { return JSON.stringify({ user, items: [1, 2, 3] }); }
const EXPECTED = data(42);
"#;

/// The auth Worker: `check` by RPC.
const AUTH: &str = r#"import { WorkerEntrypoint } from 'cloudflare:workers';
export default class Auth extends WorkerEntrypoint {
  fetch() { return new Response('not here', { status: 404 }); }
  check(token) { return check(token); }
}
"#;

/// The data Worker: its `fetch` answers the user's data.
const DATA: &str = r#"export default {
  fetch(request) { return new Response(data(Number(new URL(request.url).searchParams.get('user')))); },
};
"#;

/// The gateway: auth by RPC, then data by `fetch`.
const GATEWAY: &str = r#"export default {
  async fetch(request, env) {
    const who = await env.AUTH.check(TOKEN);
    const body = await (await env.DATA.fetch('http://data/?user=' + who.user)).text();
    if (body !== EXPECTED) return new Response('wrong: ' + body, { status: 500 });
    return new Response(body);
  },
};
"#;

/// The single Worker: the same work, in its own code.
const SINGLE: &str = r#"export default {
  fetch() {
    const body = data(check(TOKEN).user);
    if (body !== EXPECTED) return new Response('wrong: ' + body, { status: 500 });
    return new Response(body);
  },
};
"#;

/// What the chain and the single Worker answer ([`WORK`]'s `EXPECTED`).
const EXPECTED_ANSWER: &str = r#"{"user":42,"items":[1,2,3]}"#;

const HOST: &str = "services.bench.test";
const GATEWAY_HOST: &str = "gateway.bench.test";
const SINGLE_HOST: &str = "single.bench.test";

/// `isolane-bench services`'s own flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The `isolane` binary.
    #[arg(long)]
    isolane: PathBuf,
    /// workerd's native binary.
    #[arg(long)]
    workerd: Option<PathBuf>,
    /// Folder with `isolane-operator`, `isolane-node` and `isolane-router`.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Calls per long request of the per-call rows (N; below 1000, the
    /// caller's subrequests).
    #[arg(long, default_value_t = 500)]
    calls: usize,
    /// Requests of each kind per side per round for the per-request rows.
    #[arg(long, default_value_t = 200)]
    requests: usize,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// wrk connections of the chain rows, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    connections: Vec<usize>,
    /// Seconds per wrk run.
    #[arg(long, default_value_t = 5)]
    secs: u64,
}

/// What one side measured, pooled over rounds.
#[derive(Default)]
struct Calls {
    /// Per kind of [`KINDS`], per round, µs per call.
    per_call_us: [Vec<f64>; 3],
    /// The same, the server's CPU µs per call made.
    cpu_us: [Vec<f64>; 3],
    plain: Vec<Duration>,
    /// Requests making one call, per kind of the first two [`KINDS`].
    one: [Vec<Duration>; 2],
}

/// A kind of call: the caller's path for it, and the answer of a request
/// making `k`.
type Kind = (&'static str, fn(usize) -> String);

/// RPC, `fetch`, and a callback (a call on a stub the caller passed).
const KINDS: [Kind; 3] = [
    ("/rpc", rpc_sum),
    ("/fetch", fetch_sum),
    ("/callback", rpc_sum),
];
const RPC: usize = 0;
const FETCH: usize = 1;
const CALLBACK: usize = 2;

/// The section as `args` ask, processes' logs in `work`.
pub async fn run(args: &Args, work: &Path) -> anyhow::Result<Section> {
    anyhow::ensure!(
        args.calls > 0 && args.calls < 1000 && args.requests > 0 && args.rounds > 0,
        "--calls, --requests and --rounds must be positive, --calls below 1000 (the caller's subrequests)"
    );
    std::fs::create_dir_all(work)?;
    let bins = Binaries {
        isolane: args.isolane.clone(),
        workerd: args.workerd.clone(),
    };
    let (ours, theirs) = local(args, &bins, work).await?;
    let mut markdown = render_calls(args, &ours, theirs.as_ref());
    let mut targets = call_targets(&ours, theirs.as_ref());
    let (table, target) = chain(args, work).await?;
    markdown.push_str(&table);
    targets.push(target);
    Ok(Section { markdown, targets })
}

/// Both sides serving the pair, measured in turns.
async fn local(
    args: &Args,
    bins: &Binaries,
    work: &Path,
) -> anyhow::Result<(Calls, Option<Calls>)> {
    let pair = Pair {
        caller: CALLER,
        backend: BACKEND,
        host: HOST,
        extra: None,
    };
    let (isolane, peer) = loader::serve_pair(&pair, bins, &work.join("services")).await?;
    let (mut ours, mut theirs) = (Calls::default(), Calls::default());
    // A connection per side and round: a server may close one left idle
    // through the other side's round.
    for _ in 0..args.rounds {
        round(&isolane, args, &mut ours).await?;
        if let Some(server) = &peer {
            round(server, args, &mut theirs).await?;
        }
    }
    Ok((ours, peer.map(|_| theirs)))
}

/// The body of a request making `k` RPC calls: the sum of `i + 1`.
fn rpc_sum(k: usize) -> String {
    (k * (k + 1) / 2).to_string()
}

/// The body of a request making `k` fetch calls, each answering `1`.
fn fetch_sum(k: usize) -> String {
    k.to_string()
}

/// Requests [`warm_per_call`] makes for `n` calls per long request.
fn calls_made(n: usize) -> usize {
    // One unmeasured long request, then 9 pairs of a short and a long one.
    10 * (n + 1) + 9
}

/// One side's round: the per-call rows, then the per-request ones.
async fn round(server: &Server, args: &Args, into: &mut Calls) -> anyhow::Result<()> {
    let mut client = Client::connect(server).await?;
    let n = args.calls;
    for (k, (path, answer)) in KINDS.into_iter().enumerate() {
        let cpu_before = server.cpu_secs();
        let per_call = warm_per_call(&mut client, path, n, &answer).await?;
        let cpu = match (cpu_before, server.cpu_secs()) {
            (Some(before), Some(after)) => (after - before) * 1e6 / calls_made(n) as f64,
            _ => f64::NAN,
        };
        into.per_call_us[k].push(per_call);
        into.cpu_us[k].push(cpu);
    }
    for _ in 0..args.requests {
        into.plain.push(client.checked("/", "ok").await?);
        for (k, one) in into.one.iter_mut().enumerate() {
            one.push(client.checked(&format!("{}?n=1", KINDS[k].0), "1").await?);
        }
    }
    Ok(())
}

fn p50(samples: &[Duration]) -> f64 {
    us(percentile(samples, 0.5))
}

/// A call's share of a one-call request of kind `k`: its p50 less a plain
/// request's.
fn over_plain(calls: &Calls, k: usize) -> f64 {
    p50(&calls.one[k]) - p50(&calls.plain)
}

/// A row's value of one side.
type Value = fn(&Calls) -> f64;

fn render_calls(args: &Args, ours: &Calls, theirs: Option<&Calls>) -> String {
    let build = build_kind(&args.bin_dir);
    let mut markdown = format!(
        "## 18. Service bindings and JS RPC (issue 56)\n\n\
         Warm calls, caller and callee on one thread: a caller Worker bound to a \
         `WorkerEntrypoint` of a second Worker (`SVC`), served by `isolane dev --workers \
         --threads 1` ({build} binaries) and by workerd with its service binding \
         (compatibility date 2025-06-01), every request alone on a keep-alive connection and \
         its answer checked (the sum of what its calls returned), {} rounds, the sides in \
         turn. *Per call*: the median of 9 requests making {} calls in a loop (`await \
         env.SVC.add(i, 1)`; `env.SVC.fetch()` and its body read; the callee calling back \
         `(i) => i + 1`, passed by the caller in one RPC call) less that of 9 making 1, \
         over {}, median over rounds. *Per request*: the p50 of {} requests making one call \
         less that of {} plain requests to the caller. *CPU per call*: the server process's \
         CPU time over the per-call requests (with their own share), per call made (ticks \
         of 10 ms).\n\n",
        args.rounds,
        args.calls + 1,
        args.calls,
        args.requests * args.rounds,
        args.requests * args.rounds,
    );
    let mut table = Table::new(&[
        "what",
        ">isolane dev p50",
        ">workerd p50",
        ">isolane CPU/call",
        ">workerd CPU/call",
        "goal",
        "result",
    ]);
    let peer = |f: Value| theirs.map_or(f64::NAN, f);
    let rows: [(&str, Value, Option<Value>, &str); 6] = [
        ("plain request to the caller", |c| p50(&c.plain), None, ""),
        (
            "RPC round trip, per call (loop)",
            |c| median(&c.per_call_us[RPC]),
            Some(|c| median(&c.cpu_us[RPC])),
            "≤ workerd's, < 20 µs",
        ),
        (
            "RPC round trip, per request less a plain one",
            |c| over_plain(c, RPC),
            None,
            "≤ workerd's, < 20 µs",
        ),
        (
            "`env.SVC.fetch` round trip, per call (loop)",
            |c| median(&c.per_call_us[FETCH]),
            Some(|c| median(&c.cpu_us[FETCH])),
            "≤ workerd's",
        ),
        (
            "`env.SVC.fetch` round trip, per request less a plain one",
            |c| over_plain(c, FETCH),
            None,
            "≤ workerd's",
        ),
        (
            "a callback: the callee calls a function the caller passed, per call",
            |c| median(&c.per_call_us[CALLBACK]),
            Some(|c| median(&c.cpu_us[CALLBACK])),
            "",
        ),
    ];
    for (what, value, cpu, goal) in rows {
        let (a, b) = (value(ours), peer(value));
        table.row(vec![
            what.to_owned(),
            fmt_us(a),
            fmt_us(b),
            cpu.map_or_else(|| "—".to_owned(), |f| fmt_us(f(ours))),
            cpu.map_or_else(|| "—".to_owned(), |f| fmt_us(peer(f))),
            goal.to_owned(),
            if goal.is_empty() {
                String::new()
            } else {
                verdict(call_met(a, b, goal.contains("20 µs")))
            },
        ]);
    }
    markdown.push_str(&table.render());
    markdown.push('\n');
    markdown
}

/// Met: `ours` ≤ workerd's (`theirs`, NaN without a peer: not met), and
/// under 20 µs when `under_20` asks.
fn call_met(ours: f64, theirs: f64, under_20: bool) -> bool {
    ours <= theirs && (!under_20 || ours < 20.0)
}

fn call_targets(ours: &Calls, theirs: Option<&Calls>) -> Vec<Target> {
    let peer = |f: Value| theirs.map_or(f64::NAN, f);
    let rpc: Value = |c| median(&c.per_call_us[RPC]);
    let fetch: Value = |c| median(&c.per_call_us[FETCH]);
    let rpc_request: Value = |c| over_plain(c, RPC);
    let fetch_request: Value = |c| over_plain(c, FETCH);
    let measured = |per_call: Value, per_request: Value| {
        format!(
            "{} per call (workerd {}); per request less a plain one {} (workerd {})",
            fmt_us(per_call(ours)),
            fmt_us(peer(per_call)),
            fmt_us(per_request(ours)),
            fmt_us(peer(per_request)),
        )
    };
    vec![
        Target::new(
            "warm RPC round trip, caller and callee on one thread: ≤ workerd's p50 and < 20 µs \
             (issue 56)",
            measured(rpc, rpc_request),
            call_met(rpc(ours), peer(rpc), true),
        ),
        Target::new(
            "warm `env.SVC.fetch` round trip: ≤ workerd's p50 (issue 56)",
            measured(fetch, fetch_request),
            call_met(fetch(ours), peer(fetch), false),
        ),
    ]
}

/// The cluster: the single Worker by its route and the gateway chain,
/// under wrk in turns.
async fn chain(args: &Args, work: &Path) -> anyhow::Result<(String, Target)> {
    let dir = work.join("services-cluster");
    let bins = ClusterBinaries::in_dir(&args.bin_dir)?;
    let script = |code: &str| format!("{WORK}{code}");
    // `import` first: the module's statements after it.
    let entrypoint = |code: &str| match code.split_once('\n') {
        Some((import, rest)) => format!("{import}\n{WORK}{rest}"),
        None => script(code),
    };
    let single = inline_worker("single", &script(SINGLE), &[SINGLE_HOST]);
    let flags = cluster::Flags::default();
    let mut cluster = cluster::start_worker(&bins, &dir, &single, SINGLE_HOST, &flags, &[]).await?;
    cluster.router.name = "single Worker";
    let client = cluster.control_plane.client();
    let mut gateway = inline_worker("gateway", &script(GATEWAY), &[GATEWAY_HOST]);
    gateway.spec.bindings = vec![
        Binding::service("AUTH", "auth", None),
        Binding::service("DATA", "data", None),
    ];
    for worker in [
        inline_worker("auth", &entrypoint(AUTH), &[]),
        inline_worker("data", &script(DATA), &[]),
        gateway,
    ] {
        apply(&client, NAMESPACE, &worker).await;
    }
    for name in ["auth", "data", "gateway"] {
        wait_ready(&client, NAMESPACE, name, Duration::from_secs(60)).await;
    }
    let through = Server {
        name: "gateway → auth (RPC) → data (fetch)",
        addr: cluster.router.addr,
        host: Some(GATEWAY_HOST.into()),
        process: None,
        // Its CPU: the router's and the node's.
        helpers: servers::pids(&[&cluster.router]),
    };
    through.wait_ok(Duration::from_secs(60)).await?;
    let expected = r#"{"user":42,"items":[1,2,3]}"#;
    for server in [&cluster.router, &through] {
        Client::connect(server)
            .await?
            .checked("/", expected)
            .await?;
    }
    let plan = warm::Plan {
        connections: args.connections.clone(),
        rounds: args.rounds,
        duration: Duration::from_secs(args.secs),
        warmup: Duration::from_secs(1),
        post_bytes: 0,
        load_cpus: None,
    };
    let measured = warm::measure(&[&cluster.router, &through], &plan).await?;
    let mut markdown = render_chain(args, &measured);
    let mut target = chain_target(&measured);
    if !errors_free(&measured) {
        // What wrk counted as errors: the same load again, answers read.
        let most = args.connections.iter().copied().max().unwrap_or(16);
        for server in [&cluster.router, &through] {
            if let Some(failure) = first_failure(server, most).await? {
                let line = format!("{}: a failed request, {failure}", server.name);
                markdown.push_str(&format!("{line}\n\n"));
                target.measured.push_str(&format!(" ({line})"));
            }
        }
    }
    Ok((markdown, target))
}

/// `connections` clients sending 20 requests each at once: the first
/// request that did not answer 200 with the expected body, as the client
/// saw it.
async fn first_failure(server: &Server, connections: usize) -> anyhow::Result<Option<String>> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let mut client = Client::connect(server).await?;
        tasks.spawn(async move {
            for _ in 0..20 {
                if let Err(error) = client.checked("/", EXPECTED_ANSWER).await {
                    return Some(format!("{error:#}"));
                }
            }
            None
        });
    }
    let mut first = None;
    while let Some(done) = tasks.join_next().await {
        first = first.or(done?);
    }
    Ok(first)
}

/// No request of the chain rows failed.
fn errors_free(measured: &Measured) -> bool {
    (0..measured.connections.len())
        .flat_map(|ci| [0, 1].map(|si| measured.summary(si, ci).errors))
        .sum::<u64>()
        == 0
}

/// The chain's target: ≥ 0.9× the single Worker at every concurrency, and
/// no request of either failed.
fn chain_target(measured: &Measured) -> Target {
    let mut target = measured.ratio_target(
        "gateway → auth (RPC) → data (`fetch`) through router + node ≥ 0.9× a single Worker \
         doing the same work, req/s (issue 56)",
        1,
        0,
        0.9,
    );
    let errors: u64 = (0..measured.connections.len())
        .flat_map(|ci| [0, 1].map(|si| measured.summary(si, ci).errors))
        .sum();
    if errors > 0 {
        target.met = false;
        target
            .measured
            .push_str(&format!("; {errors} requests failed"));
    }
    target
}

fn render_chain(args: &Args, measured: &Measured) -> String {
    format!(
        "A chain through the cluster: Workers of namespace `bench` applied to a local \
         kube-apiserver, served by one `isolane-node` behind the `isolane-router` (the \
         binaries of `{}`, the cluster of section 2). The gateway (its own route) calls \
         `auth` by RPC (`await env.AUTH.check(token)`, a `WorkerEntrypoint`) and then \
         `data` by `env.DATA.fetch(…)` (neither has a route: three Workers in one request, \
         on the node's thread that took it); the single Worker runs the same functions in \
         its own code. Each checks its answer and answers 500 if it is wrong (counted in \
         `errors`); one answer of each was also checked by the bench. The work is small \
         on purpose: the rows compare what the two calls cost. wrk, {} rounds of {} s \
         per side per concurrency, the sides alternating. `CPU µs/req` is the router's \
         and the node's processes together over each row's runs, per request answered \
         (where the chain's time goes: three Workers' requests on the node).\n\n{}\n",
        args.bin_dir.display(),
        args.rounds,
        args.secs,
        measured.table(&[0])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_are_the_sums_the_caller_makes() {
        // `add(i, 1)` for i in 0..k.
        assert_eq!(rpc_sum(1), "1");
        assert_eq!(rpc_sum(3), "6");
        assert_eq!(rpc_sum(501), "125751");
        assert_eq!(fetch_sum(501), "501");
        assert_eq!(calls_made(500), 5019);
    }

    #[test]
    fn a_call_goal_needs_the_peer_and_the_bound() {
        assert!(call_met(15.0, 30.0, true));
        assert!(!call_met(25.0, 30.0, true));
        assert!(call_met(25.0, 30.0, false));
        assert!(!call_met(35.0, 30.0, false));
        // No workerd in the run: not met.
        assert!(!call_met(5.0, f64::NAN, true));
    }
}
