//! A control plane of our own: etcd and kube-apiserver as child processes, and
//! when asked a whole node beside them (`node.rs`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;
use hyper_util::client::legacy::connect::Connect;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use tempfile::TempDir;
use tracing::{debug, info, warn};

use crate::component::Component;
use crate::config::Config;
use crate::node::{LocalNode, NODE_IP, NodeHost};
use crate::pki::{self, PkiFiles};
use crate::process::Supervised;
use crate::{Error, kubeconfig};

/// Ports are picked by binding `:0` and releasing; another process may take one
/// before etcd or the apiserver binds it. Then the whole start is retried.
const START_ATTEMPTS: u32 = 3;
/// Bounds on the `/readyz` poll interval (it doubles from the first to the second).
const POLL_FIRST: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(200);
/// One `/readyz` request may take at most this long.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// etcd's data directory inside the temporary directory. It is removed even when
/// the logs are kept: etcd preallocates a 64 MiB WAL. (Putting it on /dev/shm
/// made 300 sequential writes only ~12% faster here, and a killed test would
/// leak that RAM.)
const ETCD_DATA: &str = "etcd-data";

/// etcd and kube-apiserver, running, with their temporary directory.
#[derive(Debug)]
pub(crate) struct LocalCluster {
    /// The node's processes, when the config asked for a node.
    pub(crate) node: Option<LocalNode>,
    /// The node's host state (lock, bridge); removes it when dropped.
    node_host: Option<NodeHost>,
    pub(crate) apiserver: Supervised,
    pub(crate) etcd: Supervised,
    /// Logs, certificates, the kubeconfig and etcd's data. `None` once dropped.
    dir: Option<TempDir>,
    pub(crate) kubeconfig: PathBuf,
    /// Keep `dir` even if the test passes (ISOLANE_KEEP_TEST_LOGS, or a failed start).
    keep_dir: bool,
}

