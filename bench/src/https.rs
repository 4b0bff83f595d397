//! HTTPS through the router against plain HTTP in the same run (issue 61):
//! a control plane, the operator, one node and the router (with
//! `--tls-listen-addr`) as processes, one Worker on `localhost` (a name wrk
//! can resolve and send as SNI) with a labelled TLS Secret of the tests'
//! CA. Each round runs wrk four ways, in turn: plain HTTP and HTTPS with
//! keep-alive, then each with `Connection: close` (a new connection, and
//! for HTTPS a full handshake, per request: wrk resumes no session).
//! Prints req/s per round, the router's own CPU time per request (its
//! process only, not the node's: the TLS work is the router's), the
//! medians and the HTTPS/plain ratios (medians of the rounds' ratios); the
//! issue's goal is ≥ 0.8× plain HTTP with keep-alive. With `--workerd`,
//! workerd serves the same Worker over plain HTTP and over its own HTTPS
//! (one process, two sockets), measured the same four ways in the same
//! rounds: each terminates TLS its own way, so the fair comparison is
//! what HTTPS costs each against its own plain HTTP. Section 14 of the
//! page; not a test: nothing is asserted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_testenv::{Leaf, Process, TestCa, free_port, wait_until, workerd};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use std::fmt::Write as _;

use crate::cluster::{self, ClusterBinaries, NAMESPACE};
use crate::report::{Section, Table, Target};
use crate::servers::process_cpu_secs;
use crate::stats;
use crate::wrk::{self, Load, LoadSpec};

/// The Worker's host: `localhost` resolves without DNS, and wrk sends the
/// URL's host as SNI.
const HOST: &str = "localhost";
const SCRIPT: &str = "export default { fetch() { return new Response('hello'); } };";

/// What to run and how hard.
#[derive(Debug)]
pub struct Plan {
    /// Folder with `isolane-operator`, `isolane-node`, `isolane-router`.
    pub bin_dir: PathBuf,
    /// workerd's binary: the same Worker over its own HTTPS, beside.
    pub workerd: Option<PathBuf>,
    pub secs: u64,
    pub rounds: usize,
    pub connections: usize,
}

/// The four ways, in the order each round runs them.
const WAYS: [(&str, bool, bool); 4] = [
    ("HTTP keep-alive", false, false),
    ("HTTPS keep-alive", true, false),
    ("HTTP new connection per request", false, true),
    ("HTTPS full handshake per request", true, true),
];

/// One server measured the four ways: its plain and HTTPS URLs, and the
/// process whose CPU is counted (the one that does the TLS work).
struct Endpoint {
    name: &'static str,
    plain: String,
    https: String,
    pid: Option<u32>,
}

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    let bins = ClusterBinaries::in_dir(&plan.bin_dir)?;
    let https_port = free_port()?;
    let tls_addr = format!("127.0.0.1:{https_port}");
    let flags = cluster::Flags {
        router: &["--tls-listen-addr", &tls_addr],
        ..cluster::Flags::default()
    };
    let cluster = cluster::start_with(&bins, work, "hello", SCRIPT, HOST, &flags).await?;
    let ca = TestCa::new("isolane-bench-https").context("a CA")?;
    put_secret(&cluster.control_plane, &ca).await?;
    let router = Endpoint {
        name: ROUTER,
        plain: format!("http://{}/", cluster.router.addr),
        https: format!("https://{HOST}:{https_port}/"),
        pid: cluster.router.process.as_ref().map(Process::pid),
    };
    wait_served(&router.https).await;
    let mut endpoints = vec![router];
    let _workerd = match &plan.workerd {
        Some(bin) => {
            let (process, endpoint) = start_workerd(bin, &ca, &work.join("workerd-https"))?;
            wait_served(&endpoint.plain).await;
            wait_served(&endpoint.https).await;
            endpoints.push(endpoint);
            Some(process)
        }
        None => None,
    };
    let mut measured: Measured = BTreeMap::new();
    for round in 1..=plan.rounds {
        for endpoint in &endpoints {
            measure_round(plan, endpoint, round, &mut measured).await?;
        }
    }
    Ok(report(&measured, plan))
}

