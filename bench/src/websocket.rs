//! Comparison 9, WebSockets (issue 33): echo round trips at 1, 100 and
//! 1,000 sockets through `isolane dev`, router → node and workerd in the
//! same run, and memory per idle socket on a node.
//!
//! Each socket comes from a loopback address of its own (127.2.x.y), so
//! each is a client of its own to Isolane's per-client share; the Worker's
//! socket budget per thread is raised by its flag (`--websocket-max-sockets`)
//! past the counts measured. Round trips: every socket sends its messages
//! one at a time (text and binary of 64 bytes in turn), all sockets at
//! once; the percentiles pool every round trip of every round.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use futures::{SinkExt as _, StreamExt as _};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use crate::cluster::{self, ClusterBinaries};
use crate::report::{Section, Target};
use crate::servers::{self, Binaries, Server};
use crate::stats;

/// The echo Worker of docs/websockets.md; a plain GET gets 200 (the
/// servers' readiness probe).
pub const SCRIPT: &str = r#"export default {
  fetch(request) {
    if (request.headers.get('upgrade') !== 'websocket') return new Response('ok');
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => server.send(event.data));
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// Handshakes in flight at once (a handshake is a request: a node admits
/// 64 in flight per thread).
const HANDSHAKES: usize = 16;
/// How long one handshake or one echo may take before the run fails.
const ANSWER: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct Plan {
    /// Socket counts, each measured on every server.
    pub sockets: Vec<usize>,
    /// Messages per socket per round.
    pub messages: usize,
    /// Rounds (each visits every count and every server).
    pub rounds: usize,
}

type Socket = WebSocketStream<TcpStream>;

/// Socket `i`'s own loopback address.
fn address(i: usize) -> Ipv4Addr {
    let [_, _, high, low] = u32::try_from(i + 1).unwrap_or(0).to_be_bytes();
    Ipv4Addr::new(127, 2, high, low)
}

/// One socket to `server` from `from`.
async fn connect(server: &Server, from: Ipv4Addr) -> anyhow::Result<Socket> {
    let tcp = TcpSocket::new_v4()?;
    tcp.bind(SocketAddr::from((from, 0)))?;
    let tcp = tcp.connect(server.addr).await?;
    let host = server
        .host
        .clone()
        .unwrap_or_else(|| server.addr.to_string());
    let (socket, _) = tokio_tungstenite::client_async(format!("ws://{host}/"), tcp).await?;
    Ok(socket)
}

/// Opens `count` sockets to `server`, [`HANDSHAKES`] at a time.
pub async fn open(server: &Server, count: usize) -> anyhow::Result<Vec<Socket>> {
    let gate = Arc::new(Semaphore::new(HANDSHAKES));
    let opening = (0..count).map(|i| {
        let gate = Arc::clone(&gate);
        async move {
            let _permit = gate.acquire().await?;
            tokio::time::timeout(ANSWER, connect(server, address(i)))
                .await
                .context("a handshake timed out")?
                .with_context(|| format!("socket {i} to {}", server.name))
        }
    });
    futures::future::try_join_all(opening).await
}

/// Sends `messages` messages on `socket`, one at a time; the round trips.
async fn echo_one(mut socket: Socket, messages: usize) -> anyhow::Result<Vec<Duration>> {
    let mut trips = Vec::with_capacity(messages);
    for m in 0..messages {
        let sent = if m % 2 == 0 {
            Message::text("t".repeat(64))
        } else {
            Message::binary(Bytes::from(vec![b'b'; 64]))
        };
        let started = Instant::now();
        socket.send(sent.clone()).await?;
        loop {
            let answer = tokio::time::timeout(ANSWER, socket.next())
                .await
                .context("an echo timed out")?
                .context("the socket ended")??;
            match answer {
                Message::Ping(_) | Message::Pong(_) => continue,
                answer if answer == sent => break,
                other => anyhow::bail!("expected the echo, got {other:?}"),
            }
        }
        trips.push(started.elapsed());
    }
    let _ = socket.close(None).await;
    Ok(trips)
}

/// Every socket of `sockets` sends its messages at once; all round trips.
async fn echo(sockets: Vec<Socket>, messages: usize) -> anyhow::Result<Vec<Duration>> {
    let tasks: Vec<_> = sockets
        .into_iter()
        .map(|socket| tokio::spawn(echo_one(socket, messages)))
        .collect();
    let mut trips = Vec::new();
    for task in tasks {
        trips.extend(task.await??);
    }
    Ok(trips)
}

