//! Command-line flags (each with an `ISOLANE_*` environment fallback), parsed and
//! validated into a [`Config`] before any port is bound.
//!
//! `main` exits with 64 (`EX_USAGE`) when [`Args::validate`] fails. Tests build a
//! [`Config`] (or pass flags to the binary) instead of setting the environment.

pub use isolane_telemetry::parse_duration;
use isolane_telemetry::{is_dns_label, is_dns_subdomain};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use isolane_telemetry::AdminArgs;

/// Namespace of the bundles, the leader Lease and the runtime-node Leases.
pub const ENV_NAMESPACE: &str = "ISOLANE_NAMESPACE";
/// Address of the admission webhook (HTTPS); unset disables it.
pub const ENV_WEBHOOK_ADDR: &str = "ISOLANE_WEBHOOK_ADDR";
/// PEM certificate chain of the webhook.
pub const ENV_WEBHOOK_CERT: &str = "ISOLANE_WEBHOOK_CERT";
/// PEM private key of the webhook.
pub const ENV_WEBHOOK_KEY: &str = "ISOLANE_WEBHOOK_KEY";
/// Whether to elect a leader (`true`) or act alone (`false`).
pub const ENV_LEADER_ELECTION: &str = "ISOLANE_LEADER_ELECTION";
/// Name of the leader Lease.
pub const ENV_LEADER_LEASE: &str = "ISOLANE_LEADER_LEASE";
/// Duration of the leader Lease.
pub const ENV_LEASE_DURATION: &str = "ISOLANE_LEASE_DURATION";
/// How long a leader keeps acting without a successful renewal.
pub const ENV_RENEW_DEADLINE: &str = "ISOLANE_RENEW_DEADLINE";
/// How often the leader renews and a standby retries.
pub const ENV_RETRY_PERIOD: &str = "ISOLANE_RETRY_PERIOD";
/// Identity in the leader Lease (default: host name and pid).
pub const ENV_IDENTITY: &str = "ISOLANE_IDENTITY";
/// How many Workers are reconciled at once.
pub const ENV_CONCURRENCY: &str = "ISOLANE_CONCURRENCY";
/// How often node Leases are re-checked for expiry.
pub const ENV_MEMBERSHIP_INTERVAL: &str = "ISOLANE_MEMBERSHIP_INTERVAL";
/// Requeue of a Worker whose reference is missing (the watch usually wins).
pub const ENV_MISSING_REFERENCE_RETRY: &str = "ISOLANE_MISSING_REFERENCE_RETRY";
/// Periodic re-reconcile of every Worker.
pub const ENV_RESYNC: &str = "ISOLANE_RESYNC";
/// How often queue backlogs and workflow instances are written to status.
pub const ENV_BACKLOG_INTERVAL: &str = "ISOLANE_BACKLOG_INTERVAL";
/// Env var for `--reserved-host` (comma-separated).
pub const ENV_RESERVED_HOSTS: &str = "ISOLANE_RESERVED_HOSTS";
/// How long a host stays its namespace's after its last Worker on it goes.
pub const ENV_HOST_RELEASE_GRACE: &str = "ISOLANE_HOST_RELEASE_GRACE";
/// Registries (host or host:port) reached over plain HTTP rather than HTTPS.
pub const ENV_PLAIN_HTTP_REGISTRIES: &str = "ISOLANE_PLAIN_HTTP_REGISTRIES";
/// Registries bundles may come from (`--bundle-registry`, comma-separated).
pub const ENV_BUNDLE_REGISTRIES: &str = "ISOLANE_BUNDLE_REGISTRIES";
/// A PEM bundle of CAs trusted for registries' certificates.
pub const ENV_BUNDLE_REGISTRY_CA: &str = "ISOLANE_BUNDLE_REGISTRY_CA";
/// The class of Workers this installation serves (`spec.workerClass`).
pub const ENV_WORKER_CLASS: &str = "ISOLANE_WORKER_CLASS";

/// The operator's flags.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "isolane-operator",
    version,
    about = "Reconciles Isolane Workers into bundle Secrets and status; serves the admission webhook"
)]
pub struct Args {
    /// Namespace of the bundle Secrets, the leader Lease and the runtime-node Leases.
    #[arg(long, env = ENV_NAMESPACE, default_value = "isolane-system")]
    pub namespace: String,

