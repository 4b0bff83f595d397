//! Command-line flags, each with an `ISOLANE_*` environment fallback, parsed
//! and validated into a [`Config`] before any port is bound.
//!
//! `main` exits with 64 (`EX_USAGE`) when [`Args::validate`] fails. Tests and
//! other composition roots build a [`Config`] (or a [`ProxyConfig`]) directly.

use isolane_telemetry::is_dns_label;
pub use isolane_telemetry::parse_duration;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Parser;
use isolane_telemetry::{AdminArgs, LogFormat};
use isolane_worker::Reservation;

use crate::channels::ChannelConfig;
use crate::proxy::{DEFAULT_REPLAY_LIMIT, ProxyConfig};
use isolane_proto::mtls::{self, GrpcSecurity, MtlsArgs};

/// Address of the HTTP ingress.
pub const ENV_LISTEN_ADDR: &str = "ISOLANE_LISTEN_ADDR";
/// Router worker threads (0: one per core).
pub const ENV_WORKERS: &str = "ISOLANE_ROUTER_WORKERS";
/// Namespace whose Workers are routed (unset: every namespace).
pub const ENV_WATCH_NAMESPACE: &str = "ISOLANE_WATCH_NAMESPACE";
/// Namespace of the runtime-node Leases.
pub const ENV_NODES_NAMESPACE: &str = "ISOLANE_NODES_NAMESPACE";
/// The class of Workers this installation serves (`spec.workerClass`).
pub const ENV_WORKER_CLASS: &str = "ISOLANE_WORKER_CLASS";
/// Deadline of a whole request to a node.
pub const ENV_REQUEST_TIMEOUT: &str = "ISOLANE_REQUEST_TIMEOUT";
/// Deadline for connecting to a node.
pub const ENV_CONNECT_TIMEOUT: &str = "ISOLANE_CONNECT_TIMEOUT";
/// Largest request body kept in memory so the request can be retried.
pub const ENV_REPLAY_BODY_LIMIT: &str = "ISOLANE_REPLAY_BODY_LIMIT";
/// Bounded-load factor of node choice.
pub const ENV_LOAD_FACTOR: &str = "ISOLANE_LOAD_FACTOR";
/// Workers with their own metric series.
pub const ENV_MAX_WORKER_SERIES: &str = "ISOLANE_MAX_WORKER_SERIES";
/// How often the busiest workers are re-ranked for their own series.
pub const ENV_WORKER_SERIES_INTERVAL: &str = "ISOLANE_WORKER_SERIES_INTERVAL";
/// How long open connections may finish after SIGTERM.
pub const ENV_SHUTDOWN_GRACE: &str = "ISOLANE_SHUTDOWN_GRACE";
/// `--websocket-drain-grace`.
pub const ENV_WEBSOCKET_DRAIN_GRACE: &str = "ISOLANE_WEBSOCKET_DRAIN_GRACE";
/// Env var for `--websocket-max-message-kib`.
pub const ENV_WEBSOCKET_MAX_MESSAGE_KIB: &str = "ISOLANE_WEBSOCKET_MAX_MESSAGE_KIB";
/// How long a request waits for a live node when there is none.
pub const ENV_NODE_WAIT: &str = "ISOLANE_NODE_WAIT";
/// Env var for `--trusted-proxies` (comma-separated CIDRs).
pub const ENV_TRUSTED_PROXIES: &str = "ISOLANE_TRUSTED_PROXIES";
/// Env var for `--cron`.
pub const ENV_CRON: &str = "ISOLANE_CRON";
/// Env var for `--cron-lease`.
pub const ENV_CRON_LEASE: &str = "ISOLANE_CRON_LEASE";
/// Env var for `--cron-lease-duration`.
pub const ENV_CRON_LEASE_DURATION: &str = "ISOLANE_CRON_LEASE_DURATION";
/// Env var for `--cron-renew-deadline`.
pub const ENV_CRON_RENEW_DEADLINE: &str = "ISOLANE_CRON_RENEW_DEADLINE";
/// Env var for `--cron-retry-period`.
pub const ENV_CRON_RETRY_PERIOD: &str = "ISOLANE_CRON_RETRY_PERIOD";
/// Env var for `--identity`.
pub const ENV_IDENTITY: &str = "ISOLANE_IDENTITY";
/// Env var for `--reserved-host` (comma-separated).
pub const ENV_RESERVED_HOSTS: &str = "ISOLANE_RESERVED_HOSTS";