/// Round trips per (server, count), pooled over the rounds.
pub struct Measured {
    pub names: Vec<&'static str>,
    pub sockets: Vec<usize>,
    /// `[server][count]`.
    pub trips: Vec<Vec<Vec<Duration>>>,
}

/// Runs `plan` on every server, alternating servers within each count.
pub async fn measure(servers: &[&Server], plan: &Plan) -> anyhow::Result<Measured> {
    let mut trips = vec![vec![Vec::new(); plan.sockets.len()]; servers.len()];
    for round in 0..plan.rounds {
        for (ci, &count) in plan.sockets.iter().enumerate() {
            for (si, server) in servers.iter().enumerate() {
                let sockets = open(server, count).await?;
                let measured = echo(sockets, plan.messages).await?;
                eprintln!(
                    "websocket: round {round}, {count} sockets, {}: p99 {}",
                    server.name,
                    stats::fmt_us(stats::us(stats::percentile(&measured, 0.99)))
                );
                trips[si][ci].extend(measured);
            }
        }
    }
    Ok(Measured {
        names: servers.iter().map(|s| s.name).collect(),
        sockets: plan.sockets.clone(),
        trips,
    })
}

impl Measured {
    /// p50 and p99 of server `si` at count `ci`, in µs.
    pub fn p50_p99(&self, si: usize, ci: usize) -> (f64, f64) {
        let trips = &self.trips[si][ci];
        (
            stats::us(stats::percentile(trips, 0.5)),
            stats::us(stats::percentile(trips, 0.99)),
        )
    }

    /// The table: one row per count and server, p99 against `against`'s.
    pub fn table(&self, against: Option<usize>) -> String {
        let mut table = crate::report::Table::new(&[
            ">sockets",
            "server",
            ">round trips",
            ">p50",
            ">p99",
            ">p99 / workerd's",
        ]);
        for (ci, count) in self.sockets.iter().enumerate() {
            for (si, name) in self.names.iter().enumerate() {
                let (p50, p99) = self.p50_p99(si, ci);
                let ratio = against.map_or_else(String::new, |w| {
                    stats::fmt_ratio(stats::ratio(p99, self.p50_p99(w, ci).1))
                });
                table.row(vec![
                    count.to_string(),
                    (*name).to_owned(),
                    self.trips[si][ci].len().to_string(),
                    stats::fmt_us(p50),
                    stats::fmt_us(p99),
                    ratio,
                ]);
            }
        }
        table.render()
    }
}

/// Resident memory of process `pid`, in bytes (Linux).
pub fn rss_bytes(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmRSS")?;
    Ok(kib * 1024.0)
}

/// Memory of idle sockets: the node's and the router's RSS before and
/// after `count` sockets open and idle.
pub struct IdleMemory {
    pub count: usize,
    pub node_before: f64,
    pub node_after: f64,
    pub router_before: f64,
    pub router_after: f64,
}

impl IdleMemory {
    /// The node's bytes per idle socket.
    pub fn node_per_socket(&self) -> f64 {
        (self.node_after - self.node_before) / self.count.max(1) as f64
    }

    pub fn router_per_socket(&self) -> f64 {
        (self.router_after - self.router_before) / self.count.max(1) as f64
    }
}

/// Opens `count` idle sockets through `router` to the node `node_pid`,
/// reads both processes' RSS, then closes them.
pub async fn idle_memory(
    router: &Server,
    node_pid: u32,
    count: usize,
) -> anyhow::Result<IdleMemory> {
    let router_pid = router
        .process
        .as_ref()
        .map(isolane_testenv::Process::pid)
        .context("the router's process")?;
    let (node_before, router_before) = (rss_bytes(node_pid)?, rss_bytes(router_pid)?);
    let sockets = open(router, count).await?;
    let measured = IdleMemory {
        count: sockets.len(),
        node_before,
        node_after: rss_bytes(node_pid)?,
        router_before,
        router_after: rss_bytes(router_pid)?,
    };
    drop(sockets);
    Ok(measured)
}

/// What the section runs on.
pub struct Setup<'a> {
    pub bins: &'a Binaries,
    pub cluster: &'a ClusterBinaries,
    pub work: &'a std::path::Path,
    pub plan: &'a Plan,
    /// Idle sockets opened on the node for the memory measure.
    pub idle: usize,
}