    /// The class of Workers this installation serves: those whose
    /// `spec.workerClass` names it (`default` also takes the Workers that
    /// name none); every other Worker is left to the installation of its
    /// class. The router of the installation takes the same.
    #[arg(long, env = ENV_WORKER_CLASS, default_value = isolane_crds::DEFAULT_WORKER_CLASS)]
    pub worker_class: isolane_crds::WorkerClass,

    /// Admin server address and log format (`ISOLANE_ADMIN_ADDR`, `ISOLANE_LOG_FORMAT`;
    /// the log filter comes from `ISOLANE_LOG` or `RUST_LOG`).
    #[command(flatten)]
    pub admin: AdminArgs,

    /// Address of the validating admission webhook (HTTPS); unset disables it.
    #[arg(long, env = ENV_WEBHOOK_ADDR)]
    pub webhook_addr: Option<SocketAddr>,

    /// PEM certificate chain for the webhook; required with --webhook-addr.
    #[arg(long, env = ENV_WEBHOOK_CERT)]
    pub webhook_cert: Option<PathBuf>,

    /// PEM private key for the webhook; required with --webhook-addr.
    #[arg(long, env = ENV_WEBHOOK_KEY)]
    pub webhook_key: Option<PathBuf>,

    /// Elect a leader through a Lease so that only one replica acts.
    #[arg(long, env = ENV_LEADER_ELECTION, default_value_t = true, action = ArgAction::Set)]
    pub leader_election: bool,

    /// Name of the leader Lease (in --namespace).
    #[arg(long, env = ENV_LEADER_LEASE, default_value = "isolane-operator-leader")]
    pub leader_lease: String,

    /// How long a leader Lease lasts without renewal (e.g. 15s, 1500ms).
    #[arg(long, env = ENV_LEASE_DURATION, default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,

    /// How long the leader keeps acting without a successful renewal; below --lease-duration.
    #[arg(long, env = ENV_RENEW_DEADLINE, default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,

    /// How often the leader renews and a standby retries; below --renew-deadline.
    #[arg(long, env = ENV_RETRY_PERIOD, default_value = "5s", value_parser = parse_duration)]
    pub retry_period: Duration,

    /// This replica's identity in the leader Lease (default: host name and pid).
    #[arg(long, env = ENV_IDENTITY)]
    pub identity: Option<String>,

    /// How many Workers are reconciled at once.
    #[arg(long, env = ENV_CONCURRENCY, default_value_t = 16)]
    pub concurrency: u16,

    /// How often runtime-node Leases are re-checked for expiry.
    #[arg(long, env = ENV_MEMBERSHIP_INTERVAL, default_value = "2s", value_parser = parse_duration)]
    pub membership_interval: Duration,

    /// Requeue of a Worker whose ConfigMap or Secret is missing (the watch usually comes first).
    #[arg(long, env = ENV_MISSING_REFERENCE_RETRY, default_value = "60s", value_parser = parse_duration)]
    pub missing_reference_retry: Duration,

    /// Periodic re-reconcile of every Ready Worker.
    #[arg(long, env = ENV_RESYNC, default_value = "10m", value_parser = parse_duration)]
    pub resync: Duration,

    /// How often the leader reads the queues' backlogs and the workflows'
    /// instances from the durable store into the status of the Workers
    /// that consume and run them (`status.queues`, `status.workflows`);
    /// `0s`: never. Needs the store (--storage-postgres-url).
    #[arg(long, env = ENV_BACKLOG_INTERVAL, default_value = "15s", value_parser = parse_duration)]
    pub backlog_interval: Duration,

    /// A host or domain reserved for one namespace, `host=namespace`
    /// (`*.example.com=team-a` reserves every host under example.com);
    /// repeat the flag or separate with commas. The router takes the same.
    #[arg(long = "reserved-host", env = ENV_RESERVED_HOSTS, value_delimiter = ',')]
    pub reserved_hosts: Vec<isolane_worker::Reservation>,

    /// How long a host stays its namespace's after the last of its Workers
    /// claiming it goes (e.g. 24h): no other namespace gets it meanwhile,
    /// unless an admin releases it (docs/operator.md).
    #[arg(long, env = ENV_HOST_RELEASE_GRACE, default_value = "24h", value_parser = parse_duration)]
    pub host_release_grace: Duration,

