//! A throwaway S3-compatible store for tests: SeaweedFS's `weed server`
//! (master, volume server, filer and S3 gateway in one process), built
//! from its Go module by `hack/build-seaweedfs.sh` into the cache as
//! `weed-<SEAWEEDFS_VERSION>`, storing on a temporary folder, listening on
//! free ports of 127.0.0.1, with one S3 identity (an access key and its
//! secret). Killed on drop (`Process`).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::Error;
use crate::component::Component;
use crate::config::Config;
use crate::port::free_port;
use crate::process::Process;

/// The Go module version `hack/build-seaweedfs.sh` builds.
pub const SEAWEEDFS_VERSION: &str = "v0.0.0-20261109003541-7506e5f91cd6";
/// How long the store may take to take writes.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// The S3 identity's access key.
pub const S3_ACCESS_KEY: &str = "isolane-test";
/// The S3 identity's secret.
pub const S3_SECRET_KEY: &str = "isolane-test-secret";
/// The region S3 clients sign for (SeaweedFS takes any).
pub const S3_REGION: &str = "us-east-1";

/// A running SeaweedFS.
pub struct SeaweedFs {
    process: Process,
    s3_port: u16,
    _dir: TempDir,
}

impl std::fmt::Debug for SeaweedFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeaweedFs")
            .field("s3_port", &self.s3_port)
            .finish_non_exhaustive()
    }
}

/// `GET path` on 127.0.0.1:`port`: the answer's text, if one came.
fn http_get(port: u16, path: &str) -> Option<String> {
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

/// The S3 gateway's identity file.
fn identities() -> String {
    serde_json::json!({
        "identities": [{
            "name": "isolane",
            "credentials": [{ "accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY }],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }]
    })
    .to_string()
}

/// `weed server`'s arguments: every port (and gRPC port) a free one.
fn arguments(
    dir: &std::path::Path,
    config: &std::path::Path,
) -> Result<(Vec<String>, u16, u16), Error> {
    let port = || free_port().map_err(Error::FreePort);
    let (master, volume, filer, s3) = (port()?, port()?, port()?, port()?);
    let (master_grpc, volume_grpc, filer_grpc, s3_grpc) = (port()?, port()?, port()?, port()?);
    let data = dir.join("data");
    std::fs::create_dir_all(&data).map_err(|source| Error::WriteFile {
        path: data.clone(),
        source,
    })?;
    let args = vec![
        "server".to_owned(),
        "-ip=127.0.0.1".to_owned(),
        "-ip.bind=127.0.0.1".to_owned(),
        format!("-dir={}", data.display()),
        format!("-master.port={master}"),
        format!("-master.port.grpc={master_grpc}"),
        "-master.volumeSizeLimitMB=1024".to_owned(),
        format!("-volume.port={volume}"),
        format!("-volume.port.grpc={volume_grpc}"),
        "-volume.max=100".to_owned(),
        "-filer".to_owned(),
        format!("-filer.port={filer}"),
        format!("-filer.port.grpc={filer_grpc}"),
        "-s3".to_owned(),
        format!("-s3.port={s3}"),
        format!("-s3.port.grpc={s3_grpc}"),
        format!("-s3.config={}", config.display()),
        // Not used; their fixed default ports would clash between tests.
        "-s3.port.iceberg=0".to_owned(),
        "-s3.port.lance=0".to_owned(),
    ];
    Ok((args, master, s3))
}

impl SeaweedFs {
    /// Starts the cached `weed`; returns once the store takes writes and
    /// the S3 gateway answers.
    pub fn start() -> Result<Self, Error> {
        let binary = Config::from_env().cached("weed", SEAWEEDFS_VERSION)?;
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let config = dir.path().join("s3.json");
        std::fs::write(&config, identities()).map_err(|source| Error::WriteFile {
            path: config.clone(),
            source,
        })?;
        let (args, master, s3_port) = arguments(dir.path(), &config)?;
        let log = dir.path().join("weed.log");
        let mut process = Process::spawn("weed", &binary, args, &[], &log)?;
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = process.try_exit() {
                return Err(Error::ExitedEarly {
                    component: Component::SeaweedFs,
                    status,
                    tail: process.log_tail(40),
                    log,
                });
            }
            // A file id assigned: a volume takes writes.
            let writable = http_get(master, "/dir/assign").is_some_and(|a| a.contains("\"fid\""));
            if writable && http_get(s3_port, "/").is_some_and(|a| a.starts_with("HTTP/1.")) {
                return Ok(Self {
                    process,
                    s3_port,
                    _dir: dir,
                });
            }
            if Instant::now() >= deadline {
                return Err(Error::NodeNotReady {
                    what: "seaweedfs",
                    timeout: READY_WITHIN,
                    detail: process.log_tail(40),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The S3 API's endpoint, `http://127.0.0.1:<port>`.
    pub fn s3_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.s3_port)
    }

    /// The store's process.
    pub fn process(&self) -> &Process {
        &self.process
    }
}
