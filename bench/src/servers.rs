//! The servers under load, as processes: `isolane dev` and workerd serving
//! the same script, and a probe that waits for their first answer.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use isolane_testenv::{Process, free_port, workerd, wrangler};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The binaries a comparison runs.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `target/release/isolane`.
    pub isolane: PathBuf,
    /// workerd's native binary (from the npm package `workerd`).
    pub workerd: Option<PathBuf>,
}

/// A server process listening on a local port.
#[derive(Debug)]
pub struct Server {
    pub name: &'static str,
    pub addr: SocketAddr,
    /// Sent as `Host:` (the router routes by host).
    pub host: Option<String>,
    pub process: Option<Process>,
    /// Other processes serving its requests (a router's node), whose CPU
    /// time counts with its own.
    pub helpers: Vec<u32>,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// CPU time its process and helpers have used so far, in seconds;
    /// `None` with neither, or once one has gone. (A server without a
    /// process of its own, such as another host through a router, counts
    /// its helpers': the router's and the node's.)
    pub fn cpu_secs(&self) -> Option<f64> {
        let own = self.process.as_ref().map(Process::pid);
        if own.is_none() && self.helpers.is_empty() {
            return None;
        }
        own.into_iter()
            .chain(self.helpers.iter().copied())
            .map(process_cpu_secs)
            .sum()
    }

    /// Waits until the server answers 200, up to `timeout`.
    pub async fn wait_ok(&self, timeout: Duration) -> anyhow::Result<Duration> {
        wait_ok(self.addr, self.host.as_deref(), timeout)
            .await
            .with_context(|| format!("{} on {} did not answer 200", self.name, self.addr))
    }
}

/// The pids of `servers` and their helpers.
pub fn pids(servers: &[&Server]) -> Vec<u32> {
    servers
        .iter()
        .flat_map(|s| {
            s.process
                .iter()
                .map(Process::pid)
                .chain(s.helpers.iter().copied())
        })
        .collect()
}

/// CPU time process `pid` has used so far, all threads (user + system,
/// from `/proc/PID/stat`), in seconds.
pub fn process_cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis: utime and stime are
    // the 12th and 13th (14th and 15th of the line).
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some((user + system) / CLOCK_TICKS)
}

/// CPU time every process of process group `pgid` has used so far (its
/// live members, from `/proc`), in seconds: a server that runs as several
/// processes, such as wrangler's Node.js and its workerd.
pub fn group_cpu_secs(pgid: u32) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    let in_group = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The process group is the third field after the command.
        let group: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(2)?
            .parse()
            .ok()?;
        (group == pgid).then_some(())
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| in_group(*pid).is_some())
        .filter_map(process_cpu_secs)
        .sum()
}

/// `/proc`'s clock ticks per second (`USER_HZ`, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

/// Starts `isolane dev <script>` on a free port (logs in `dir`).
pub fn isolane_dev(bin: &Binaries, script: &Path, dir: &Path, extra: &[&str]) -> Server {
    isolane_dev_of(bin, &[&script.display().to_string()], dir, extra)
}

/// Starts `isolane dev --workers <folder>` on a free port (logs in `dir`).
pub fn isolane_dev_workers(bin: &Binaries, folder: &Path, dir: &Path, extra: &[&str]) -> Server {
    isolane_dev_of(
        bin,
        &["--workers", &folder.display().to_string()],
        dir,
        extra,
    )
}

/// `isolane dev <what> --port <free> <extra>`.
fn isolane_dev_of(bin: &Binaries, what: &[&str], dir: &Path, extra: &[&str]) -> Server {
    let port = free_port().expect("a free local port");
    let mut args: Vec<String> = std::iter::once("dev")
        .chain(what.iter().copied())
        .map(str::to_owned)
        .collect();
    args.extend(["--port".into(), port.to_string()]);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let log = dir.join(format!("isolane-dev-{port}.log"));
    let envs: [(&str, &std::ffi::OsStr); 1] = [("ISOLANE_LOG", "warn".as_ref())];
    let process = Process::spawn("isolane dev", &bin.isolane, &args, &envs, &log)
        .expect("isolane dev starts");
    Server {
        name: "isolane dev",
        addr: ([127, 0, 0, 1], port).into(),
        host: None,
        process: Some(process),
        helpers: Vec::new(),
    }
}

/// Writes a workerd config serving `script` as an ES module on an HTTP
/// socket named `main` (moved to a free port by [`workerd`]), returning the
/// config path.
pub fn workerd_config(script: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::copy(script, dir.join("worker.js"))
        .with_context(|| format!("copying {}", script.display()))?;
    let address = ([127, 0, 0, 1], 8080).into();
    let service = workerd::Service::module("main", "worker.js", "2024-09-23", address);
    Ok(workerd::write_config(dir, "config.capnp", &[service])?)
}

/// Starts `workerd serve` with `config` on a free port.
pub fn workerd(bin: &Binaries, config: &Path, dir: &Path) -> anyhow::Result<Server> {
    workerd_with(bin, config, dir, &[])
}

/// [`workerd`], with `flags` added (`--experimental`).
pub fn workerd_with(
    bin: &Binaries,
    config: &Path,
    dir: &Path,
    flags: &[&str],
) -> anyhow::Result<Server> {
    let Some(workerd) = &bin.workerd else {
        bail!("no workerd binary (npm install workerd)");
    };
    let port = free_port()?;
    let mut extra: Vec<std::ffi::OsString> = vec![
        "--socket-addr".into(),
        format!("main=127.0.0.1:{port}").into(),
    ];
    extra.extend(flags.iter().map(Into::into));
    let log = dir.join(format!("workerd-{port}.log"));
    let process = workerd::serve(workerd, config, &extra, &log).context("starting workerd")?;
    Ok(Server {
        name: "workerd",
        addr: ([127, 0, 0, 1], port).into(),
        host: None,
        process: Some(process),
        helpers: Vec::new(),
    })
}