    #[command(flatten)]
    pub certificates: crate::certificates::CertificateArgs,

    /// A registry (host or host:port) whose bundles are pulled over plain
    /// HTTP rather than HTTPS, for a registry on loopback; repeat the flag
    /// or separate with commas. Runtime nodes take the same.
    #[arg(long = "plain-http-registry", env = ENV_PLAIN_HTTP_REGISTRIES, value_delimiter = ',')]
    pub plain_http_registries: Vec<String>,

    /// A registry Workers' bundles (`spec.bundle`) may come from: `host`,
    /// `host:port` or `*.domain`; repeat the flag or separate with commas.
    /// None listed: a Worker naming a bundle is refused (BundleInvalid), and
    /// no registry is contacted. Runtime nodes take the same.
    #[arg(long = "bundle-registry", env = ENV_BUNDLE_REGISTRIES, value_delimiter = ',')]
    pub bundle_registries: Vec<String>,

    /// A PEM bundle of CA certificates trusted for registries' HTTPS
    /// certificates besides the public web PKI roots (a registry whose
    /// certificate a private CA signs). Runtime nodes take the same.
    #[arg(long, env = ENV_BUNDLE_REGISTRY_CA)]
    pub bundle_registry_ca: Option<PathBuf>,

    /// The KV store's database: the operator applies its schema migrations
    /// at start (runtime nodes only check them).
    #[command(flatten)]
    pub storage: isolane_storage::PostgresArgs,

    /// The nodes' S3-compatible store for R2 buckets (their
    /// `--r2-s3-endpoint`): set, the webhook admits R2 bindings; unset, it
    /// refuses them (docs/r2.md).
    #[arg(long, env = "ISOLANE_R2_S3_ENDPOINT", value_name = "URL")]
    pub r2_s3_endpoint: Option<String>,
}

/// Why the flags do not make a valid configuration.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The namespace is not a DNS label.
    #[error("--namespace {0:?} is not a valid namespace name")]
    Namespace(String),
    /// The leader Lease name is not a DNS subdomain.
    #[error("--leader-lease {0:?} is not a valid Lease name")]
    LeaseName(String),
    /// The webhook needs both a certificate and a key.
    #[error("--webhook-addr needs --webhook-cert and --webhook-key")]
    WebhookTls,
    /// The leader timings are out of order.
    #[error(
        "leader timings must satisfy retry-period < renew-deadline < lease-duration and lease-duration >= 1s (got {retry:?}, {renew:?}, {lease:?})"
    )]
    LeaderTimings {
        retry: Duration,
        renew: Duration,
        lease: Duration,
    },
    /// A duration that must be positive is zero.
    #[error("--{0} must be greater than zero")]
    ZeroDuration(&'static str),
    /// Concurrency of zero would reconcile nothing.
    #[error("--concurrency must be at least 1")]
    Concurrency,
    /// A `--bundle-registry` entry is malformed.
    #[error("--bundle-registry {0:?} is not host, host:port or *.domain")]
    BundleRegistry(String),
    /// `--bundle-registry-ca` cannot be read, or holds no certificate.
    #[error("--bundle-registry-ca {path}: {detail}")]
    RegistryCa { path: String, detail: String },
}

impl ConfigError {
    /// A short, bounded name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Namespace(_) => "namespace",
            Self::LeaseName(_) => "lease_name",
            Self::WebhookTls => "webhook_tls",
            Self::LeaderTimings { .. } => "leader_timings",
            Self::ZeroDuration(_) => "zero_duration",
            Self::Concurrency => "concurrency",
            Self::BundleRegistry(_) => "bundle_registry",
            Self::RegistryCa { .. } => "registry_ca",
        }
    }
}

/// The webhook's listener and TLS material.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookConfig {
    /// Where to listen.
    pub addr: SocketAddr,
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

pub use isolane_leader::LeaderConfig;