/// Env var for `--tail-addr`.
pub const ENV_TAIL_ADDR: &str = "ISOLANE_TAIL_ADDR";

/// Env var for `--tail-api-addr`.
pub const ENV_TAIL_API_ADDR: &str = "ISOLANE_TAIL_API_ADDR";
/// Env var for `--tail-api-cert-file`.
pub const ENV_TAIL_API_CERT_FILE: &str = "ISOLANE_TAIL_API_CERT_FILE";
/// Env var for `--tail-api-key-file`.
pub const ENV_TAIL_API_KEY_FILE: &str = "ISOLANE_TAIL_API_KEY_FILE";

/// The namespace of runtime-node Leases unless told otherwise.
pub const DEFAULT_NODES_NAMESPACE: &str = "isolane-system";

/// The router's flags.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "isolane-router",
    version,
    about = "HTTP ingress for Isolane Workers: routes by host and path, places on runtime nodes, calls them over gRPC"
)]
pub struct Args {
    /// Address of the HTTP ingress (HTTP/1.1 and cleartext HTTP/2).
    #[arg(long, env = ENV_LISTEN_ADDR, default_value = "0.0.0.0:8080")]
    pub listen_addr: SocketAddr,

    /// Address of the tail endpoint (`isolane tail`, docs/tail.md), which
    /// streams a Worker's invocations to callers Kubernetes allows `get` on
    /// `workers/tail` in its namespace; unset: no tail endpoint.
    #[arg(long, env = ENV_TAIL_ADDR)]
    pub tail_addr: Option<SocketAddr>,

    /// Address of the router's aggregated API server (HTTPS): the tail API
    /// `tail.isolane.dev/v1alpha1` that the Kubernetes API server proxies
    /// `isolane tail` and `kubectl get --raw` to (docs/tail.md), and the
    /// nodes' pressure as `custom.metrics.k8s.io/v1beta2` for
    /// HorizontalPodAutoscalers (docs/autoscaling.md); it accepts only the
    /// apiserver's front-proxy client certificate. Unset: none.
    #[arg(long, env = ENV_TAIL_API_ADDR, requires_all = ["tail_api_cert_file", "tail_api_key_file"])]
    pub tail_api_addr: Option<SocketAddr>,

    /// The tail API's serving certificate (PEM, with its chain), which the
    /// APIService's caBundle verifies.
    #[arg(long, env = ENV_TAIL_API_CERT_FILE)]
    pub tail_api_cert_file: Option<std::path::PathBuf>,

    /// The tail API's serving key (PEM).
    #[arg(long, env = ENV_TAIL_API_KEY_FILE)]
    pub tail_api_key_file: Option<std::path::PathBuf>,

    /// The HTTPS ingress (docs/tls.md).
    #[command(flatten)]
    pub https: crate::tls::HttpsArgs,

    /// Router worker threads, each with its own event loop and its own
    /// HTTP/2 connections to nodes; 0 means one per available core.
    #[arg(long, env = ENV_WORKERS, default_value_t = 0)]
    pub workers: usize,

    /// Route only the Workers of this namespace; unset routes every namespace.
    #[arg(long, env = ENV_WATCH_NAMESPACE)]
    pub watch_namespace: Option<String>,