impl LocalCluster {
    /// Starts etcd and kube-apiserver and waits until the apiserver is ready.
    pub(crate) async fn start(config: &Config) -> Result<(Self, kube::Client), Error> {
        let apiserver = config.kube_apiserver_binary()?;
        let etcd = config.etcd_binary()?;
        let mut attempt = 1;
        loop {
            match Self::start_once(config, &apiserver, &etcd).await {
                Err(error) if error.is_port_conflict() && attempt < START_ATTEMPTS => {
                    warn!(%error, attempt, "port taken during startup, retrying");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(
        config: &Config,
        apiserver_binary: &Path,
        etcd_binary: &Path,
    ) -> Result<(Self, kube::Client), Error> {
        let dir = tempfile::Builder::new()
            .prefix("isolane-testenv-")
            .tempdir()
            .map_err(Error::TempDir)?;
        let etcd_data = dir.path().join(ETCD_DATA);
        let pki = pki::write(dir.path())?;
        let [etcd_client_port, etcd_peer_port, apiserver_port] =
            crate::port::free_ports().map_err(Error::FreePort)?;
        // With a node, the apiserver listens on the node's bridge, which pods reach.
        let node_host = match &config.node {
            Some(_) => Some(NodeHost::prepare(dir.path(), config)?),
            None => None,
        };
        let address = if node_host.is_some() {
            NODE_IP
        } else {
            "127.0.0.1"
        };

        let etcd_url = format!("http://127.0.0.1:{etcd_client_port}");
        let etcd = Supervised::spawn(
            Component::Etcd,
            etcd_binary,
            &etcd_args(&etcd_data, &etcd_url, etcd_peer_port),
            &dir.path().join("etcd.log"),
        )?;
        let apiserver = Supervised::spawn(
            Component::KubeApiserver,
            apiserver_binary,
            &apiserver_args(
                &pki,
                &etcd_url,
                address,
                apiserver_port,
                node_host.is_some(),
            ),
            &dir.path().join("kube-apiserver.log"),
        )?;
        let kubeconfig = dir.path().join("kubeconfig");
        let mut cluster = Self {
            node: None,
            node_host,
            apiserver,
            etcd,
            dir: Some(dir),
            kubeconfig,
            keep_dir: config.keep_logs,
        };

        let server = format!("https://{address}:{apiserver_port}");
        kubeconfig::write(&cluster.kubeconfig, &server, &pki)?;
        let client_config = kubeconfig::load(&cluster.kubeconfig).await?;
        if let Err(error) = cluster
            .wait_ready(&client_config, config.ready_timeout)
            .await
        {
            // Keep the logs the error points at, unless we are about to retry.
            cluster.keep_dir |= !error.is_port_conflict();
            return Err(error);
        }
        info!(%server, "kube-apiserver ready");
        let client = kube::Client::try_from(client_config).map_err(Error::Client)?;
        if let Some(node) = &config.node {
            match LocalNode::start(
                cluster.dir_path(),
                config,
                node,
                &pki,
                &cluster.kubeconfig,
                &client,
            )
            .await
            {
                Ok(node) => cluster.node = Some(node),
                Err(error) => {
                    cluster.keep_dir = true;
                    return Err(error);
                }
            }
        }
        Ok((cluster, client))
    }

    /// Polls `/readyz` until it answers 200, a process exits, or the deadline passes.
    ///
    /// The probe uses kube-rs's TLS setup (so it also proves the kubeconfig works)
    /// but not a `kube::Client`, which logs every refused connection and every 500
    /// from a starting apiserver at ERROR level.
    async fn wait_ready(&mut self, config: &kube::Config, timeout: Duration) -> Result<(), Error> {
        let probe = readyz_probe(config)?;
        let deadline = Instant::now() + timeout;
        let mut interval = POLL_FIRST;
        let mut last_error = String::from("no answer yet");
        loop {
            self.etcd.check_running()?;
            self.apiserver.check_running()?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(Error::NotReady {
                    timeout,
                    last_error,
                    dir: self.dir_path().to_owned(),
                });
            }
            match probe.check(remaining.min(PROBE_TIMEOUT)).await {
                Ok(()) => return Ok(()),
                Err(error) => {
                    debug!(%error, "kube-apiserver not ready yet");
                    last_error = error;
                }
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(interval.min(remaining)).await;
            interval = (interval * 2).min(POLL_MAX);
        }
    }

    pub(crate) fn dir_path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), TempDir::path)
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // The node's processes, then what they left on the host, while the
        // apiserver still runs.
        drop(self.node.take());
        drop(self.node_host.take());
        // The apiserver first, so it does not log a burst of etcd errors.
        self.apiserver.kill();
        self.etcd.kill();
        let Some(dir) = self.dir.take() else { return };
        if self.keep_dir || std::thread::panicking() {
            let path = dir.keep();
            let _ = std::fs::remove_dir_all(path.join(ETCD_DATA));
            // The node's unpacked images and kubelet volumes.
            for data in [
                "node/containerd-root",
                "node/containerd-state",
                "node/kubelet",
            ] {
                let _ = std::fs::remove_dir_all(path.join(data));
            }
            eprintln!(
                "isolane-testenv: kept {}: logs in etcd.log and kube-apiserver.log, kubeconfig in kubeconfig",
                path.display()
            );
            if std::thread::panicking() {
                for log in ["etcd.log", "kube-apiserver.log"] {
                    eprintln!(
                        "--- slow or refused requests in {log} ---\n{}",
                        crate::slow_lines::slow_lines(&path.join(log), 30)
                    );
                }
            }
            warn!(dir = %path.display(), "kept the control plane's logs");
        }
    }
}

/// A bare HTTPS client for `GET /readyz`.
struct ReadyzProbe<C> {
    client: hyper_util::client::legacy::Client<C, Empty<Bytes>>,
    uri: http::Uri,
}

fn readyz_probe(
    config: &kube::Config,
) -> Result<ReadyzProbe<impl Connect + Clone + Send + Sync + 'static>, Error> {
    let connector = config.rustls_https_connector().map_err(Error::Client)?;
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
    let url = &config.cluster_url;
    let uri = http::Uri::builder()
        .scheme(url.scheme_str().unwrap_or("https"))
        .authority(url.authority().map_or("", |authority| authority.as_str()))
        .path_and_query("/readyz")
        .build()
        .map_err(|source| Error::ServerUrl {
            url: url.to_string(),
            source,
        })?;
    Ok(ReadyzProbe { client, uri })
}

impl<C: Connect + Clone + Send + Sync + 'static> ReadyzProbe<C> {
    async fn check(&self, timeout: Duration) -> Result<(), String> {
        let request = self.client.get(self.uri.clone());
        match tokio::time::timeout(timeout, request).await {
            Ok(Ok(response)) if response.status() == http::StatusCode::OK => Ok(()),
            Ok(Ok(response)) => Err(format!("/readyz answered {}", response.status())),
            Ok(Err(error)) => Err(format!("/readyz: {error}")),
            Err(_) => Err(format!("/readyz took longer than {timeout:?}")),
        }
    }
}

