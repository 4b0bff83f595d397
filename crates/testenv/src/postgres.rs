//! A throwaway PostgreSQL server for tests: Debian's `postgresql`
//! (hack/install-deps.sh; its own service is kept from starting), a data
//! directory of its own made by `initdb`, listening on a free port of
//! 127.0.0.1 with trust authentication, killed on drop (`Process`).
//!
//! It also serves TLS (`ssl=on`; a client that asks for it with an
//! SSLRequest gets it, one that does not stays in plain text): its
//! certificate, for `127.0.0.1` and `localhost`, is signed by a throwaway
//! [`TestCa`] whose certificate [`Postgres::ca_pem`] gives, for the client
//! to trust.
//!
//! PostgreSQL refuses to run as root: as root (CI), `initdb` and the server
//! run as `nobody` through `setpriv`, the data directory theirs.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::component::Component;
use crate::config::find_on_path;
use crate::pki::{Leaf, TestCa};
use crate::port::free_port;
use crate::process::Process;
use crate::{Error, TestCert};

/// Where Debian installs each PostgreSQL version's programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// `nobody`/`nogroup`, which run the server when the tests run as root.
const NOBODY: u32 = 65534;
/// How long the server may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running PostgreSQL server.
pub struct Postgres {
    process: Process,
    port: u16,
    ca_pem: String,
    _dir: TempDir,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("port", &self.port)
            .finish()
    }
}

impl Postgres {
    /// Makes a data directory and starts the server on it; returns once it
    /// accepts connections.
    pub fn start() -> Result<Self, Error> {
        let bin = bin_dir()?;
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let data = dir.path().join("data");
        let log = dir.path().join("postgres.log");
        let as_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        if as_root {
            std::os::unix::fs::chown(dir.path(), Some(NOBODY), Some(NOBODY)).map_err(|source| {
                Error::WriteFile {
                    path: dir.path().to_owned(),
                    source,
                }
            })?;
        }
        let as_server = |program: &Path| -> Result<Command, Error> {
            if !as_root {
                return Ok(Command::new(program));
            }
            let setpriv = find_on_path("setpriv").ok_or(Error::SetprivNotFound)?;
            let mut command = Command::new(setpriv);
            command
                .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                .args(["--pdeathsig", "KILL", "--"])
                .arg(program);
            Ok(command)
        };
        let initdb = as_server(&bin.join("initdb"))?
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .map_err(|source| Error::Spawn {
                name: "initdb".to_owned(),
                source,
            })?;
        if !initdb.status.success() {
            return Err(Error::HostCommand {
                command: "initdb".to_owned(),
                detail: String::from_utf8_lossy(&initdb.stderr).into_owned(),
            });
        }
        let ca = TestCa::new("isolane-postgres-test-ca")?;
        let cert = ca.issue(Leaf::server("postgres", &["127.0.0.1", "localhost"]))?;
        let (cert_file, key_file) = write_server_cert(dir.path(), &cert, as_root)?;
        let port = free_port().map_err(Error::FreePort)?;
        let server = as_server(&bin.join("postgres"))?;
        let mut args: Vec<std::ffi::OsString> = server.get_args().map(ToOwned::to_owned).collect();
        args.extend([
            "-D".into(),
            data.into_os_string(),
            "-p".into(),
            port.to_string().into(),
            "-h".into(),
            "127.0.0.1".into(),
            // The socket directory: the test's own, not /run/postgresql.
            "-k".into(),
            dir.path().as_os_str().to_owned(),
            // Throwaway data: no fsync.
            "-F".into(),
            "-c".into(),
            "ssl=on".into(),
            "-c".into(),
            setting("ssl_cert_file", &cert_file),
            "-c".into(),
            setting("ssl_key_file", &key_file),
        ]);
        let mut process =
            Process::spawn("postgres", Path::new(server.get_program()), args, &[], &log)?;
        // Polled until ready, the server exits, or the deadline passes.
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = process.try_exit() {
                return Err(Error::ExitedEarly {
                    component: Component::Postgres,
                    status,
                    tail: process.log_tail(40),
                    log,
                });
            }
            let up = process
                .log()
                .contains("database system is ready to accept connections")
                && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            if up {
                std::fs::write(dir.path().join("client-ca.pem"), ca.cert_pem())
                    .map_err(Error::TempDir)?;
                return Ok(Self {
                    process,
                    port,
                    ca_pem: ca.cert_pem(),
                    _dir: dir,
                });
            }
            if Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what: "postgres",
                    timeout: READY_WITHIN,
                    detail: process.log_tail(40),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A libpq connection string for the `postgres` database as `postgres`,
    /// in plain text (`sslmode=disable`: a client that would try TLS first,
    /// as libpq's and tokio-postgres's default `prefer` does, would refuse
    /// the test CA's certificate).
    pub fn connection_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=disable",
            self.port
        )
    }

    /// The same database over TLS only (`sslmode=require`): the client must
    /// trust [`Postgres::ca_file`].
    pub fn tls_connection_string(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
            self.port
        )
    }

    /// A file holding [`Postgres::ca_pem`], for clients that take a path.
    pub fn ca_file(&self) -> PathBuf {
        self._dir.path().join("client-ca.pem")
    }

    /// The PEM certificate of the CA that signed the server's TLS
    /// certificate (for `127.0.0.1` and `localhost`).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The server's process.
    pub fn process(&self) -> &Process {
        &self.process
    }
}

/// `name=path`, a `-c` setting.
fn setting(name: &str, path: &Path) -> std::ffi::OsString {
    let mut setting = std::ffi::OsString::from(format!("{name}="));
    setting.push(path);
    setting
}

/// Writes the server's certificate and key into `dir`. PostgreSQL refuses a
/// key that its group or others may read, or that another user owns: the key
/// is 0600, and the server's (`nobody`'s) when it runs as `nobody`.
fn write_server_cert(
    dir: &Path,
    cert: &TestCert,
    as_root: bool,
) -> Result<(PathBuf, PathBuf), Error> {
    use std::os::unix::fs::PermissionsExt as _;
    let cert_file = dir.join("server.crt");
    let key_file = dir.join("server.key");
    cert.write(&cert_file, &key_file)?;
    let written = |source| Error::WriteFile {
        path: key_file.clone(),
        source,
    };
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).map_err(written)?;
    if as_root {
        for file in [&cert_file, &key_file] {
            std::os::unix::fs::chown(file, Some(NOBODY), Some(NOBODY)).map_err(written)?;
        }
    }
    Ok((cert_file, key_file))
}

/// The newest installed version's `bin` folder.
fn bin_dir() -> Result<PathBuf, Error> {
    let not_found = || Error::BinaryNotFound {
        name: "postgres",
        path: PathBuf::from(DEBIAN_ROOT),
    };
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .map_err(|_| not_found())?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(not_found)
}
