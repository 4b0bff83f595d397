//! `isolane dev` as a test starts it: the real binary on a free port, its
//! log in a directory of its own, killed on drop (shared by the dev tests).
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use isolane_testenv::Process;
use nix::sys::signal::Signal;
use tempfile::TempDir;

use std::time::Duration;

pub const DEADLINE: Duration = Duration::from_secs(60);

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub use isolane_testenv::free_port;

/// The running server (killed on drop), its log in a directory of its own.
pub struct Dev {
    pub process: Process,
    _logs: TempDir,
}

impl Dev {
    /// `isolane dev <args…> --threads 1`; arguments that name a file or folder
    /// of the repository are passed as absolute paths.
    pub fn start(args: &[&str]) -> Self {
        let mut argv: Vec<OsString> = vec!["dev".into()];
        argv.extend(args.iter().map(|arg| {
            let path = repo().join(arg);
            if path.exists() {
                path.into_os_string()
            } else {
                OsString::from(arg)
            }
        }));
        argv.extend(["--threads".into(), "1".into()]);
        let logs = tempfile::tempdir().unwrap();
        let process = Process::spawn(
            "isolane dev",
            Path::new(env!("CARGO_BIN_EXE_isolane")),
            &argv,
            &[],
            &logs.path().join("dev.log"),
        )
        .unwrap();
        Dev {
            process,
            _logs: logs,
        }
    }

    /// SIGINT, then the exit status within the deadline.
    pub fn interrupt(mut self) -> std::process::ExitStatus {
        self.process.signal(Signal::SIGINT).unwrap();
        self.process
            .wait_exit(DEADLINE)
            .expect("isolane dev exits on SIGINT")
    }
}
