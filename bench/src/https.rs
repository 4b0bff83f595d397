//! HTTPS through the router against plain HTTP in the same run (issue 61):
//! a control plane, the operator, one node and the router (with
//! `--tls-listen-addr`) as processes, one Worker on `localhost` (a name wrk
//! can resolve and send as SNI) with a labelled TLS Secret of the tests'
//! CA. Each round runs wrk four ways, in turn: plain HTTP and HTTPS with
//! keep-alive, then each with `Connection: close` (a new connection, and
//! for HTTPS a full handshake, per request: wrk resumes no session).
//! Prints req/s per round, the router's own CPU time per request (its
//! process only, not the node's: the TLS work is the router's), the
//! medians and the HTTPS/plain ratios (medians of the rounds' ratios); the issue's goal is ≥ 0.8× plain
//! HTTP with keep-alive. Section 14 of the page; not a test: nothing is
//! asserted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use isolane_testenv::{Leaf, TestCa, free_port, wait_until};
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

pub async fn run(plan: &Plan, work: &Path) -> anyhow::Result<Section> {
    let bins = ClusterBinaries::in_dir(&plan.bin_dir)?;
    let https_port = free_port()?;
    let tls_addr = format!("127.0.0.1:{https_port}");
    let flags = cluster::Flags {
        router: &["--tls-listen-addr", &tls_addr],
        ..cluster::Flags::default()
    };
    let cluster = cluster::start_with(&bins, work, "hello", SCRIPT, HOST, &flags).await?;
    put_secret(&cluster.control_plane).await?;
    let https_url = format!("https://{HOST}:{https_port}/");
    wait_served(&https_url).await;
    let plain_url = format!("http://{}/", cluster.router.addr);
    let router = cluster
        .router
        .process
        .as_ref()
        .map(isolane_testenv::Process::pid);
    let router_cpu = || router.and_then(process_cpu_secs).unwrap_or(0.0);
    let mut measured: Measured = BTreeMap::new();
    for round in 1..=plan.rounds {
        for (way, https, close) in WAYS {
            let url = if https { &https_url } else { &plain_url };
            let before = router_cpu();
            let load = wrk_run(url, close, plan.connections, plan.secs).await?;
            let cpu_us = (router_cpu() - before) * 1e6 / load.requests.max(1) as f64;
            println!(
                "round {round}: {way}: {:.0} req/s, p50 {:.0} µs, p99 {:.0} µs, {} errors, router CPU {cpu_us:.0} µs/request",
                load.rps, load.p50_us, load.p99_us, load.errors
            );
            let entry = measured.entry(way).or_default();
            entry.0.push(load.rps);
            entry.1.push(cpu_us);
        }
    }
    Ok(report(&measured, plan))
}

/// Per way: req/s and router CPU µs per request, one of each per round.
type Measured = BTreeMap<&'static str, (Vec<f64>, Vec<f64>)>;

/// The section: medians per way and the HTTPS/HTTP ratios (medians of
/// the rounds' ratios, as every comparison here reports).
fn report(measured: &Measured, plan: &Plan) -> Section {
    let median = |way: &str| measured.get(way).map_or(0.0, |v| stats::median(&v.0));
    let cpu = |way: &str| measured.get(way).map_or(0.0, |v| stats::median(&v.1));
    let mut markdown = format!(
        "## 14. HTTPS at the router vs plain HTTP\n\n\
         One hello Worker through the router and one node (operator, node and router as processes, release builds), the router's HTTPS listener serving a labelled TLS Secret by SNI (`localhost`, an ECDSA P-256 certificate of a test CA). Each round runs wrk (one thread, {} connections, {} s) four ways in turn: plain HTTP and HTTPS with keep-alive, then each with `Connection: close`, a new connection (for HTTPS a full TLS 1.3 handshake, wrk resumes no session) per request. {} rounds; medians; the router's own CPU per request (its process only: the TLS work is the router's).\n\n",
        plan.connections, plan.secs, plan.rounds
    );
    let mut table = Table::new(&["way", "req/s", "router CPU/request"]);
    for (way, _, _) in WAYS {
        table.row(vec![
            way.to_owned(),
            stats::fmt_rate(median(way)),
            stats::fmt_us(cpu(way)),
        ]);
    }
    markdown.push_str(&table.render());
    let ratio = |a: &str, b: &str| {
        let (Some(a), Some(b)) = (measured.get(a), measured.get(b)) else {
            return 0.0;
        };
        let rounds: Vec<f64> =
            a.0.iter()
                .zip(&b.0)
                .map(|(a, b)| stats::ratio(*a, *b))
                .collect();
        stats::median(&rounds)
    };
    let keep_alive = ratio(WAYS[1].0, WAYS[0].0);
    let handshake = ratio(WAYS[3].0, WAYS[2].0);
    let _ = writeln!(
        markdown,
        "\nHTTPS ÷ HTTP: {} with keep-alive, {} with a new connection (and handshake) per request. The router's CPU per request, which a loaded machine moves far less than the rates: HTTPS ÷ HTTP {} with keep-alive, {} with a handshake per request.",
        stats::fmt_ratio(keep_alive),
        stats::fmt_ratio(handshake),
        stats::fmt_ratio(stats::ratio(cpu(WAYS[1].0), cpu(WAYS[0].0))),
        stats::fmt_ratio(stats::ratio(cpu(WAYS[3].0), cpu(WAYS[2].0))),
    );
    println!("{markdown}");
    let target = Target::new(
        "HTTPS with keep-alive through the router ≥ 0.8× plain HTTP's req/s (issue 61); a full handshake per request reported",
        format!(
            "{} with keep-alive; {} with a handshake per request",
            stats::fmt_ratio(keep_alive),
            stats::fmt_ratio(handshake)
        ),
        keep_alive >= 0.8,
    );
    Section {
        markdown,
        targets: vec![target],
    }
}

/// A labelled TLS Secret for [`HOST`] in the Worker's namespace.
async fn put_secret(cp: &isolane_testenv::ControlPlane) -> anyhow::Result<()> {
    let ca = TestCa::new("isolane-bench-https").context("a CA")?;
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