    /// Namespace of the runtime-node Leases and of the operator's
    /// host-owner records (the operator's namespace).
    #[arg(long, env = ENV_NODES_NAMESPACE, default_value = DEFAULT_NODES_NAMESPACE)]
    pub nodes_namespace: String,

    /// The class of Workers this installation serves: only Workers whose
    /// `spec.workerClass` names it (`default` also takes those that name
    /// none) are routed; the same as the operator's --worker-class.
    #[arg(long, env = ENV_WORKER_CLASS, default_value = isolane_crds::DEFAULT_WORKER_CLASS)]
    pub worker_class: isolane_crds::WorkerClass,

    /// Deadline of a whole request to a node, body included (e.g. 30s, 500ms).
    #[arg(long, env = ENV_REQUEST_TIMEOUT, default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Deadline for opening a connection to a node.
    #[arg(long, env = ENV_CONNECT_TIMEOUT, default_value = "1s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Largest request body, in bytes, kept in memory so a request can be
    /// retried on another node; larger bodies stream and are never retried.
    #[arg(long, env = ENV_REPLAY_BODY_LIMIT, default_value_t = DEFAULT_REPLAY_LIMIT)]
    pub replay_body_limit: usize,

    /// Bounded-load factor (≥ 1): a node takes a worker's request while its
    /// in-flight requests are under this multiple of its fair share.
    #[arg(long, env = ENV_LOAD_FACTOR, default_value_t = isolane_placement::DEFAULT_LOAD_FACTOR)]
    pub load_factor: f64,

    /// How many Workers (the busiest) get their own per-worker metric series;
    /// the rest share worker="other".
    #[arg(long, env = ENV_MAX_WORKER_SERIES, default_value_t = 50)]
    pub max_worker_series: usize,

    /// How often the busiest Workers are re-ranked for their own series.
    #[arg(long, env = ENV_WORKER_SERIES_INTERVAL, default_value = "30s", value_parser = parse_duration)]
    pub worker_series_interval: Duration,

    /// How long open connections may finish after SIGTERM or SIGINT.
    #[arg(long, env = ENV_SHUTDOWN_GRACE, default_value = "10s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// How long, after SIGTERM or SIGINT, clients' open WebSockets keep
    /// working before they close with 1012 (then they get
    /// `--shutdown-grace` for their closes).
    #[arg(long, env = ENV_WEBSOCKET_DRAIN_GRACE, default_value = "10s", value_parser = parse_duration)]
    pub websocket_drain_grace: Duration,

    /// The largest WebSocket message a client may send, in KiB (Cloudflare's:
    /// 1024); a larger one closes its socket with 1009. The node holds the
    /// Worker's own messages to its `--websocket-max-message-kib`.
    #[arg(long, env = ENV_WEBSOCKET_MAX_MESSAGE_KIB, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=(8 << 10)))]
    pub websocket_max_message_kib: u32,

    /// How long a request that finds no live node (a node pod being
    /// replaced, the fleet restarting) waits for one, within its
    /// `--request-timeout`; 0 answers 503 at once.
    #[arg(long, env = ENV_NODE_WAIT, default_value = "10s", value_parser = parse_duration)]
    pub node_wait: Duration,

    /// A host or domain reserved for one namespace, `host=namespace`
    /// (`*.example.com=team-a` reserves every host under example.com);
    /// repeat the flag or separate with commas. The operator takes the same.
    #[arg(long = "reserved-host", env = ENV_RESERVED_HOSTS, value_delimiter = ',')]
    pub reserved_hosts: Vec<Reservation>,

    /// Peers (CIDRs) whose `X-Forwarded-*`, `Forwarded`, `CF-Connecting-IP`,
    /// `True-Client-IP`, `X-Real-IP` and `X-Request-Id` are kept: the load
    /// balancer or ingress in front of the router. From anyone else they are
    /// replaced by the peer's address, the connection's scheme and a new id.
    #[arg(long, env = ENV_TRUSTED_PROXIES, value_delimiter = ',')]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// Take part in running the Workers' cron schedules: the router holding
    /// the cron Lease (in --nodes-namespace) runs them all.
    #[arg(long, env = ENV_CRON, default_value_t = true, action = clap::ArgAction::Set)]
    pub cron: bool,