/// The validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Namespace of bundles, the leader Lease and node Leases.
    pub namespace: String,
    /// The class of Workers reconciled (the others are another
    /// installation's).
    pub worker_class: isolane_crds::WorkerClass,
    /// Admin server address.
    pub admin_addr: SocketAddr,
    /// The webhook, if enabled.
    pub webhook: Option<WebhookConfig>,
    /// Leader election, if enabled.
    pub leader: Option<LeaderConfig>,
    /// Concurrent reconciles.
    pub concurrency: u16,
    /// Node Lease expiry check interval.
    pub membership_interval: Duration,
    /// Requeue after a missing reference.
    pub missing_reference_retry: Duration,
    /// Periodic re-reconcile.
    pub resync: Duration,
    /// How often `status.queues` and `status.workflows` are refreshed;
    /// `None`: never.
    pub backlog_interval: Option<Duration>,
    /// Hosts reserved for namespaces.
    pub reserved_hosts: Vec<isolane_worker::Reservation>,
    /// How long a host stays held after its namespace's last claim goes.
    pub host_release_grace: Duration,
    /// cert-manager Certificates for admitted hosts, when asked for.
    pub certificates: Option<crate::certificates::CertificateSettings>,
    /// The KV store, whose schema the operator migrates at start.
    pub storage: Option<isolane_storage::PostgresSettings>,
    /// Whether the nodes serve R2 buckets (an S3-compatible store).
    pub r2: bool,
    /// Registries reached over plain HTTP.
    pub plain_http_registries: Vec<String>,
    /// Registries bundles may come from.
    pub bundle_registries: isolane_artifact::AllowedRegistries,
    /// `--bundle-registry-ca`'s certificates.
    pub registry_ca: Option<isolane_artifact::RegistryCa>,
}

impl Args {
    /// `--bundle-registry`, each entry checked.
    fn bundle_registries(&self) -> Result<isolane_artifact::AllowedRegistries, ConfigError> {
        isolane_artifact::AllowedRegistries::listed(&self.bundle_registries).map_err(|error| {
            match error {
                isolane_artifact::Error::BadAllowedRegistry { entry } => {
                    ConfigError::BundleRegistry(entry)
                }
                other => ConfigError::BundleRegistry(other.to_string()),
            }
        })
    }

    /// `--bundle-registry-ca`'s certificates, read and decoded.
    fn registry_ca(&self) -> Result<Option<isolane_artifact::RegistryCa>, ConfigError> {
        let Some(path) = &self.bundle_registry_ca else {
            return Ok(None);
        };
        let refused = |detail: String| ConfigError::RegistryCa {
            path: path.display().to_string(),
            detail,
        };
        let pem = std::fs::read(path).map_err(|error| refused(error.to_string()))?;
        isolane_artifact::RegistryCa::from_pem(&pem)
            .map(Some)
            .map_err(|error| refused(error.to_string()))
    }

    /// The admission webhook's server: an address needs its certificate
    /// and key.
    fn webhook(&self) -> Result<Option<WebhookConfig>, ConfigError> {
        match (&self.webhook_addr, &self.webhook_cert, &self.webhook_key) {
            (None, _, _) => Ok(None),
            (Some(addr), Some(cert), Some(key)) => Ok(Some(WebhookConfig {
                addr: *addr,
                cert: cert.clone(),
                key: key.clone(),
            })),
            (Some(_), _, _) => Err(ConfigError::WebhookTls),
        }
    }

    /// The leader election's settings, when it is on.
    fn leader(
        &self,
        (retry, renew, lease): (Duration, Duration, Duration),
    ) -> Option<LeaderConfig> {
        self.leader_election.then(|| LeaderConfig {
            lease_name: self.leader_lease.clone(),
            identity: self
                .identity
                .clone()
                .unwrap_or_else(|| isolane_leader::default_identity("isolane-operator")),
            lease_duration: lease,
            renew_deadline: renew,
            retry_period: retry,
        })
    }

