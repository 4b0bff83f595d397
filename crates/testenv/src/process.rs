//! Running processes — etcd, kube-apiserver, the project's binaries under test,
//! Prometheus — so that they never outlive the test process: [`Process`], the
//! one process supervisor of the tests (the control plane's parts are
//! `Supervised`: a `Process` whose early exit is an [`Error`]).
//!
//! Three layers, because a test process can end in three ways:
//! - **The test returns or panics:** [`Process`]'s `Drop` kills the process
//!   group and reaps the child.
//! - **The test process is killed** (SIGKILL, a CI timeout, Ctrl-C): no `Drop`
//!   runs. Each child is started through `setpriv --pdeathsig KILL` (util-linux,
//!   always on Debian), which sets `PR_SET_PDEATHSIG` and then execs the
//!   program in place, so the kernel kills them when their parent dies.
//!   This keeps the crate free of `unsafe` (a `pre_exec` hook calling `prctl`
//!   would need it; the workspace allows `unsafe` only in the engine).
//! - **The spawning thread ends:** `PR_SET_PDEATHSIG` fires when the *thread*
//!   that forked the child exits, not the process. Tests run on short-lived
//!   threads (and a control plane may be shared between tests), so every child
//!   is forked by one spawner thread that lives as long as the process.
//!
//! Each child also leads its own process group: teardown kills the group as a
//! whole, and a Ctrl-C at the terminal reaches only the test process (whose death
//! then takes the children along) rather than racing it to stop etcd first.
//!
//! Left open: if the test process dies in the microseconds between `fork` and
//! `setpriv`'s `prctl`, the child is orphaned.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tracing::{debug, info, warn};

use crate::Error;
use crate::component::Component;
use crate::config::find_on_path;
use crate::deadline::poll_blocking;

/// A process a test started: its output goes to a log file, and it dies with
/// this value and with the test process (see the module docs). When a test
/// panics while it runs, dropping it prints its log's last lines.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
    exited: Option<ExitStatus>,
    /// Print the log's tail when dropped during a panic.
    pub(crate) tail_on_panic: bool,
}

impl Process {
    /// Starts `program args…` with `envs` added to the environment, and stdout
    /// and stderr appended to `log`. `name` names it in messages.
    pub fn spawn<I, S>(
        name: &str,
        program: &Path,
        args: I,
        envs: &[(&str, &OsStr)],
        log: &Path,
    ) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Self::spawn_in(name, program, args, envs, log, None)
    }

    /// [`Process::spawn`] in the working folder `dir` (this process's when
    /// `None`).
    pub fn spawn_in<I, S>(
        name: &str,
        program: &Path,
        args: I,
        envs: &[(&str, &OsStr)],
        log: &Path,
        dir: Option<&Path>,
    ) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Self::spawn_with_stdin(name, program, args, envs, log, dir, Stdio::null())
    }

    /// [`Process::spawn_in`] with `stdin` as the program's standard input
    /// (for example a listening socket it is told to serve on fd 0).
    pub fn spawn_with_stdin<I, S>(
        name: &str,
        program: &Path,
        args: I,
        envs: &[(&str, &OsStr)],
        log: &Path,
        dir: Option<&Path>,
        stdin: Stdio,
    ) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let setpriv = find_on_path("setpriv").ok_or(Error::SetprivNotFound)?;
        let spawn_error = |source| Error::Spawn {
            name: name.to_owned(),
            source,
        };
        let stdout = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|source| Error::WriteFile {
                path: log.to_owned(),
                source,
            })?;
        let stderr = stdout.try_clone().map_err(spawn_error)?;

        let mut command = Command::new(setpriv);
        command
            .args(["--pdeathsig", "KILL", "--"])
            .arg(program)
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        for (key, value) in envs {
            command.env(key, value);
        }
        if let Some(dir) = dir {
            command.current_dir(dir);
        }
        let child = spawn_on_spawner_thread(command).map_err(spawn_error)?;
        info!(process = name, pid = child.id(), log = %log.display(), "started");
        Ok(Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
            exited: None,
            tail_on_panic: true,
        })
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

    /// The last `lines` lines of the log (read from its last 64 KiB).
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// The exit status, if it has exited (reaping it).
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

    /// Sends `signal` to the process (not its group), unless it was reaped
    /// (then its pid may be another process's).
    pub fn signal(&self, signal: Signal) -> nix::Result<()> {
        if self.exited.is_some() {
            return Ok(());
        }
        kill(self.nix_pid(), signal)
    }

    /// SIGKILL to the process group, then reap.
    pub fn kill(&mut self) {
        if self.try_exit().is_some() {
            return;
        }
        if let Err(error) = killpg(self.nix_pid(), Signal::SIGKILL) {
            debug!(process = %self.name, pid = self.pid(), %error, "killpg failed, killing the process");
            let _ = self.child.kill();
        }
        match self.child.wait() {
            Ok(status) => {
                debug!(process = %self.name, pid = self.pid(), %status, "stopped");
                self.exited = Some(status);
            }
            Err(error) => warn!(process = %self.name, pid = self.pid(), %error, "failed to reap"),
        }
    }

    /// SIGTERM, then wait up to `grace` for the exit; SIGKILL after that.
    /// Returns the exit status if it exited by itself.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.try_exit() {
            return Some(status);
        }
        let _ = kill(self.nix_pid(), Signal::SIGTERM);
        if let Some(status) = self.wait_exit(grace) {
            return Some(status);
        }
        warn!(process = %self.name, grace_ms = grace.as_millis(), "ignored SIGTERM; killing it");
        self.kill();
        None
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        poll_blocking(timeout, || self.try_exit()).ok()
    }

    /// Waits until every one of `ports` on 127.0.0.1 accepts a connection
    /// (the process, `component`, is ready to serve), or the process exits,
    /// or `within` passes.
    pub(crate) fn wait_listening(
        &mut self,
        component: Component,
        ports: &[u16],
        within: Duration,
    ) -> Result<(), Error> {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.try_exit() {
                return Err(Error::ExitedEarly {
                    component,
                    status,
                    tail: self.log_tail(40),
                    log: self.log_path().to_owned(),
                });
            }
            let listening = ports
                .iter()
                .all(|port| std::net::TcpStream::connect(("127.0.0.1", *port)).is_ok());
            if listening {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what: "a process to listen",
                    timeout: within,
                    detail: format!("{component}: {}", self.log_tail(40)),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn nix_pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.pid()).unwrap_or(i32::MAX))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
        if self.tail_on_panic && std::thread::panicking() {
            eprintln!(
                "--- last lines of {} ({}) ---\n{}",
                self.name,
                self.log.display(),
                self.log_tail(60)
            );
        }
    }
}