    /// Name of the cron Lease.
    #[arg(long, env = ENV_CRON_LEASE, default_value = "isolane-router-cron")]
    pub cron_lease: String,

    /// How long the cron Lease lasts without renewal.
    #[arg(long, env = ENV_CRON_LEASE_DURATION, default_value = "15s", value_parser = parse_duration)]
    pub cron_lease_duration: Duration,

    /// How long the cron leader keeps running ticks without renewing; below
    /// --cron-lease-duration.
    #[arg(long, env = ENV_CRON_RENEW_DEADLINE, default_value = "10s", value_parser = parse_duration)]
    pub cron_renew_deadline: Duration,

    /// How often the cron leader renews and the others retry; below
    /// --cron-renew-deadline.
    #[arg(long, env = ENV_CRON_RETRY_PERIOD, default_value = "2s", value_parser = parse_duration)]
    pub cron_retry_period: Duration,

    /// This router's identity in the cron Lease (default: host name and pid).
    #[arg(long, env = ENV_IDENTITY)]
    pub identity: Option<String>,

    #[command(flatten)]
    pub grpc_tls: MtlsArgs,

    #[command(flatten)]
    pub admin: AdminArgs,
}

/// Why the flags do not make a configuration.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    /// A duration that must be positive is zero.
    #[error("--{flag} must be greater than zero")]
    ZeroDuration {
        /// The flag.
        flag: &'static str,
    },
    /// The load factor is below 1 or not a number.
    #[error("--load-factor must be a number ≥ 1, got {value}")]
    LoadFactor {
        /// What was given.
        value: f64,
    },
    /// A namespace is not a DNS label.
    #[error("--{flag} {value:?} is not a valid namespace name")]
    Namespace {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
    },
    /// Ingress and admin server would share a port.
    #[error("--listen-addr and --admin-addr are both {addr}")]
    SameAddr {
        /// The address.
        addr: SocketAddr,
    },
    /// The cron Lease timings are out of order.
    #[error(
        "cron lease timings must satisfy retry-period < renew-deadline < lease-duration (got {retry:?}, {renew:?}, {lease:?})"
    )]
    CronTimings {
        /// --cron-retry-period.
        retry: Duration,
        /// --cron-renew-deadline.
        renew: Duration,
        /// --cron-lease-duration.
        lease: Duration,
    },
    /// The router↔node TLS flags are incomplete, or the files unusable.
    #[error("router↔node gRPC: {reason}")]
    GrpcSecurity {
        /// Why.
        reason: String,
    },
}

impl ConfigError {
    /// A bounded label.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ZeroDuration { .. } => "zero_duration",
            Self::LoadFactor { .. } => "load_factor",
            Self::Namespace { .. } => "namespace",
            Self::SameAddr { .. } => "same_addr",
            Self::GrpcSecurity { .. } => "grpc_security",
            Self::CronTimings { .. } => "cron_timings",
        }
    }
}