fn etcd_args(data_dir: &Path, client_url: &str, peer_port: u16) -> Vec<OsString> {
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let mut args: Vec<OsString> = vec!["--data-dir".into(), data_dir.into()];
    for (flag, value) in [
        ("--name", "isolane-test".to_owned()),
        ("--listen-client-urls", client_url.to_owned()),
        ("--advertise-client-urls", client_url.to_owned()),
        ("--listen-peer-urls", peer_url.clone()),
        ("--initial-advertise-peer-urls", peer_url.clone()),
        ("--initial-cluster", format!("isolane-test={peer_url}")),
        ("--logger", "zap".to_owned()),
        ("--log-outputs", "stderr".to_owned()),
    ] {
        args.push(format!("{flag}={value}").into());
    }
    args
}

fn apiserver_args(
    pki: &PkiFiles,
    etcd_url: &str,
    address: &str,
    port: u16,
    node: bool,
) -> Vec<OsString> {
    let path = |p: &Path| OsString::from(p);
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |name: &str, value: OsString| {
        let mut arg = OsString::from(format!("--{name}="));
        arg.push(value);
        args.push(arg);
    };
    flag("bind-address", address.into());
    flag("advertise-address", address.into());
    flag("secure-port", port.to_string().into());
    flag("etcd-servers", etcd_url.into());
    flag("tls-cert-file", path(&pki.serving_cert));
    flag("tls-private-key-file", path(&pki.serving_key));
    flag("client-ca-file", path(&pki.ca_cert));
    flag(
        "service-account-key-file",
        path(&pki.service_account_public_key),
    );
    flag(
        "service-account-signing-key-file",
        path(&pki.service_account_key),
    );
    flag(
        "service-account-issuer",
        "https://kubernetes.default.svc.cluster.local".into(),
    );
    flag(
        "service-cluster-ip-range",
        pki::SERVICE_CLUSTER_IP_RANGE.into(),
    );
    flag("authorization-mode", "RBAC".into());
    // With a node, the controller-manager gives every namespace its `default`
    // ServiceAccount and the `kubernetes` Service points at the node's address,
    // where pods reach the apiserver.
    if !node {
        // No controller-manager runs, so no namespace gets a `default` ServiceAccount;
        // the ServiceAccount admission plugin would then reject every Pod.
        flag("disable-admission-plugins", "ServiceAccount".into());
        // The `kubernetes` Service would get 127.0.0.1 as its endpoint, which the
        // Endpoints validation rejects (loopback) every few seconds in the log; no
        // in-cluster client exists to use it, so leave it without endpoints.
        flag("endpoint-reconciler-type", "none".into());
    } else {
        // APIServices backed by pods (the chart's) are dialled at their
        // pod's address on the node's bridge. Through the Service's
        // ClusterIP, a connection the apiserver opened before kube-proxy
        // wrote the Service's rules went to the host's default route (on
        // this machine an egress proxy answering 404) and stayed pooled
        // there: the APIService never became Available.
        flag("enable-aggregator-routing", "true".into());
    }
    flag("allow-privileged", "true".into());
    flag("profiling", "false".into());
    args.extend(aggregation_args(pki));
    args
}

/// The aggregation layer, as kubeadm configures it: the apiserver proxies
/// `/apis/<group>/<version>` of an APIService to its backend with its
/// front-proxy client certificate and the caller's identity in the
/// `X-Remote-*` headers.
///
/// Without a node, routing stays the default (to the Service's ClusterIP,
/// or to an ExternalName Service's name): `--enable-aggregator-routing`
/// would dial the Service's Endpoints, which may not name loopback, where
/// the tests' backends listen as processes; an ExternalName Service of
/// `127.0.0.1` reaches them. With a node it is on (see the caller).
fn aggregation_args(pki: &PkiFiles) -> Vec<OsString> {
    let flag = |name: &str, value: &OsStr| {
        let mut arg = OsString::from(format!("--{name}="));
        arg.push(value);
        arg
    };
    vec![
        flag(
            "requestheader-client-ca-file",
            pki.front_proxy_ca_cert.as_os_str(),
        ),
        flag(
            "requestheader-allowed-names",
            OsStr::new(pki::FRONT_PROXY_CLIENT),
        ),
        flag(
            "requestheader-username-headers",
            OsStr::new("X-Remote-User"),
        ),
        flag("requestheader-group-headers", OsStr::new("X-Remote-Group")),
        flag(
            "requestheader-extra-headers-prefix",
            OsStr::new("X-Remote-Extra-"),
        ),
        flag(
            "proxy-client-cert-file",
            pki.front_proxy_client_cert.as_os_str(),
        ),
        flag(
            "proxy-client-key-file",
            pki.front_proxy_client_key.as_os_str(),
        ),
    ]
}
