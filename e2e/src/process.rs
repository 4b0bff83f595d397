//! Running the project's binaries as real processes, and waiting on conditions.
//!
//! [`binary`] builds a workspace binary once per test process (`cargo build -p …`,
//! a no-op when it is current) and returns its path under the target directory
//! (`$CARGO_TARGET_DIR`, else `<workspace>/target`), unless an environment
//! variable names a prebuilt one. [`Process`] runs it with its output in a log
//! file; it is killed when dropped, and — started through `setpriv --pdeathsig
//! KILL`, like the control plane — when the test process dies. [`wait_until`]
//! polls a probe until it answers or a deadline passes: tests never sleep and hope.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::future::Future;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// The workspace root (the parent of `e2e/`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Where cargo puts build products: `$CARGO_TARGET_DIR`, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The path of binary `bin` of workspace package `package`: `$<env_override>`
/// when set, else built (once per test process) with `cargo build -p <package>
/// --bin <bin>` into the debug profile.
///
/// # Panics
/// When the build fails: the test cannot run without the binary.
pub fn binary(package: &str, bin: &str, env_override: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_override) {
        return PathBuf::from(path);
    }
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = built.get(bin) {
        return path.clone();
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let output = Command::new(&cargo)
        .current_dir(workspace_root())
        .args(["build", "-q", "-p", package, "--bin", bin])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo build -p {package} --bin {bin} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = target_dir().join("debug").join(bin);
    assert!(path.exists(), "{} was not built", path.display());
    eprintln!(
        "built {bin} in {:.1}s: {}",
        started.elapsed().as_secs_f64(),
        path.display()
    );
    built.insert(bin.to_owned(), path.clone());
    path
}

/// A free local TCP port (bound, then released: good enough for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("bind an ephemeral port")
}

/// A child process that dies with its handle and with the test process.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
}

impl Process {
    /// Starts `program args…` with `envs` added to the environment, stdout and
    /// stderr appended to `log`.
    ///
    /// # Panics
    /// When the process cannot be started.
    pub fn spawn<I, S>(
        name: &str,
        program: &Path,
        args: I,
        envs: &[(&str, &OsStr)],
        log: &Path,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let stdout = File::options()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the process log");
        let stderr = stdout.try_clone().expect("clone the log handle");
        let mut command = Command::new("setpriv");
        command
            .arg("--pdeathsig")
            .arg("KILL")
            .arg("--")
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        for (key, value) in envs {
            command.env(key, value);
        }
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("failed to start {name}: {error}"));
        Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
            exited: None,
        }
    }

    /// The process id (setpriv execs in place, so it is the program's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The exit status, if it has exited.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().ok().flatten();
        }
        self.exited
    }

    /// Peak resident set size so far (`VmHWM`), in KiB; `None` once it has exited.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// SIGKILL, then reap.
    pub fn kill(&mut self) {
        if self.try_exit().is_some() {
            return;
        }
        let _ = killpg(Pid::from_raw(self.pid_i32()), Signal::SIGKILL);
        self.exited = self.child.wait().ok();
    }

    /// SIGTERM, then wait up to `grace` for the exit; SIGKILL after that.
    /// Returns the exit status if it exited by itself.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.try_exit() {
            return Some(status);
        }
        let _ = kill(Pid::from_raw(self.pid_i32()), Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.try_exit() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("{} ignored SIGTERM for {grace:?}; killing it", self.name);
        self.kill();
        None
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid_i32(&self) -> i32 {
        i32::try_from(self.pid()).unwrap_or(i32::MAX)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "--- last lines of {} ({}) ---\n{}",
                self.name,
                self.log.display(),
                self.log_tail(60)
            );
        }
    }
}

/// Polls `probe` every 50 ms until it returns `Some`, or panics after `timeout`
/// naming `what`.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