/// One round of the four ways against `endpoint`, into `measured`.
async fn measure_round(
    plan: &Plan,
    endpoint: &Endpoint,
    round: usize,
    measured: &mut Measured,
) -> anyhow::Result<()> {
    let cpu = || endpoint.pid.and_then(process_cpu_secs).unwrap_or(0.0);
    for (way, https, close) in WAYS {
        let url = if https {
            &endpoint.https
        } else {
            &endpoint.plain
        };
        let before = cpu();
        let load = wrk_run(url, close, plan.connections, plan.secs).await?;
        let cpu_us = (cpu() - before) * 1e6 / load.requests.max(1) as f64;
        println!(
            "round {round}: {}: {way}: {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs, {} errors, CPU {cpu_us:.0} µs/request",
            endpoint.name, load.rps, load.p50_us, load.p99_us, load.errors
        );
        let entry = measured.entry((endpoint.name, way)).or_default();
        entry.0.push(load.rps);
        entry.1.push(cpu_us);
    }
    Ok(())
}

/// workerd serving the same Worker on two sockets of one process, plain
/// HTTP and HTTPS with its own TLS (a certificate of `ca` for [`HOST`]).
fn start_workerd(bin: &Path, ca: &TestCa, dir: &Path) -> anyhow::Result<(Process, Endpoint)> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("worker.js"), SCRIPT)?;
    let leaf = ca
        .issue(Leaf::server("workerd", &[HOST]))
        .context("a certificate")?;
    let (plain, https) = (free_port()?, free_port()?);
    let service = |name: &str, port: u16| {
        workerd::Service::module(
            name,
            "worker.js",
            "2024-09-23",
            ([127, 0, 0, 1], port).into(),
        )
    };
    let tls = workerd::Service {
        tls: Some(workerd::Keypair {
            certificate_chain: leaf.cert_pem,
            private_key: leaf.key_pem,
        }),
        ..service("tls", https)
    };
    let config = workerd::write_config(dir, "config.capnp", &[service("plain", plain), tls])?;
    let process = workerd::serve(bin, &config, &[], &dir.join("workerd.log"))?;
    let endpoint = Endpoint {
        name: WORKERD,
        plain: format!("http://127.0.0.1:{plain}/"),
        https: format!("https://{HOST}:{https}/"),
        pid: Some(process.pid()),
    };
    Ok((process, endpoint))
}

/// Per server and way: req/s and CPU µs per request, one of each per round.
type Measured = BTreeMap<(&'static str, &'static str), (Vec<f64>, Vec<f64>)>;

const ROUTER: &str = "router";
const WORKERD: &str = "workerd";

/// The median of the rounds' `b ÷ a` ratios of req/s, for one server.
fn ratio(measured: &Measured, server: &'static str, a: &'static str, b: &'static str) -> f64 {
    let (Some(a), Some(b)) = (measured.get(&(server, a)), measured.get(&(server, b))) else {
        return 0.0;
    };
    let rounds: Vec<f64> = (a.0.iter().zip(&b.0))
        .map(|(a, b)| stats::ratio(*b, *a))
        .collect();
    stats::median(&rounds)
}