/// The router's validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Address of the HTTP ingress.
    pub listen_addr: SocketAddr,
    /// Address of the admin server.
    pub admin_addr: SocketAddr,
    /// Address of the tail endpoint, if any.
    pub tail_addr: Option<SocketAddr>,
    /// The aggregated API server (the tail and custom metrics APIs), if any.
    pub tail_api: Option<crate::aggregated::ApiServerConfig>,
    /// Log line format.
    pub log_format: LogFormat,
    /// Router worker threads.
    pub workers: NonZeroUsize,
    /// Namespace whose Workers are routed; `None` for all.
    pub watch_namespace: Option<String>,
    /// Namespace of the node Leases.
    pub nodes_namespace: String,
    /// The class of Workers routed.
    pub worker_class: isolane_crds::WorkerClass,
    /// How requests are proxied.
    pub proxy: ProxyConfig,
    /// Workers with their own series.
    pub max_worker_series: usize,
    /// Re-rank interval of the per-worker series.
    pub worker_series_interval: Duration,
    /// Time for open connections to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Hosts reserved for namespaces.
    pub reserved_hosts: Vec<Reservation>,
    /// Peers whose forwarding headers are kept.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Running cron schedules, when enabled.
    pub cron: Option<crate::cron::CronConfig>,
    /// The HTTPS ingress and the redirect to it.
    pub https: crate::tls::HttpsArgs,
}

impl Args {
    /// The flags that stand alone: durations above zero, the load factor,
    /// namespace names, and the listen and admin addresses apart.
    fn check_values(&self) -> Result<(), ConfigError> {
        for (flag, value) in [
            ("request-timeout", self.request_timeout),
            ("connect-timeout", self.connect_timeout),
            ("worker-series-interval", self.worker_series_interval),
        ] {
            if value.is_zero() {
                return Err(ConfigError::ZeroDuration { flag });
            }
        }
        if !(self.load_factor >= 1.0 && self.load_factor.is_finite()) {
            return Err(ConfigError::LoadFactor {
                value: self.load_factor,
            });
        }
        let namespaces = [
            ("nodes-namespace", Some(&self.nodes_namespace)),
            ("watch-namespace", self.watch_namespace.as_ref()),
        ];
        for (flag, value) in namespaces {
            if let Some(value) = value.filter(|v| !is_dns_label(v)) {
                return Err(ConfigError::Namespace {
                    flag,
                    value: value.clone(),
                });
            }
        }
        if self.listen_addr == self.admin.admin_addr {
            return Err(ConfigError::SameAddr {
                addr: self.listen_addr,
            });
        }
        Ok(())
    }

    /// The cron scheduler's election, with `--cron`: retry < renew <
    /// lease, and a lease of a second or more.
    fn cron_config(&self) -> Result<Option<crate::cron::CronConfig>, ConfigError> {
        let (retry, renew, lease) = (
            self.cron_retry_period,
            self.cron_renew_deadline,
            self.cron_lease_duration,
        );
        if !(retry < renew && renew < lease && lease >= Duration::from_secs(1)) {
            return Err(ConfigError::CronTimings {
                retry,
                renew,
                lease,
            });
        }
        Ok(self.cron.then(|| crate::cron::CronConfig {
            leader: isolane_leader::LeaderConfig {
                lease_name: self.cron_lease.clone(),
                identity: self
                    .identity
                    .clone()
                    .unwrap_or_else(|| isolane_leader::default_identity("isolane-router")),
                lease_duration: lease,
                renew_deadline: renew,
                retry_period: retry,
            },
            namespace: self.nodes_namespace.clone(),
        }))
    }

    /// The tail API's address and serving files, when it is asked for
    /// (clap requires the files with the address).
    fn tail_api_config(&self) -> Option<crate::aggregated::ApiServerConfig> {
        Some(crate::aggregated::ApiServerConfig {
            addr: self.tail_api_addr?,
            cert_file: self.tail_api_cert_file.clone()?,
            key_file: self.tail_api_key_file.clone()?,
        })
    }