    /// Validates the flags into a [`Config`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        if !is_dns_label(&self.namespace) {
            return Err(ConfigError::Namespace(self.namespace.clone()));
        }
        if !is_dns_subdomain(&self.leader_lease) {
            return Err(ConfigError::LeaseName(self.leader_lease.clone()));
        }
        let webhook = self.webhook()?;
        let (retry, renew, lease) = (self.retry_period, self.renew_deadline, self.lease_duration);
        if retry.is_zero() || retry >= renew || renew >= lease || lease < Duration::from_secs(1) {
            return Err(ConfigError::LeaderTimings {
                retry,
                renew,
                lease,
            });
        }
        for (name, value) in [
            ("membership-interval", self.membership_interval),
            ("missing-reference-retry", self.missing_reference_retry),
            ("resync", self.resync),
            ("host-release-grace", self.host_release_grace),
        ] {
            if value.is_zero() {
                return Err(ConfigError::ZeroDuration(name));
            }
        }
        if self.concurrency == 0 {
            return Err(ConfigError::Concurrency);
        }
        let leader = self.leader((retry, renew, lease));
        Ok(Config {
            namespace: self.namespace.clone(),
            worker_class: self.worker_class.clone(),
            admin_addr: self.admin.admin_addr,
            webhook,
            leader,
            concurrency: self.concurrency,
            membership_interval: self.membership_interval,
            missing_reference_retry: self.missing_reference_retry,
            resync: self.resync,
            backlog_interval: (!self.backlog_interval.is_zero()).then_some(self.backlog_interval),
            reserved_hosts: self.reserved_hosts.clone(),
            host_release_grace: self.host_release_grace,
            certificates: self.certificates.settings(&self.reserved_hosts),
            storage: self.storage.settings(),
            r2: self.r2_s3_endpoint.is_some(),
            plain_http_registries: self.plain_http_registries.clone(),
            bundle_registries: self.bundle_registries()?,
            registry_ca: self.registry_ca()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Args {
        let mut argv = vec!["isolane-operator"];
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).unwrap()
    }

    #[test]
    fn defaults_validate() {
        let config = args(&[]).validate().unwrap();
        assert_eq!(config.namespace, "isolane-system");
        assert_eq!(config.worker_class.as_str(), "default");
        assert_eq!(config.webhook, None);
        let leader = config.leader.unwrap();
        assert_eq!(leader.lease_name, "isolane-operator-leader");
        assert_eq!(leader.lease_duration, Duration::from_secs(15));
        assert_eq!(leader.retry_period, Duration::from_secs(5));
        assert_eq!(config.host_release_grace, Duration::from_secs(24 * 3600));
    }

    #[test]
    fn invalid_settings_are_refused() {
        let cases: [(&[&str], &str); 7] = [
            (&["--namespace", "Bad_NS"], "namespace"),
            (&["--leader-lease=-x"], "lease_name"),
            (&["--webhook-addr", "127.0.0.1:8443"], "webhook_tls"),
            (&["--renew-deadline", "20s"], "leader_timings"),
            (&["--resync", "0s"], "zero_duration"),
            (&["--concurrency", "0"], "concurrency"),
            (
                &["--bundle-registry", "https://registry.example"],
                "bundle_registry",
            ),
        ];
        for (flags, kind) in cases {
            assert_eq!(
                args(flags).validate().unwrap_err().kind(),
                kind,
                "{flags:?}"
            );
        }
        let config = args(&[
            "--leader-election",
            "false",
            "--lease-duration",
            "2s",
            "--renew-deadline",
            "1500ms",
            "--retry-period",
            "500ms",
        ])
        .validate()
        .unwrap();
        assert_eq!(config.leader, None);
    }

    #[test]
    fn the_worker_class_is_a_dns_label() {
        let config = args(&["--worker-class", "staging"]).validate().unwrap();
        assert_eq!(config.worker_class.as_str(), "staging");
        for bad in ["Staging", "a.b", ""] {
            let argv = ["isolane-operator", "--worker-class", bad];
            assert!(Args::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_registry_ca_is_read_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let ca = isolane_testenv::TestCa::new("registry-ca").unwrap();
        let good = dir.path().join("ca.crt");
        std::fs::write(&good, ca.cert_pem()).unwrap();
        let garbage = dir.path().join("garbage.crt");
        std::fs::write(&garbage, "not a certificate").unwrap();
        let flag = |path: &std::path::Path| format!("--bundle-registry-ca={}", path.display());
        let config = args(&[&flag(&good)]).validate().unwrap();
        assert!(config.registry_ca.is_some());
        assert!(args(&[]).validate().unwrap().registry_ca.is_none());
        for bad in [garbage, dir.path().join("missing.crt")] {
            let error = args(&[&flag(&bad)]).validate().unwrap_err();
            assert_eq!(error.kind(), "registry_ca", "{error}");
        }
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("5x").is_err());
    }
}
