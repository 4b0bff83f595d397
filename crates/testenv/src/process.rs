//! Running etcd and kube-apiserver so that they never outlive the test process.
//!
//! Three layers, because a test process can end in three ways:
//! - **The test returns or panics:** [`Supervised`]'s `Drop` kills the process
//!   group and reaps the child.
//! - **The test process is killed** (SIGKILL, a CI timeout, Ctrl-C): no `Drop`
//!   runs. Each child is started through `setpriv --pdeathsig KILL` (util-linux,
//!   always on Debian), which sets `PR_SET_PDEATHSIG` and then execs etcd or
//!   kube-apiserver in place, so the kernel kills them when their parent dies.
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

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tracing::{debug, info, warn};

use crate::Error;
use crate::config::find_on_path;

/// Which part of the control plane a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Etcd,
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Containerd,
    Kubelet,
    KubeProxy,
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Etcd => "etcd",
            Self::KubeApiserver => "kube-apiserver",
            Self::KubeControllerManager => "kube-controller-manager",
            Self::KubeScheduler => "kube-scheduler",
            Self::Containerd => "containerd",
            Self::Kubelet => "kubelet",
            Self::KubeProxy => "kube-proxy",
        })
    }
}

/// A child process that is killed when this value is dropped or the test process dies.
#[derive(Debug)]
pub(crate) struct Supervised {
    component: Component,
    child: Child,
    log: PathBuf,
    reaped: bool,
}

impl Supervised {
    /// Starts `program args…` with stdout and stderr appended to `log`.
    pub(crate) fn spawn(
        component: Component,
        program: &Path,
        args: &[OsString],
        log: &Path,
    ) -> Result<Self, Error> {
        let setpriv = find_on_path("setpriv").ok_or(Error::SetprivNotFound)?;
        let spawn_error = |source| Error::Spawn { component, source };
        let stdout = File::create(log).map_err(|source| Error::WriteFile {
            path: log.to_owned(),
            source,
        })?;
        let stderr = stdout.try_clone().map_err(spawn_error)?;

        let mut command = Command::new(setpriv);
        command
            .args(["--pdeathsig", "KILL", "--"])
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        let child = spawn_on_spawner_thread(command).map_err(spawn_error)?;
        info!(component = %component, pid = child.id(), log = %log.display(), "started");
        Ok(Self {
            component,
            child,
            log: log.to_owned(),
            reaped: false,
        })
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Ok` while the process runs; [`Error::ExitedEarly`] with its log's tail once it has exited.
    pub(crate) fn check_running(&mut self) -> Result<(), Error> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                self.reaped = true;
                Err(Error::ExitedEarly {
                    component: self.component,
                    status,
                    log: self.log.clone(),
                    tail: log_tail(&self.log),
                })
            }
            Err(source) => Err(Error::Spawn {
                component: self.component,
                source,
            }),
        }
    }

    /// Kills the process group with SIGKILL and reaps the child. Nothing here
    /// needs a graceful shutdown: the data is thrown away.
    pub(crate) fn kill(&mut self) {
        if self.reaped {
            return;
        }
        let pid = self.child.id();
        match i32::try_from(pid) {
            Ok(raw) => {
                if let Err(error) = killpg(Pid::from_raw(raw), Signal::SIGKILL) {
                    debug!(component = %self.component, pid, %error, "killpg failed, killing the process");
                    let _ = self.child.kill();
                }
            }
            Err(_) => {
                let _ = self.child.kill();
            }
        }
        match self.child.wait() {
            Ok(status) => debug!(component = %self.component, pid, %status, "stopped"),
            Err(error) => warn!(component = %self.component, pid, %error, "failed to reap"),
        }
        self.reaped = true;
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.kill();
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

/// The last lines of a log, for error messages.
fn log_tail(log: &Path) -> String {
    const TAIL_BYTES: u64 = 4096;
    let read = || -> io::Result<String> {
        let mut file = File::open(log)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    read().unwrap_or_else(|error| format!("(could not read {}: {error})", log.display()))
}