/// Starts the three servers, measures, and writes the section.
pub async fn section(setup: &Setup<'_>) -> anyhow::Result<Section> {
    let script = setup.work.join("websocket-echo.js");
    std::fs::write(&script, SCRIPT)?;
    let budget = (setup
        .idle
        .max(*setup.plan.sockets.iter().max().unwrap_or(&1))
        + 16)
        .to_string();
    let node_args = [
        "--websocket-max-sockets",
        &budget,
        "--websocket-idle-secs",
        "600",
    ];
    let cluster = cluster::start_with(
        setup.cluster,
        setup.work,
        "echo",
        SCRIPT,
        "echo.bench.test",
        &cluster::Flags {
            node: &node_args,
            operator: &[],
            router: &[],
        },
    )
    .await?;
    let dev = servers::isolane_dev(setup.bins, &script, setup.work, &node_args);
    dev.wait_ok(Duration::from_secs(60)).await?;
    let config = servers::workerd_config(&script, &setup.work.join("workerd-websocket"))?;
    let workerd = servers::workerd(setup.bins, &config, setup.work).ok();
    if let Some(workerd) = &workerd {
        workerd.wait_ok(Duration::from_secs(60)).await?;
    }
    let mut sides = vec![&dev, &cluster.router];
    sides.extend(workerd.as_ref());
    let measured = measure(&sides, setup.plan).await?;
    let memory = idle_memory(&cluster.router, cluster.node.pid(), setup.idle).await?;
    let against = workerd.is_some().then_some(2);
    let mut section = write_up(setup.plan, &measured, against, &memory);
    section.markdown.push_str(&format!(
        "\nBinaries: `{}` and `{}`.\n",
        setup.bins.isolane.display(),
        setup.cluster.node.display()
    ));
    Ok(section)
}

/// The section's text and targets.
fn write_up(
    plan: &Plan,
    measured: &Measured,
    workerd: Option<usize>,
    memory: &IdleMemory,
) -> Section {
    let mut markdown = format!(
        "## 9. WebSockets: echo round trips and idle sockets\n\n\
         The echo Worker of docs/websockets.md under `isolane dev`, router → node (processes, \
         mutual TLS, one node) and workerd (the npm package's binary), alternating, {} rounds. \
         At each count every socket (each from a loopback address of its own) sends {} messages \
         one at a time, text and binary of 64 bytes in turn, all sockets at once; p50 and p99 \
         of every round trip. Client and servers share the 2 cores.\n\n",
        plan.rounds, plan.messages
    );
    markdown.push_str(&measured.table(workerd));
    let per_socket = memory.node_per_socket();
    let extrapolated = per_socket * 10_000.0;
    markdown.push_str(&format!(
        "\nIdle sockets: {} opened through the router to the node and left idle. The node's \
         RSS {} → {}: {:.1} KiB per socket, the Worker's share included; 10,000 would take \
         {} on a node. The router's: {} → {}, {:.1} KiB per socket.\n",
        memory.count,
        stats::fmt_mib(memory.node_before),
        stats::fmt_mib(memory.node_after),
        per_socket / 1024.0,
        stats::fmt_mib(extrapolated),
        stats::fmt_mib(memory.router_before),
        stats::fmt_mib(memory.router_after),
        memory.router_per_socket() / 1024.0,
    ));
    let mut targets = vec![Target::new(
        "10,000 idle WebSockets per node, the Worker's share included, within 1 GiB",
        format!(
            "{} for 10,000 ({:.1} KiB each, from {})",
            stats::fmt_mib(extrapolated),
            per_socket / 1024.0,
            memory.count
        ),
        extrapolated <= 1024.0 * 1024.0 * 1024.0,
    )];
    if let (Some(w), Some(ci)) = (workerd, measured.sockets.len().checked_sub(1)) {
        let (ours, theirs) = (measured.p50_p99(1, ci).1, measured.p50_p99(w, ci).1);
        targets.push(Target::new(
            format!(
                "WebSocket echo p99 through router + node ≤ workerd's at {} sockets",
                measured.sockets[ci]
            ),
            format!(
                "{} vs {} ({})",
                stats::fmt_us(ours),
                stats::fmt_us(theirs),
                stats::fmt_ratio(stats::ratio(ours, theirs))
            ),
            ours <= theirs,
        ));
    }
    Section { markdown, targets }
}