/// workerd run the way a one-thread server uses every core: `count`
/// `workerd serve` processes, each on a listening socket of its own bound
/// to one shared port (`SO_REUSEPORT`, so the kernel spreads connections
/// over them), each given its socket as fd 0 (`--socket-fd main=0`).
#[derive(Debug)]
pub struct WorkerdGroup {
    /// The first process, with the others' pids as helpers (their CPU time
    /// counts with its own).
    pub server: Server,
    /// The other processes, which stop with this value.
    others: Vec<Process>,
}

/// Starts [`WorkerdGroup`] of `count` processes serving `config`.
pub fn workerd_group(
    bin: &Binaries,
    config: &Path,
    dir: &Path,
    count: usize,
) -> anyhow::Result<WorkerdGroup> {
    let Some(workerd) = &bin.workerd else {
        bail!("no workerd binary (npm install workerd)");
    };
    let port = free_port()?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut processes = Vec::with_capacity(count);
    for index in 0..count {
        let socket = reuse_port_listener(addr)?;
        let args: [&std::ffi::OsStr; 4] = [
            "serve".as_ref(),
            config.as_os_str(),
            "--socket-fd".as_ref(),
            "main=0".as_ref(),
        ];
        let log = dir.join(format!("workerd-{port}-{index}.log"));
        let stdin = std::process::Stdio::from(std::os::fd::OwnedFd::from(socket));
        let process = Process::spawn_with_stdin("workerd", workerd, args, &[], &log, None, stdin)
            .context("starting workerd")?;
        processes.push(process);
    }
    let mut processes = processes.into_iter();
    let first = processes.next().context("a group of no workerd")?;
    let others: Vec<Process> = processes.collect();
    Ok(WorkerdGroup {
        server: Server {
            name: "workerd × cores",
            addr,
            host: None,
            process: Some(first),
            helpers: others.iter().map(Process::pid).collect(),
        },
        others,
    })
}

impl WorkerdGroup {
    /// How many processes serve.
    pub fn processes(&self) -> usize {
        1 + self.others.len()
    }
}

/// A listening TCP socket on `addr` that other sockets may bind too
/// (`SO_REUSEPORT`).
fn reuse_port_listener(addr: SocketAddr) -> anyhow::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket
        .bind(&addr.into())
        .with_context(|| format!("binding {addr}"))?;
    socket.listen(1024)?;
    Ok(socket)
}

/// Polls `GET /` every millisecond until it answers 200; returns how long
/// that took.
pub async fn wait_ok(
    addr: SocketAddr,
    host: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<Duration> {
    wait_ok_every(addr, host, timeout, Duration::from_millis(1)).await
}

/// [`wait_ok`], polling every `every`.
pub async fn wait_ok_every(
    addr: SocketAddr,
    host: Option<&str>,
    timeout: Duration,
    every: Duration,
) -> anyhow::Result<Duration> {
    wait_ok_at(addr, host, "/", timeout, every).await
}

/// Polls `GET path` every `every` until it answers 200; returns how long
/// that took.
pub async fn wait_ok_at(
    addr: SocketAddr,
    host: Option<&str>,
    path: &str,
    timeout: Duration,
    every: Duration,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut last = None;
    while started.elapsed() < timeout {
        match get_status_of(addr, host, path).await {
            Some(200) => return Ok(started.elapsed()),
            status => last = status,
        }
        tokio::time::sleep(every).await;
    }
    bail!("no 200 within {timeout:?} (last status {last:?})")
}

/// `GET /` with `Connection: close`; the status, or `None` when the
/// connection fails.
pub async fn get_status(addr: SocketAddr, host: Option<&str>) -> Option<u16> {
    get_status_of(addr, host, "/").await
}

/// [`get_status`] of `path`.
pub async fn get_status_of(addr: SocketAddr, host: Option<&str>, path: &str) -> Option<u16> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let host = host.map_or_else(|| addr.to_string(), str::to_owned);
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::with_capacity(256);
        stream.read_to_end(&mut raw).await.ok()?;
        let head = String::from_utf8_lossy(&raw);
        head.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

/// `wrangler dev` (Node.js `node`, wrangler's `wrangler_js`) serving the
/// project in `project` with nothing leaving the machine, its log at
/// `log`, once it answers `GET /`.
pub async fn wrangler_dev(
    node: &Path,
    wrangler_js: &Path,
    project: &Path,
    log: &Path,
) -> anyhow::Result<Server> {
    let port = free_port()?;
    let args = wrangler::dev_args(wrangler_js, port, free_port()?);
    let envs: Vec<(&str, &std::ffi::OsStr)> = wrangler::OFFLINE_ENV
        .iter()
        .map(|(key, value)| (*key, std::ffi::OsStr::new(value)))
        .collect();
    let process = Process::spawn_in("wrangler dev", node, &args, &envs, log, Some(project))
        .context("starting wrangler dev")?;
    let server = Server {
        name: "wrangler dev",
        addr: ([127, 0, 0, 1], port).into(),
        host: None,
        process: Some(process),
        helpers: Vec::new(),
    };
    server.wait_ok(Duration::from_secs(120)).await?;
    Ok(server)
}
