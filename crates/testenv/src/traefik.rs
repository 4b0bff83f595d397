//! Traefik as the tests' Gateway API implementation: the binary
//! `hack/build-traefik.sh` caches, run as one process beside the apiserver
//! with its kubeconfig (`--providers.kubernetesgateway`), killed on drop. It
//! claims the GatewayClasses whose `controllerName` is [`TRAEFIK_CONTROLLER`],
//! writes their Gateways' and routes' status, and proxies on two entry
//! points of 127.0.0.1: plain HTTP and HTTPS. A Gateway's listener is served
//! by the entry point whose port is the listener's `port`, so a test's
//! Gateway names [`Traefik::http_addr`]'s and [`Traefik::https_addr`]'s
//! ports. Traefik sends a route's requests to its Service's endpoints (the
//! pods' addresses), from the host.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use tempfile::TempDir;

use crate::Error;
use crate::component::Component;
use crate::config::Config;
use crate::port::free_ports;
use crate::process::Process;

/// Traefik's release, as `hack/build-traefik.sh` builds it.
pub const TRAEFIK_VERSION: &str = "v3.7.13";
/// The `controllerName` of a GatewayClass Traefik claims.
pub const TRAEFIK_CONTROLLER: &str = "traefik.io/gateway-controller";
/// How long Traefik may take to listen.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running Traefik.
pub struct Traefik {
    process: Process,
    http_port: u16,
    https_port: u16,
    _dir: TempDir,
}

impl std::fmt::Debug for Traefik {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traefik")
            .field("http_port", &self.http_port)
            .field("https_port", &self.https_port)
            .finish_non_exhaustive()
    }
}

impl Traefik {
    /// Starts Traefik watching the cluster of `kubeconfig` for Gateway API
    /// objects, its entry points on free ports of 127.0.0.1, the Gateways'
    /// status address 127.0.0.1; returns once it listens.
    pub fn start(kubeconfig: &Path) -> Result<Self, Error> {
        let binary = Config::from_env().cached("traefik", TRAEFIK_VERSION)?;
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let [http_port, https_port, ping_port] = free_ports::<3>().map_err(Error::FreePort)?;
        let args = [
            format!("--entryPoints.web.address=127.0.0.1:{http_port}"),
            format!("--entryPoints.websecure.address=127.0.0.1:{https_port}"),
            format!("--entryPoints.ping.address=127.0.0.1:{ping_port}"),
            "--ping.entryPoint=ping".to_owned(),
            "--providers.kubernetesgateway=true".to_owned(),
            "--providers.kubernetesgateway.statusAddress.ip=127.0.0.1".to_owned(),
            "--global.checkNewVersion=false".to_owned(),
            "--global.sendAnonymousUsage=false".to_owned(),
            "--log.level=DEBUG".to_owned(),
            "--accesslog=true".to_owned(),
        ];
        let log = dir.path().join("traefik.log");
        // Outside a cluster, Traefik's Gateway provider reads KUBECONFIG.
        let envs: [(&str, &OsStr); 1] = [("KUBECONFIG", kubeconfig.as_os_str())];
        let mut process = Process::spawn("traefik", &binary, args, &envs, &log)?;
        process.wait_listening(
            Component::Traefik,
            &[http_port, https_port, ping_port],
            READY_WITHIN,
        )?;
        Ok(Self {
            process,
            http_port,
            https_port,
            _dir: dir,
        })
    }

    /// The plain-HTTP entry point (a Gateway listener of protocol `HTTP`
    /// on this port).
    pub fn http_addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.http_port).into()
    }

    /// The HTTPS entry point (a listener of protocol `HTTPS` on this port,
    /// terminating TLS with its `certificateRefs`).
    pub fn https_addr(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.https_port).into()
    }

    /// Traefik's process (its log tells the configuration it built and,
    /// with the access log, each request).
    pub fn process(&self) -> &Process {
        &self.process
    }
}
