//! A throwaway OCI registry for tests: CNCF Distribution's `registry`
//! (built from its Go module by hack/install-deps.sh into the cache as
//! `bin/registry-<REGISTRY_VERSION>`), storing on a temporary directory,
//! listening on a free port of 127.0.0.1 (or of another local address: the
//! test node's bridge address, which pods reach) over plain HTTP, with
//! htpasswd (basic) authentication for one user, so pull credentials are
//! exercised; or over HTTPS with a certificate a test CA signed
//! ([`Registry::start_tls`]), for clients that must be told to trust it.
//! Killed on drop (`Process`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use tempfile::TempDir;

use crate::Error;
use crate::component::Component;
use crate::pki::{Leaf, TestCa};
use crate::port::free_port;
use crate::process::Process;

/// The version hack/install-deps.sh builds.
pub const REGISTRY_VERSION: &str = "v3.1.2";
/// Path of the registry binary (default: the cache's `bin/registry-<version>`).
pub const ENV_REGISTRY: &str = "ISOLANE_REGISTRY";
/// How long the registry may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running registry.
pub struct Registry {
    process: Process,
    address: SocketAddr,
    username: String,
    password: String,
    _dir: TempDir,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Starts a registry on 127.0.0.1 whose one user is
    /// `username`:`password`; returns once it answers `/v2/`.
    pub fn start(username: &str, password: &str) -> Result<Self, Error> {
        Self::start_on(Ipv4Addr::LOCALHOST.into(), username, password)
    }

    /// [`start`](Self::start) on a free port of `ip`, a local address: the
    /// test node's [`crate::NODE_IP`] makes it reachable from pods.
    pub fn start_on(ip: IpAddr, username: &str, password: &str) -> Result<Self, Error> {
        Self::start_with(ip, username, password, None)
    }

    /// [`start`](Self::start) over HTTPS only, with a server certificate
    /// for 127.0.0.1 that `ca` signs: a client trusting only the public web
    /// PKI refuses it.
    pub fn start_tls(username: &str, password: &str, ca: &TestCa) -> Result<Self, Error> {
        Self::start_with(Ipv4Addr::LOCALHOST.into(), username, password, Some(ca))
    }

    fn start_with(
        ip: IpAddr,
        username: &str,
        password: &str,
        ca: Option<&TestCa>,
    ) -> Result<Self, Error> {
        let binary = binary()?;
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let write = |path: PathBuf, text: String| {
            std::fs::write(&path, text).map_err(|source| Error::WriteFile { path, source })
        };
        let hash = bcrypt::hash(password, 4).map_err(|error| Error::HostCommand {
            command: "bcrypt".to_owned(),
            detail: error.to_string(),
        })?;
        write(dir.path().join("htpasswd"), format!("{username}:{hash}\n"))?;
        // Free on 127.0.0.1, and so on `ip` too unless another test's
        // server holds it there: the registry then exits, named below.
        let address = SocketAddr::new(ip, free_port().map_err(Error::FreePort)?);
        let tls = match ca {
            Some(ca) => {
                let ip = ip.to_string();
                let names = [ip.as_str()];
                let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
                ca.issue(Leaf::server("isolane-test-registry", &names))?
                    .write(&cert, &key)?;
                format!(
                    "  tls:\n    certificate: {}\n    key: {}\n",
                    cert.display(),
                    key.display()
                )
            }
            None => String::new(),
        };
        let config = format!(
            "version: 0.1\n\
             log:\n  level: info\n\
             storage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n\
             http:\n  addr: {address}\n{tls}\
             auth:\n  htpasswd:\n    realm: isolane-test\n    path: {htpasswd}\n",
            root = dir.path().join("data").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_path = dir.path().join("config.yml");
        write(config_path.clone(), config)?;
        let log = dir.path().join("registry.log");
        // OpenTelemetry's exporters stay off: nothing to export to.
        let envs = [("OTEL_TRACES_EXPORTER", "none".as_ref())];
        let mut process = Process::spawn(
            "registry",
            &binary,
            ["serve".as_ref(), config_path.as_os_str()],
            &envs,
            &log,
        )?;
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = process.try_exit() {
                return Err(Error::ExitedEarly {
                    component: Component::Registry,
                    status,
                    tail: process.log_tail(40),
                    log,
                });
            }
            if answers(address) {
                return Ok(Self {
                    process,
                    address,
                    username: username.to_owned(),
                    password: password.to_owned(),
                    _dir: dir,
                });
            }
            if Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what: "registry",
                    timeout: READY_WITHIN,
                    detail: process.log_tail(40),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `<ip>:<port>`: the registry part of a reference.
    pub fn host(&self) -> String {
        self.address.to_string()
    }

    pub fn username(&self) -> &str {
        &self.username
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// A `.dockerconfigjson` holding the user's credentials for this
    /// registry (the data of a `kubernetes.io/dockerconfigjson` Secret).
    pub fn docker_config_json(&self) -> String {
        serde_json::json!({
            "auths": { self.host(): { "username": self.username, "password": self.password } }
        })
        .to_string()
    }

    /// The registry's process.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The `kubernetes.io/dockerconfigjson` Secret `name` holding the
    /// user's credentials (a Worker's `bundlePullSecrets` names it).
    pub fn pull_secret(&self, name: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
            data: Some(
                [(
                    ".dockerconfigjson".to_owned(),
                    ByteString(self.docker_config_json().into_bytes()),
                )]
                .into(),
            ),
            ..Secret::default()
        }
    }
}

/// Whether `GET /v2/` gets an HTTP answer (401 without credentials; over
/// TLS, Go's 400 to a plain HTTP request).
fn answers(address: SocketAddr) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /v2/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.")
}

/// `$ISOLANE_REGISTRY`, else the cache's `bin/registry-<version>`.
fn binary() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(ENV_REGISTRY).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let cache = std::env::var_os(crate::ENV_CACHE_DIR)
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache").join("isolane"))
        })
        .ok_or(Error::NoCacheDir)?;
    let path = cache
        .join("bin")
        .join(format!("registry-{REGISTRY_VERSION}"));
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::BinaryNotFound {
            name: "registry",
            path,
        })
    }
}