    /// Checks the flags and resolves defaults (such as the worker count).
    pub fn validate(&self) -> Result<Config, ConfigError> {
        self.check_values()?;
        let security = |reason: String| ConfigError::GrpcSecurity { reason };
        let tls = match self.grpc_tls.clone().validate() {
            Ok(GrpcSecurity::Mtls(files)) => {
                Some(mtls::client_config(&files).map_err(|e| security(e.to_string()))?)
            }
            Ok(GrpcSecurity::Insecure) => None,
            Err(error) => return Err(security(error.to_string())),
        };
        let cron = self.cron_config()?;
        let workers = NonZeroUsize::new(self.workers)
            .unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
        Ok(Config {
            listen_addr: self.listen_addr,
            admin_addr: self.admin.admin_addr,
            tail_addr: self.tail_addr,
            tail_api: self.tail_api_config(),
            log_format: self.admin.log_format,
            workers,
            watch_namespace: self.watch_namespace.clone(),
            nodes_namespace: self.nodes_namespace.clone(),
            worker_class: self.worker_class.clone(),
            proxy: ProxyConfig {
                request_timeout: self.request_timeout,
                load_factor: self.load_factor,
                replay_limit: self.replay_body_limit,
                node_wait: self.node_wait,
                channel: ChannelConfig {
                    connect_timeout: self.connect_timeout,
                    tls,
                    ..ChannelConfig::default()
                },
                // A client must not fire a Worker's ticks in a cluster.
                test_scheduled: false,
                websocket: crate::sockets::SocketLimits {
                    drain_grace: self.websocket_drain_grace,
                    max_message_bytes: usize::try_from(self.websocket_max_message_kib)
                        .unwrap_or(usize::MAX)
                        .saturating_mul(1 << 10),
                    ..crate::sockets::SocketLimits::default()
                },
            },
            max_worker_series: self.max_worker_series,
            worker_series_interval: self.worker_series_interval,
            shutdown_grace: self.shutdown_grace,
            reserved_hosts: self.reserved_hosts.clone(),
            trusted_proxies: self.trusted_proxies.clone(),
            cron,
            https: self.https.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, ConfigError> {
        let mut argv = vec!["isolane-router", "--insecure-grpc"];
        argv.extend_from_slice(args);
        Args::try_parse_from(argv).unwrap().validate()
    }

    #[test]
    fn the_https_ingress_and_its_redirect() {
        let off = parse(&[]).unwrap().https;
        assert_eq!(
            (off.tls_listen_addr, off.redirect_to_https, off.https_port),
            (None, false, 443)
        );
        let on = parse(&[
            "--tls-listen-addr=127.0.0.1:8443",
            "--redirect-to-https",
            "--https-port=8443",
        ])
        .unwrap()
        .https;
        assert_eq!(on.tls_listen_addr, Some("127.0.0.1:8443".parse().unwrap()));
        assert!(on.redirect_to_https);
        assert_eq!(on.https_port, 8443);
        assert!(!off.acme_http01);
        assert!(parse(&["--acme-http01"]).unwrap().https.acme_http01);
        // A redirect to nowhere is refused.
        let argv = ["isolane-router", "--insecure-grpc", "--redirect-to-https"];
        assert!(Args::try_parse_from(argv).is_err());
    }

    #[test]
    fn the_tail_api_needs_its_serving_files() {
        assert!(parse(&[]).unwrap().tail_api.is_none());
        let api = parse(&[
            "--tail-api-addr=127.0.0.1:8443",
            "--tail-api-cert-file=/tls/tls.crt",
            "--tail-api-key-file=/tls/tls.key",
        ])
        .unwrap()
        .tail_api
        .unwrap();
        assert_eq!(api.addr, "127.0.0.1:8443".parse().unwrap());
        assert_eq!(api.key_file, std::path::Path::new("/tls/tls.key"));
        let without = Args::try_parse_from([
            "isolane-router",
            "--insecure-grpc",
            "--tail-api-addr=127.0.0.1:8443",
        ]);
        assert!(without.is_err());
    }

    #[test]
    fn defaults() {
        let config = parse(&[]).unwrap();
        assert_eq!(config.listen_addr, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(config.nodes_namespace, "isolane-system");
        assert_eq!(config.watch_namespace, None);
        assert_eq!(config.worker_class.as_str(), "default");
        assert_eq!(config.proxy.request_timeout, Duration::from_secs(30));
        assert_eq!(config.proxy.replay_limit, 64 * 1024);
        assert_eq!(config.proxy.load_factor, 1.25);
        assert_eq!(config.max_worker_series, 50);
        assert_eq!(config.proxy.websocket.drain_grace, Duration::from_secs(10));
        assert!(config.workers.get() >= 1);
    }

    #[test]
    fn flags_override_defaults() {
        let config = parse(&[
            "--listen-addr",
            "127.0.0.1:0",
            "--workers",
            "3",
            "--watch-namespace",
            "team-a",
            "--request-timeout",
            "500ms",
            "--max-worker-series",
            "5",
            "--worker-class",
            "staging",
        ])
        .unwrap();
        assert_eq!(config.workers.get(), 3);
        assert_eq!(config.worker_class.as_str(), "staging");
        assert_eq!(config.watch_namespace.as_deref(), Some("team-a"));
        assert_eq!(config.proxy.request_timeout, Duration::from_millis(500));
        assert_eq!(config.max_worker_series, 5);
    }

    #[test]
    fn invalid_values_are_refused() {
        let kind = |args: &[&str]| parse(args).unwrap_err().kind();
        assert_eq!(kind(&["--request-timeout", "0s"]), "zero_duration");
        assert_eq!(kind(&["--load-factor", "0.5"]), "load_factor");
        assert_eq!(kind(&["--load-factor", "NaN"]), "load_factor");
        assert_eq!(kind(&["--nodes-namespace", "Not_A_Name"]), "namespace");
        assert_eq!(kind(&["--watch-namespace", "team-"]), "namespace");
        assert_eq!(
            kind(&[
                "--listen-addr",
                "0.0.0.0:9090",
                "--admin-addr",
                "0.0.0.0:9090"
            ]),
            "same_addr"
        );
        assert!(Args::try_parse_from(["isolane-router", "--request-timeout", "soon"]).is_err());
        assert!(Args::try_parse_from(["isolane-router", "--worker-class", "Staging"]).is_err());
        let secure = |args: &[&str]| {
            let mut argv = vec!["isolane-router"];
            argv.extend_from_slice(args);
            Args::try_parse_from(argv)
                .unwrap()
                .validate()
                .unwrap_err()
                .kind()
        };
        assert_eq!(secure(&[]), "grpc_security");
        assert_eq!(secure(&["--grpc-tls-ca", "/nonexistent"]), "grpc_security");
        assert_eq!(
            secure(&[
                "--grpc-tls-cert",
                "/nonexistent/c",
                "--grpc-tls-key",
                "/nonexistent/k",
                "--grpc-tls-ca",
                "/nonexistent/ca"
            ]),
            "grpc_security"
        );
    }

    #[test]
    fn every_flag_names_its_environment_variable() {
        let help = <Args as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        for env in [
            ENV_LISTEN_ADDR,
            ENV_WORKERS,
            ENV_WATCH_NAMESPACE,
            ENV_NODES_NAMESPACE,
            ENV_REQUEST_TIMEOUT,
            ENV_CONNECT_TIMEOUT,
            ENV_REPLAY_BODY_LIMIT,
            ENV_LOAD_FACTOR,
            ENV_MAX_WORKER_SERIES,
            ENV_WORKER_SERIES_INTERVAL,
            ENV_SHUTDOWN_GRACE,
            ENV_NODE_WAIT,
            ENV_RESERVED_HOSTS,
            ENV_TRUSTED_PROXIES,
            isolane_proto::mtls::TLS_CERT_ENV,
            isolane_proto::mtls::TLS_KEY_ENV,
            isolane_proto::mtls::TLS_CA_ENV,
            isolane_proto::mtls::INSECURE_ENV,
            isolane_telemetry::ADMIN_ADDR_ENV,
            isolane_telemetry::LOG_FORMAT_ENV,
        ] {
            assert!(help.contains(env), "{env} missing from --help");
        }
    }
}