/// The section: medians per server and way, and the HTTPS/HTTP ratios
/// (medians of the rounds' ratios, as every comparison here reports).
fn report(measured: &Measured, plan: &Plan) -> Section {
    let median = |server, way| {
        measured
            .get(&(server, way))
            .map_or(0.0, |v| stats::median(&v.0))
    };
    let cpu = |server, way| {
        measured
            .get(&(server, way))
            .map_or(0.0, |v| stats::median(&v.1))
    };
    let with_workerd = measured.keys().any(|(server, _)| *server == WORKERD);
    let mut markdown = format!(
        "## 14. HTTPS at the router vs plain HTTP\n\n\
         One hello Worker through the router and one node (operator, node and router as processes, release builds), the router's HTTPS listener serving a labelled TLS Secret by SNI (`localhost`, an ECDSA P-256 certificate of a test CA). Each round runs wrk (one thread, {} connections, {} s) four ways in turn: plain HTTP and HTTPS with keep-alive, then each with `Connection: close`, a new connection (for HTTPS a full TLS 1.3 handshake, wrk resumes no session) per request. {} rounds; medians; the router's own CPU per request (its process only: the TLS work is the router's).{}\n\n",
        plan.connections,
        plan.secs,
        plan.rounds,
        if with_workerd {
            " Beside it, in the same rounds, workerd serving the same Worker from one process on two sockets, plain HTTP and HTTPS with its own TLS (a certificate of the same CA): each terminates TLS its own way, so what compares fairly is what HTTPS costs each against its own plain HTTP, and the CPU per request of the process that does the TLS work."
        } else {
            ""
        }
    );
    let mut columns = vec!["way", "router req/s", "router CPU/request"];
    if with_workerd {
        columns.extend(["workerd req/s", "workerd CPU/request"]);
    }
    let mut table = Table::new(&columns);
    for (way, _, _) in WAYS {
        let mut row = vec![
            way.to_owned(),
            stats::fmt_rate(median(ROUTER, way)),
            stats::fmt_us(cpu(ROUTER, way)),
        ];
        if with_workerd {
            row.extend([
                stats::fmt_rate(median(WORKERD, way)),
                stats::fmt_us(cpu(WORKERD, way)),
            ]);
        }
        table.row(row);
    }
    markdown.push_str(&table.render());
    let keep_alive = ratio(measured, ROUTER, WAYS[0].0, WAYS[1].0);
    let handshake = ratio(measured, ROUTER, WAYS[2].0, WAYS[3].0);
    let _ = writeln!(
        markdown,
        "\nHTTPS ÷ HTTP at the router: {} with keep-alive, {} with a new connection (and handshake) per request. The router's CPU per request, which a loaded machine moves far less than the rates: HTTPS ÷ HTTP {} with keep-alive, {} with a handshake per request.",
        stats::fmt_ratio(keep_alive),
        stats::fmt_ratio(handshake),
        stats::fmt_ratio(stats::ratio(cpu(ROUTER, WAYS[1].0), cpu(ROUTER, WAYS[0].0))),
        stats::fmt_ratio(stats::ratio(cpu(ROUTER, WAYS[3].0), cpu(ROUTER, WAYS[2].0))),
    );
    if with_workerd {
        let _ = writeln!(
            markdown,
            "\nHTTPS ÷ HTTP at workerd: {} with keep-alive, {} with a handshake per request; its CPU per request HTTPS ÷ HTTP {} and {}.",
            stats::fmt_ratio(ratio(measured, WORKERD, WAYS[0].0, WAYS[1].0)),
            stats::fmt_ratio(ratio(measured, WORKERD, WAYS[2].0, WAYS[3].0)),
            stats::fmt_ratio(stats::ratio(
                cpu(WORKERD, WAYS[1].0),
                cpu(WORKERD, WAYS[0].0)
            )),
            stats::fmt_ratio(stats::ratio(
                cpu(WORKERD, WAYS[3].0),
                cpu(WORKERD, WAYS[2].0)
            )),
        );
    }
    println!("{markdown}");
    Section {
        markdown,
        targets: vec![target(keep_alive, handshake)],
    }
}

/// The issue's goal, on the router's keep-alive ratio.
fn target(keep_alive: f64, handshake: f64) -> Target {
    Target::new(
        "HTTPS with keep-alive through the router ≥ 0.8× plain HTTP's req/s (issue 61); a full handshake per request reported",
        format!(
            "{} with keep-alive; {} with a handshake per request",
            stats::fmt_ratio(keep_alive),
            stats::fmt_ratio(handshake)
        ),
        keep_alive >= 0.8,
    )
}

/// A labelled TLS Secret for [`HOST`] in the Worker's namespace, of `ca`.
async fn put_secret(cp: &isolane_testenv::ControlPlane, ca: &TestCa) -> anyhow::Result<()> {
    let cert = ca
        .issue(Leaf::server("bench", &[HOST]))
        .context("a certificate")?;
    let data = [("tls.crt", cert.cert_pem), ("tls.key", cert.key_pem)]
        .into_iter()
        .map(|(key, pem)| (key.to_owned(), ByteString(pem.into_bytes())))
        .collect();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("localhost-tls".to_owned()),
            labels: Some([("isolane.dev/tls".to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(cp.client(), NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the TLS Secret")?;
    Ok(())
}

/// Waits until `url` answers `hello` (curl, not verifying the test CA).
async fn wait_served(url: &str) {
    wait_until(
        "the Worker to be served over HTTPS",
        Duration::from_secs(60),
        || async {
            let output = tokio::process::Command::new("curl")
                .args(["-sk", "--max-time", "5", url])
                .output()
                .await
                .ok()?;
            (output.stdout == b"hello").then_some(())
        },
    )
    .await;
}

/// wrk on `url` (one thread), each request on a new connection when
/// `close`.
async fn wrk_run(url: &str, close: bool, connections: usize, secs: u64) -> anyhow::Result<Load> {
    let spec = LoadSpec {
        url: url.to_owned(),
        host: Some(HOST.to_owned()),
        connections,
        duration: Duration::from_secs(secs),
        post_bytes: 0,
        cpus: None,
        headers: close
            .then(|| "Connection: close".to_owned())
            .into_iter()
            .collect(),
    };
    wrk::run(&spec).await
}