// === impl Supervised ===

/// A part of the control plane: a [`Process`] whose early exit is an [`Error`].
#[derive(Debug)]
pub(crate) struct Supervised {
    component: Component,
    process: Process,
}

impl Supervised {
    /// Starts `program args…` with stdout and stderr appended to `log`.
    pub(crate) fn spawn(
        component: Component,
        program: &Path,
        args: &[OsString],
        log: &Path,
    ) -> Result<Self, Error> {
        let mut process = Process::spawn(&component.to_string(), program, args, &[], log)?;
        // The control plane keeps its whole log directory when a test fails.
        process.tail_on_panic = false;
        Ok(Self { component, process })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// `Ok` while the process runs; [`Error::ExitedEarly`] with its log's tail once it has exited.
    pub(crate) fn check_running(&mut self) -> Result<(), Error> {
        match self.process.try_exit() {
            None => Ok(()),
            Some(status) => Err(Error::ExitedEarly {
                component: self.component,
                status,
                log: self.process.log_path().to_owned(),
                tail: self.process.log_tail(40),
            }),
        }
    }

    /// Kills the process group with SIGKILL and reaps the child. Nothing here
    /// needs a graceful shutdown: the data is thrown away.
    pub(crate) fn kill(&mut self) {
        self.process.kill();
    }
}

type SpawnRequest = (Command, mpsc::SyncSender<io::Result<Child>>);

/// Forks `command` from the process-lifetime spawner thread (see the module docs).
fn spawn_on_spawner_thread(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        // If the thread cannot be started, `incoming` is dropped with the closure
        // and every request below fails with an error instead of a panic.
        let _ = std::thread::Builder::new()
            .name("isolane-testenv-spawner".to_owned())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            });
        requests
    });
    let unavailable = || io::Error::other("the isolane-testenv spawner thread is not running");
    let (reply, response) = mpsc::sync_channel(1);
    spawner.send((command, reply)).map_err(|_| unavailable())?;
    response.recv().map_err(|_| unavailable())?
}

/// The last `lines` lines of a log, read from its last 64 KiB.
fn log_tail(log: &Path, lines: usize) -> String {
    const TAIL_BYTES: u64 = 64 * 1024;
    let read = || -> io::Result<String> {
        let mut file = File::open(log)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(could not read {}: {error})", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    fn sh(dir: &Path, script: &str) -> Process {
        let log = dir.join("sh.log");
        Process::spawn("sh", Path::new("/bin/sh"), ["-c", script], &[], &log).unwrap()
    }

    #[test]
    fn logs_output_and_reports_the_exit() {
        let dir = tempfile::tempdir().unwrap();
        let mut process = sh(dir.path(), "echo one; echo two >&2; exit 3");
        let status = process.wait_exit(Duration::from_secs(30)).unwrap();
        assert_eq!(status.code(), Some(3));
        assert_eq!(process.log_tail(1), "two");
        assert_eq!(process.log(), "one\ntwo\n");
    }

    #[test]
    fn terminate_sends_sigterm_and_reports_the_exit() {
        let dir = tempfile::tempdir().unwrap();
        let mut process = sh(dir.path(), "exec sleep 600");
        assert_eq!(process.try_exit(), None);
        let status = process.terminate(Duration::from_secs(30)).unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32));
    }

    #[test]
    fn drop_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let process = sh(dir.path(), "sleep 600 & echo $!; wait");
        let child_pid =
            crate::wait_until_blocking("the child's pid", Duration::from_secs(30), || {
                process.log().trim().parse::<i32>().ok()
            });
        drop(process);
        crate::wait_until_blocking("the group's child to die", Duration::from_secs(30), || {
            kill(Pid::from_raw(child_pid), None).is_err()
        });
    }
}
