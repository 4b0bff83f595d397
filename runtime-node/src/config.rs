//! Flags and environment variables ([`Args`]), validated into a [`Config`]
//! before anything binds a port. Invalid configuration exits 64 (`EX_USAGE`).

pub use isolane_telemetry::parse_duration;
use isolane_telemetry::{is_dns_label, is_dns_subdomain};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use isolane_engine::{EngineConfig, PoolMode};
use isolane_proto::mtls::{GrpcSecurity, MtlsArgs, MtlsArgsError, MtlsError};
use isolane_telemetry::AdminArgs;

mod objects;
mod websocket;
pub use objects::ObjectArgs;
pub use websocket::WebSocketArgs;

/// Env var for `--namespace`.
pub const NAMESPACE_ENV: &str = "ISOLANE_NAMESPACE";
/// Env var for `--node-name`.
pub const NODE_NAME_ENV: &str = "ISOLANE_NODE_NAME";
/// Env var for `--grpc-addr`.
pub const GRPC_ADDR_ENV: &str = "ISOLANE_GRPC_ADDR";
/// Env var for `--advertise-host`.
pub const ADVERTISE_HOST_ENV: &str = "ISOLANE_ADVERTISE_HOST";
/// Env var for `--listeners`.
pub const LISTENERS_ENV: &str = "ISOLANE_LISTENERS";
/// Env var for `--threads`.
pub const THREADS_ENV: &str = "ISOLANE_THREADS";
/// Env var for `--pin-threads`.
pub const PIN_THREADS_ENV: &str = "ISOLANE_PIN_THREADS";
/// Env var for `--pool-mode`.
pub const POOL_MODE_ENV: &str = "ISOLANE_POOL_MODE";
/// Env var for `--isolates-per-thread`.
pub const ISOLATES_PER_THREAD_ENV: &str = "ISOLANE_ISOLATES_PER_THREAD";
/// Env var for `--heap-budget-mib`.
pub const HEAP_BUDGET_MIB_ENV: &str = "ISOLANE_HEAP_BUDGET_MIB";
/// Env var for `--spare-isolates`.
pub const SPARE_ISOLATES_ENV: &str = "ISOLANE_SPARE_ISOLATES";
/// Env var for `--max-inflight-per-thread`.
pub const MAX_INFLIGHT_ENV: &str = "ISOLANE_MAX_INFLIGHT_PER_THREAD";
/// Env var for `--worker-slots`.
pub const WORKER_SLOTS_ENV: &str = "ISOLANE_WORKER_SLOTS";
/// Env var for `--max-cpu-ms`.
pub const MAX_CPU_MS_ENV: &str = "ISOLANE_MAX_CPU_MS";
/// `--max-request-body-mib`.
pub const MAX_REQUEST_BODY_MIB_ENV: &str = "ISOLANE_MAX_REQUEST_BODY_MIB";
/// Env var for `--cache-mib`.
pub const CACHE_MIB_ENV: &str = "ISOLANE_CACHE_MIB";
/// Env var for `--cache-namespace-mib`.
pub const CACHE_NAMESPACE_MIB_ENV: &str = "ISOLANE_CACHE_NAMESPACE_MIB";
/// Env var for `--kv-cache-mib`.
pub const KV_CACHE_MIB_ENV: &str = "ISOLANE_KV_CACHE_MIB";
/// Env var for `--kv-namespace-max-mib`.
pub const KV_NAMESPACE_MAX_MIB_ENV: &str = "ISOLANE_KV_NAMESPACE_MAX_MIB";
/// Env var for `--object-max-mib`.
pub const OBJECT_MAX_MIB_ENV: &str = "ISOLANE_OBJECT_MAX_MIB";
/// Env var for `--queue-namespace-max-messages`.
pub const QUEUE_NAMESPACE_MAX_MESSAGES_ENV: &str = "ISOLANE_QUEUE_NAMESPACE_MAX_MESSAGES";
/// Env var for `--queue-namespace-max-mib`.
pub const QUEUE_NAMESPACE_MAX_MIB_ENV: &str = "ISOLANE_QUEUE_NAMESPACE_MAX_MIB";
/// Env var for `--queue-retention-secs`.
pub const QUEUE_RETENTION_SECS_ENV: &str = "ISOLANE_QUEUE_RETENTION_SECS";
/// Env var for `--storage-namespace-ops`.
pub const STORAGE_NAMESPACE_OPS_ENV: &str = "ISOLANE_STORAGE_NAMESPACE_OPS";
/// Env var for `--egress-allow` (comma-separated CIDRs).
pub const EGRESS_ALLOW_ENV: &str = "ISOLANE_EGRESS_ALLOW";
/// Env var for `--egress-deny` (comma-separated CIDRs).
pub const EGRESS_DENY_ENV: &str = "ISOLANE_EGRESS_DENY";
/// Env var for `--fetch-extra-ca`.
pub const FETCH_EXTRA_CA_ENV: &str = "ISOLANE_FETCH_EXTRA_CA";
/// Env var for `--dns-over-https`.
pub const DNS_OVER_HTTPS_ENV: &str = "ISOLANE_DNS_OVER_HTTPS";

/// A DNS-over-HTTPS server's URL (`--dns-over-https`): `https://` or
/// `http://` with a host.
pub fn parse_dns_over_https(value: &str) -> Result<String, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|error| format!("{value:?} is not a URL: {error}"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("https" | "http"), Some(_)) => Ok(value.to_owned()),
        _ => Err(format!("{value:?} is not an https:// or http:// URL")),
    }
}

/// Env var for `--bundle-registry-ca`.
pub const BUNDLE_REGISTRY_CA_ENV: &str = "ISOLANE_BUNDLE_REGISTRY_CA";
/// Env var for `--lease-duration`.
pub const LEASE_DURATION_ENV: &str = "ISOLANE_LEASE_DURATION";
/// Env var for `--drain-timeout`.
pub const DRAIN_TIMEOUT_ENV: &str = "ISOLANE_DRAIN_TIMEOUT";
/// Env var for `--websocket-drain-grace`.
pub const WEBSOCKET_DRAIN_GRACE_ENV: &str = "ISOLANE_WEBSOCKET_DRAIN_GRACE";
/// Env var for `--revision-wait`.
pub const REVISION_WAIT_ENV: &str = "ISOLANE_REVISION_WAIT";
/// Env var for `--bundle-revisions`.
pub const BUNDLE_REVISIONS_ENV: &str = "ISOLANE_BUNDLE_REVISIONS";
/// Env var for `--bundle-cache-dir`.
pub const BUNDLE_CACHE_DIR_ENV: &str = "ISOLANE_BUNDLE_CACHE_DIR";
/// Env var for `--snapshot-cache-dir` (`isolane dev` takes it too).
pub const SNAPSHOT_CACHE_DIR_ENV: &str = "ISOLANE_SNAPSHOT_CACHE_DIR";
/// Env var for `--state-dir`.
pub const STATE_DIR_ENV: &str = "ISOLANE_STATE_DIR";
/// Env var for `--bundle-cache-mib`.
pub const BUNDLE_CACHE_MIB_ENV: &str = "ISOLANE_BUNDLE_CACHE_MIB";
/// Env var for `--code-cache-mib`.
pub const CODE_CACHE_MIB_ENV: &str = "ISOLANE_CODE_CACHE_MIB";
/// Env var for `--bundle-registry`.
pub const BUNDLE_REGISTRIES_ENV: &str = "ISOLANE_BUNDLE_REGISTRIES";

/// Env var for `--plain-http-registry`.
pub const PLAIN_HTTP_REGISTRIES_ENV: &str = "ISOLANE_PLAIN_HTTP_REGISTRIES";

/// The namespace a node watches for bundles and writes its Lease in.
pub const DEFAULT_NAMESPACE: &str = "isolane-system";
/// Where the gRPC server listens unless told otherwise.
pub const DEFAULT_GRPC_ADDR: &str = "0.0.0.0:7070";

/// How the gRPC server meets the engine threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ListenerMode {
    /// One listener per engine thread, served on that engine thread's own
    /// runtime; the Lease lists one endpoint per thread so the router
    /// connects straight to the thread that runs the worker.
    #[default]
    PerThread,
    /// One listener for every thread, served by a multi-threaded runtime that
    /// hands each request to its engine thread.
    Single,
}

impl ListenerMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            ListenerMode::PerThread => "per-thread",
            ListenerMode::Single => "single",
        }
    }
}

impl fmt::Display for ListenerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `isolane-node`: runs workers from the bundle Secrets of its namespace.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "isolane-node", version, about, long_about = None)]
pub struct Args {
    /// Namespace whose bundle Secrets (isolane.dev/bundle=true) the node
    /// serves and where it holds its Lease.
    #[arg(long, env = NAMESPACE_ENV, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,

    /// The node's name: its Lease's name. Default: the hostname.
    #[arg(long, env = NODE_NAME_ENV)]
    pub node_name: Option<String>,

    /// Address of the gRPC server. With `--listeners per-thread`, thread i
    /// listens on this port + i (port 0: each picks a free port).
    #[arg(long, env = GRPC_ADDR_ENV, default_value = DEFAULT_GRPC_ADDR)]
    pub grpc_addr: SocketAddr,

    /// Host (name or IP) the router reaches this node at, written into the
    /// Lease with the bound ports. Default: the --grpc-addr IP when it is not
    /// unspecified, else the node name.
    #[arg(long, env = ADVERTISE_HOST_ENV)]
    pub advertise_host: Option<String>,

    /// One gRPC listener per engine thread, or one for all.
    #[arg(long, env = LISTENERS_ENV, value_enum, default_value_t = ListenerMode::default())]
    pub listeners: ListenerMode,

    /// Engine threads; 0 means one per core in the process's affinity mask.
    #[arg(long, env = THREADS_ENV, default_value_t = 0)]
    pub threads: usize,

    /// Pin each engine thread (and its listener) to a core.
    #[arg(long, env = PIN_THREADS_ENV, default_value_t = true, action = clap::ArgAction::Set)]
    pub pin_threads: bool,

    /// Isolate pooling: a new isolate per request, one global pool, or
    /// thread-local pools.
    #[arg(long, env = POOL_MODE_ENV, default_value = "pinned", value_parser = parse_pool_mode)]
    pub pool_mode: PoolMode,

    /// Warm isolates kept per thread at most (`warm_set.rs`).
    #[arg(long, env = ISOLATES_PER_THREAD_ENV, default_value_t = 100)]
    pub isolates_per_thread: usize,

    /// Heap the warm isolates of one thread may hold together, in MiB.
    #[arg(long, env = HEAP_BUDGET_MIB_ENV, default_value_t = 1024)]
    pub heap_budget_mib: usize,

    /// The most blank isolates kept ready per thread: as many as the thread
    /// loaded new workers in the last second, at least one (0: none).
    #[arg(long, env = SPARE_ISOLATES_ENV, default_value_t = 4)]
    pub spare_isolates: usize,

    /// Requests in flight per thread (including streaming bodies) before new
    /// ones are refused with RESOURCE_EXHAUSTED.
    #[arg(long, env = MAX_INFLIGHT_ENV, default_value_t = 256)]
    pub max_inflight_per_thread: usize,

    /// Requests one namespace (all its Workers together) may have queued or
    /// in flight per thread; past it its requests are refused (overloaded)
    /// while other namespaces' still run. 0: a quarter of
    /// `--max-inflight-per-thread`.
    #[arg(long, env = WORKER_SLOTS_ENV, default_value_t = 0)]
    pub worker_slots: usize,

    /// The most CPU time one request may use, whatever its Worker's
    /// `limits.cpuMs` asks for (one turn holds its thread that long). 0: no cap.
    #[arg(long, env = MAX_CPU_MS_ENV, default_value_t = 5_000)]
    pub max_cpu_ms: u64,

    /// The largest request body a client may send, in MiB; a larger one is
    /// answered 413 (that request's failure, never the Worker's). 0: no cap.
    #[arg(long, env = MAX_REQUEST_BODY_MIB_ENV, default_value_t = 100)]
    pub max_request_body_mib: u64,

    /// Memory the Cache API's entries (every Worker's, `caches.default` and
    /// `caches.open`) may hold on this node, in MiB; least recently used out.
    #[arg(long, env = CACHE_MIB_ENV, default_value_t = 128)]
    pub cache_mib: usize,

    /// Memory one namespace's cache entries may hold, in MiB (also the
    /// largest entry); a namespace over it evicts only its own. 0: a quarter
    /// of `--cache-mib`.
    #[arg(long, env = CACHE_NAMESPACE_MIB_ENV, default_value_t = 0)]
    pub cache_namespace_mib: usize,

    /// Memory for KV's hot keys on this node, in MiB (each Kubernetes
    /// namespace in a quarter): a read is answered from it for up to its
    /// `cacheTtl` (60 s by default), as on Cloudflare. 0: every read goes
    /// to the database.
    #[arg(long, env = KV_CACHE_MIB_ENV, default_value_t = 64)]
    pub kv_cache_mib: usize,

    /// The KV storage one Kubernetes namespace may hold (keys, values and
    /// metadata of all its KV namespaces), in MiB: a write that grows it
    /// past this is refused (413); shrinking writes and deletes still go
    /// through. The same bound applies, counted apart, to its Durable
    /// Objects' storage. 0: no quota.
    #[arg(long, env = KV_NAMESPACE_MAX_MIB_ENV, default_value_t = 1024)]
    pub kv_namespace_max_mib: u64,

    /// The storage one Durable Object may hold (its keys and values), in
    /// MiB: a write that grows it past this is refused; shrinking writes
    /// and deletes still go through. Cloudflare's 10 GB by default (the
    /// namespace's quota, `--kv-namespace-max-mib`, binds first unless
    /// raised). 0: no limit.
    #[arg(long, env = OBJECT_MAX_MIB_ENV, default_value_t = 10240)]
    pub object_max_mib: u64,

    /// The queue messages one Kubernetes namespace's queues may hold in
    /// all: a send past it is refused (`Queue send failed: Storage Limit
    /// Exceeded: …`). 0: no bound on the count.
    #[arg(long, env = QUEUE_NAMESPACE_MAX_MESSAGES_ENV, default_value_t = 1_000_000)]
    pub queue_namespace_max_messages: u64,

    /// The bytes (message bodies) one Kubernetes namespace's queues may
    /// hold in all, in MiB; as `--queue-namespace-max-messages`. 0: no
    /// bound on the bytes.
    #[arg(long, env = QUEUE_NAMESPACE_MAX_MIB_ENV, default_value_t = 1024)]
    pub queue_namespace_max_mib: u64,

    /// How long a queue message is kept after it was sent, in seconds:
    /// older ones are deleted, delivered or not (Cloudflare's
    /// `message_retention_period`, 4 days by default). 0: for ever.
    #[arg(long, env = QUEUE_RETENTION_SECS_ENV, default_value_t = 345_600)]
    pub queue_retention_secs: u64,

    /// Storage operations (KV and Durable Objects, reads the KV cache
    /// answers aside) one Kubernetes namespace may run per second on this
    /// node, in bursts of one second's worth: past it an operation is
    /// refused before it reaches the database, so one namespace hammering
    /// storage does not starve the others' operations. 0: no limit.
    #[arg(long, env = STORAGE_NAMESPACE_OPS_ENV, default_value_t = 2000)]
    pub storage_namespace_ops: u32,

    /// Destinations Workers' `fetch` may reach although the default egress
    /// policy refuses them (loopback, private, link-local …), as CIDRs, e.g.
    /// `10.20.0.0/16`; repeat or separate with commas.
    #[arg(long, env = EGRESS_ALLOW_ENV, value_delimiter = ',')]
    pub egress_allow: Vec<ipnet::IpNet>,

    /// Destinations refused although public: the node's own addresses, the
    /// cluster's pod and service ranges, as CIDRs.
    #[arg(long, env = EGRESS_DENY_ENV, value_delimiter = ',')]
    pub egress_deny: Vec<ipnet::IpNet>,

    /// A PEM bundle of CA certificates Workers' HTTPS `fetch` trusts besides
    /// the public web PKI roots.
    #[arg(long, env = FETCH_EXTRA_CA_ENV)]
    pub fetch_extra_ca: Option<std::path::PathBuf>,

    /// A DNS-over-HTTPS server (its JSON API, `application/dns-json`) that
    /// `node:dns` asks, through the Workers' own `fetch` (default: none,
    /// `node:dns` asks the node's own resolver, /etc/resolv.conf's).
    #[arg(long, env = DNS_OVER_HTTPS_ENV, value_parser = parse_dns_over_https)]
    pub dns_over_https: Option<String>,

    /// Lease duration (renewed every third of it), e.g. `10s`.
    #[arg(long, env = LEASE_DURATION_ENV, default_value = "10s", value_parser = parse_duration)]
    pub lease_duration: Duration,

    /// How long, after SIGTERM, requests in flight may take to finish.
    #[arg(long, env = DRAIN_TIMEOUT_ENV, default_value = "30s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// How long, after SIGTERM, open WebSockets keep working (new upgrades
    /// go to the Worker's next placement) before they close with 1012; at
    /// most `--drain-timeout`.
    #[arg(long, env = WEBSOCKET_DRAIN_GRACE_ENV, default_value = "10s", value_parser = parse_duration)]
    pub websocket_drain_grace: Duration,

    /// How long a request for a revision the node has not seen yet waits for
    /// the bundle watch before failing with NOT_FOUND (a router's prewarm
    /// waits until its deadline).
    #[arg(long, env = REVISION_WAIT_ENV, default_value = "2s", value_parser = parse_duration)]
    pub revision_wait: Duration,

    /// Revisions kept per worker, newest first, so requests for the previous
    /// revision still run during a rollout.
    #[arg(long, env = BUNDLE_REVISIONS_ENV, default_value_t = 3)]
    pub bundle_revisions: usize,

    /// Where bundles pulled from registries (`spec.bundle`) are kept, by
    /// digest (default: `isolane-bundles` in the temporary directory).
    #[arg(long, env = BUNDLE_CACHE_DIR_ENV)]
    pub bundle_cache_dir: Option<PathBuf>,

    /// At most this many MiB of pulled bundles on disk; the least recently
    /// used go first.
    #[arg(long, env = BUNDLE_CACHE_MIB_ENV, default_value_t = 1024)]
    pub bundle_cache_mib: u64,

    /// At most this many MiB of V8 code caches of big modules, kept in the
    /// bundle cache folder beside the bundles (`code-*.bin`), so another
    /// thread, or this node after a restart, compiles a big bundle from
    /// its cache; the oldest go first. 0: no code cache.
    #[arg(long, env = CODE_CACHE_MIB_ENV, default_value_t = 256)]
    pub code_cache_mib: u64,

    /// Where the engine keeps its startup snapshot between restarts, one
    /// file per build, checked before use (default: `isolane-snapshots` in
    /// the temporary directory; an `emptyDir` keeps it across container
    /// restarts).
    #[arg(long, env = SNAPSHOT_CACHE_DIR_ENV)]
    pub snapshot_cache_dir: Option<PathBuf>,

    /// Where the node keeps its turn map (`turns-<node name>.map`: which
    /// Worker is in a JavaScript turn on each engine thread), read after a
    /// crash by the next process (default: `isolane-state` in the temporary
    /// directory; an `emptyDir` keeps it across container restarts).
    #[arg(long, env = STATE_DIR_ENV)]
    pub state_dir: Option<PathBuf>,

    /// A registry (host or host:port) pulled from over plain HTTP rather
    /// than HTTPS, for a registry on loopback; repeat the flag or separate
    /// with commas. The operator takes the same.
    #[arg(long = "plain-http-registry", env = PLAIN_HTTP_REGISTRIES_ENV, value_delimiter = ',')]
    pub plain_http_registries: Vec<String>,

    /// A registry bundles may be pulled from (`host`, `host:port` or
    /// `*.domain`); repeat the flag or separate with commas. None listed: no
    /// bundle named by `spec.bundle` is pulled. The operator takes the same.
    #[arg(long = "bundle-registry", env = BUNDLE_REGISTRIES_ENV, value_delimiter = ',')]
    pub bundle_registries: Vec<String>,

    /// A PEM bundle of CA certificates trusted for registries' HTTPS
    /// certificates besides the public web PKI roots (a registry whose
    /// certificate a private CA signs). The operator takes the same.
    #[arg(long, env = BUNDLE_REGISTRY_CA_ENV)]
    pub bundle_registry_ca: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub grpc_tls: MtlsArgs,

    #[command(flatten)]
    pub admin: AdminArgs,

    #[command(flatten)]
    pub websocket: WebSocketArgs,

    #[command(flatten)]
    pub objects: ObjectArgs,

    #[command(flatten)]
    pub storage: isolane_storage::PostgresArgs,

    #[command(flatten)]
    pub r2: isolane_storage::R2S3Args,
}

/// A validated configuration. Tests build these directly.
#[derive(Debug, Clone)]
pub struct Config {
    /// The owners of Durable Objects and the connections to peer nodes
    /// (also the engine's `objects`); its ring is fed by the node Leases.
    pub peers: crate::peers::Peers,
    pub namespace: String,
    pub node_name: String,
    pub grpc_addr: SocketAddr,
    pub advertise_host: String,
    pub listeners: ListenerMode,
    /// Engine configuration, `threads` resolved (never 0).
    pub engine: EngineConfig,
    pub max_inflight_per_thread: usize,
    pub lease_duration: Duration,
    pub drain_timeout: Duration,
    /// How long open WebSockets keep working once the drain starts.
    pub websocket_drain_grace: Duration,
    pub revision_wait: Duration,
    pub bundle_revisions: usize,
    /// Where and how pulled bundles are kept.
    pub artifacts: ArtifactSettings,
    pub admin_addr: SocketAddr,
    /// mTLS for the gRPC listeners (or plaintext with `--insecure-grpc`).
    pub grpc_security: GrpcSecurity,
    /// Where the turn map is kept (`crash.rs`).
    pub state_dir: PathBuf,
    /// What the previous process on `state_dir` left, when it crashed: set
    /// by `crash::open_turn_map`, published on the Lease.
    pub previous_crash: Option<isolane_membership::CrashRecord>,
}

/// Bundles named by digest: the disk cache and the registries over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactSettings {
    pub cache_dir: PathBuf,
    pub cache_bytes: u64,
    pub plain_http: Vec<String>,
    /// `--bundle-registry` entries (checked when the puller is made).
    pub allowed: Vec<String>,
    /// `--bundle-registry-ca`'s certificates.
    pub registry_ca: Option<isolane_artifact::RegistryCa>,
}

impl Default for ArtifactSettings {
    fn default() -> Self {
        Self {
            cache_dir: std::env::temp_dir().join("isolane-bundles"),
            cache_bytes: 1 << 30,
            plain_http: Vec::new(),
            allowed: Vec::new(),
            registry_ca: None,
        }
    }
}

/// Why the flags do not make a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--{flag} must be at least {min}")]
    TooSmall { flag: &'static str, min: u64 },
    #[error("--{flag} must be whole seconds, at least {min_secs} s")]
    Duration { flag: &'static str, min_secs: u64 },
    #[error("--{flag} {value:?} is not a valid DNS-1123 {what}")]
    InvalidName {
        flag: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("no --node-name given and the hostname cannot be read")]
    NoHostname,
    #[error("--advertise-host {value:?} must be a bare host name or IP")]
    InvalidAdvertiseHost { value: String },
    #[error("--grpc-addr port {port} + {threads} threads runs past port 65535")]
    PortRange { port: u16, threads: usize },
    #[error("--fetch-extra-ca {path}: {source}")]
    ExtraCa {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--bundle-registry-ca {path}: {source}")]
    RegistryCaFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--bundle-registry-ca {path}: {source}")]
    RegistryCa {
        path: String,
        #[source]
        source: isolane_artifact::Error,
    },
    #[error("--storage-postgres-*: {0}")]
    Storage(#[from] isolane_storage::StoreError),
    #[error("--r2-s3-*: {0}")]
    R2(#[from] isolane_storage::r2::R2Error),
    #[error(transparent)]
    GrpcSecurity(#[from] MtlsArgsError),
    #[error("router↔node TLS: {0}")]
    Tls(#[from] MtlsError),
}

impl ConfigError {
    /// A bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ConfigError::TooSmall { .. } => "too_small",
            ConfigError::Duration { .. } => "duration",
            ConfigError::InvalidName { .. } => "invalid_name",
            ConfigError::NoHostname => "no_hostname",
            ConfigError::InvalidAdvertiseHost { .. } => "invalid_advertise_host",
            ConfigError::PortRange { .. } => "port_range",
            ConfigError::ExtraCa { .. } => "extra_ca",
            ConfigError::RegistryCaFile { .. } | ConfigError::RegistryCa { .. } => "registry_ca",
            ConfigError::Storage(_) => "storage",
            ConfigError::R2(_) => "r2",
            ConfigError::GrpcSecurity(_) => "grpc_security",
            ConfigError::Tls(_) => "tls",
        }
    }
}

// === impl Args ===

impl Args {
    /// Checks the flags and resolves defaults (hostname, thread count).
    pub fn validate(self) -> Result<Config, ConfigError> {
        let hostname = || hostname().ok_or(ConfigError::NoHostname);
        let node_name = match self.node_name {
            Some(name) => name,
            None => hostname()?.to_ascii_lowercase(),
        };
        if !is_dns_subdomain(&node_name) {
            return Err(ConfigError::InvalidName {
                flag: "node-name",
                value: node_name,
                what: "subdomain (a Lease name)",
            });
        }
        if !is_dns_label(&self.namespace) {
            return Err(ConfigError::InvalidName {
                flag: "namespace",
                value: self.namespace,
                what: "label (a namespace)",
            });
        }
        let advertise_host = match self.advertise_host {
            Some(host) => host,
            None if !self.grpc_addr.ip().is_unspecified() => self.grpc_addr.ip().to_string(),
            None => node_name.clone(),
        };
        if advertise_host.is_empty()
            || advertise_host.contains([',', '/', ' '])
            || advertise_host.contains("://")
        {
            return Err(ConfigError::InvalidAdvertiseHost {
                value: advertise_host,
            });
        }
        for (flag, value, min) in [
            ("isolates-per-thread", self.isolates_per_thread, 1),
            ("heap-budget-mib", self.heap_budget_mib, 1),
            ("max-inflight-per-thread", self.max_inflight_per_thread, 1),
            ("bundle-revisions", self.bundle_revisions, 1),
        ] {
            if value < min {
                return Err(ConfigError::TooSmall {
                    flag,
                    min: min as u64,
                });
            }
        }
        // The Lease counts whole seconds; renewing every third of it must
        // leave at least a second between renewals.
        if self.lease_duration.subsec_nanos() != 0 || self.lease_duration < Duration::from_secs(3) {
            return Err(ConfigError::Duration {
                flag: "lease-duration",
                min_secs: 3,
            });
        }
        let threads = EngineConfig {
            threads: self.threads,
            ..EngineConfig::default()
        }
        .resolved_threads();
        if self.listeners == ListenerMode::PerThread
            && self.grpc_addr.port() != 0
            && usize::from(self.grpc_addr.port()) + threads - 1 > usize::from(u16::MAX)
        {
            return Err(ConfigError::PortRange {
                port: self.grpc_addr.port(),
                threads,
            });
        }
        let grpc_security = self.grpc_tls.validate()?;
        if let GrpcSecurity::Mtls(files) = &grpc_security {
            // Unreadable or mismatched files are a configuration error (64).
            isolane_proto::mtls::server_config(files)?;
        }
        let bundle_cache_dir = self
            .bundle_cache_dir
            .unwrap_or_else(|| ArtifactSettings::default().cache_dir);
        let registry_ca = match &self.bundle_registry_ca {
            Some(path) => Some(registry_ca(path)?),
            None => None,
        };
        let mut engine = EngineConfig {
            families: isolane_runtime::families(),
            threads,
            pin_threads: self.pin_threads,
            pool_mode: self.pool_mode,
            isolates_per_thread: self.isolates_per_thread,
            heap_budget_bytes: self.heap_budget_mib.saturating_mul(1 << 20),
            // The node admits at most this many per thread; the engine's own
            // queue is the backstop (its Overloaded maps the same way).
            queue_depth: self.max_inflight_per_thread,
            spare_isolates: self.spare_isolates,
            worker_slots: self.worker_slots,
            max_cpu_ms: self.max_cpu_ms,
            max_request_body_bytes: self.max_request_body_mib.saturating_mul(1 << 20),
            cache: isolane_engine::CacheConfig {
                capacity_bytes: self.cache_mib.saturating_mul(1 << 20),
                namespace_bytes: self.cache_namespace_mib.saturating_mul(1 << 20),
                ..isolane_engine::CacheConfig::default()
            },
            websocket: self.websocket.config(),
            object_idle: self.objects.idle(),
            snapshot_cache: Some(
                self.snapshot_cache_dir
                    .clone()
                    .unwrap_or_else(|| std::env::temp_dir().join("isolane-snapshots")),
            ),
            code_cache: (self.code_cache_mib > 0).then(|| isolane_engine::CodeCacheConfig {
                dir: bundle_cache_dir.clone(),
                max_bytes: self.code_cache_mib.saturating_mul(1 << 20),
            }),
            store: self
                .storage
                .settings()
                .as_ref()
                .map(isolane_storage::Store::postgres)
                .transpose()?
                .map(|store| {
                    let quota = isolane_storage::QueueQuota::from_flags(
                        self.queue_namespace_max_messages,
                        self.queue_namespace_max_mib,
                    );
                    self.r2.apply(storage_limits(
                        store
                            .with_queue_quota_if(quota)
                            .with_queue_retention(Duration::from_secs(self.queue_retention_secs)),
                        self.kv_cache_mib,
                        [self.kv_namespace_max_mib, self.object_max_mib],
                        self.storage_namespace_ops,
                    ))
                })
                .transpose()?,
            egress: isolane_engine::EgressConfig {
                allow: self.egress_allow.clone(),
                deny: self.egress_deny.clone(),
                extra_ca_pem: match &self.fetch_extra_ca {
                    Some(path) => {
                        Some(std::fs::read(path).map_err(|source| ConfigError::ExtraCa {
                            path: path.display().to_string(),
                            source,
                        })?)
                    }
                    None => None,
                },
                dns_over_https: self.dns_over_https.clone(),
                dns_resolver: None,
            },
            ..EngineConfig::default()
        };
        let peers = crate::peers::Peers::new(
            &node_name,
            match &grpc_security {
                GrpcSecurity::Mtls(files) => Some(isolane_proto::mtls::client_config(files)?),
                GrpcSecurity::Insecure => None,
            },
        );
        // Durable Objects live on their owner node (`peers.rs`).
        engine.objects = Some(std::sync::Arc::new(peers.clone()));
        Ok(Config {
            peers,
            namespace: self.namespace,
            node_name,
            grpc_addr: self.grpc_addr,
            advertise_host,
            listeners: self.listeners,
            engine,
            max_inflight_per_thread: self.max_inflight_per_thread,
            lease_duration: self.lease_duration,
            drain_timeout: self.drain_timeout,
            // Within the drain: a longer grace is cut to it.
            websocket_drain_grace: self.websocket_drain_grace.min(self.drain_timeout),
            revision_wait: self.revision_wait,
            bundle_revisions: self.bundle_revisions,
            artifacts: ArtifactSettings {
                cache_dir: bundle_cache_dir,
                cache_bytes: self.bundle_cache_mib.saturating_mul(1 << 20),
                plain_http: self.plain_http_registries,
                allowed: self.bundle_registries,
                registry_ca,
            },
            admin_addr: self.admin.admin_addr,
            grpc_security,
            state_dir: self
                .state_dir
                .unwrap_or_else(|| std::env::temp_dir().join("isolane-state")),
            previous_crash: None,
        })
    }
}

/// The certificates of the PEM bundle at `path` (`--bundle-registry-ca`).
fn registry_ca(path: &std::path::Path) -> Result<isolane_artifact::RegistryCa, ConfigError> {
    let pem = std::fs::read(path).map_err(|source| ConfigError::RegistryCaFile {
        path: path.display().to_string(),
        source,
    })?;
    isolane_artifact::RegistryCa::from_pem(&pem).map_err(|source| ConfigError::RegistryCa {
        path: path.display().to_string(),
        source,
    })
}

/// The store with the node's KV cache, namespace quota and per-object
/// limit (`[namespace, object]` in MiB) and operations per namespace
/// (0: none of that one).
fn storage_limits(
    store: isolane_storage::Store,
    cache_mib: usize,
    [namespace_mib, object_mib]: [u64; 2],
    ops_per_second: u32,
) -> isolane_storage::Store {
    let mib = |n: u64| n.saturating_mul(1 << 20);
    let mut store = store.with_kv_cache(cache_mib.saturating_mul(1 << 20));
    if namespace_mib > 0 {
        store = store.with_namespace_quota(mib(namespace_mib));
    }
    if object_mib > 0 {
        store = store.with_object_quota(mib(object_mib));
    }
    if ops_per_second > 0 {
        store = store.with_namespace_ops(ops_per_second);
    }
    store
}

// === impl Config ===

impl Config {
    /// Engine threads (resolved).
    pub fn threads(&self) -> usize {
        self.engine.threads
    }

    /// How often the Lease is renewed: a third of its duration.
    pub fn renew_interval(&self) -> Duration {
        self.lease_duration / 3
    }
}

fn parse_pool_mode(value: &str) -> Result<PoolMode, isolane_engine::ParsePoolModeError> {
    value.parse()
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn parse(args: &[&str]) -> Result<Config, ConfigError> {
        let mut argv = vec!["isolane-node", "--node-name", "node-a", "--insecure-grpc"];
        argv.extend_from_slice(args);
        Args::try_parse_from(argv).unwrap().validate()
    }

    #[test]
    fn defaults() {
        let config = parse(&["--threads", "2"]).unwrap();
        assert_eq!(config.namespace, DEFAULT_NAMESPACE);
        assert_eq!(config.node_name, "node-a");
        assert_eq!(config.advertise_host, "node-a");
        assert_eq!(config.listeners, ListenerMode::PerThread);
        assert_eq!(config.threads(), 2);
        assert_eq!(config.engine.pool_mode, PoolMode::Pinned);
        assert_eq!(config.lease_duration, Duration::from_secs(10));
        assert_eq!(config.renew_interval(), Duration::from_secs(10) / 3);
        assert_eq!(config.revision_wait, Duration::from_secs(2));
        assert_eq!(config.websocket_drain_grace, Duration::from_secs(10));
    }

    #[test]
    fn flags_override() {
        let config = parse(&[
            "--grpc-addr",
            "127.0.0.1:0",
            "--listeners",
            "single",
            "--pool-mode",
            "legacy",
            "--lease-duration",
            "6",
            "--drain-timeout",
            "1500ms",
            "--pin-threads",
            "false",
        ])
        .unwrap();
        assert_eq!(config.advertise_host, "127.0.0.1");
        assert_eq!(config.listeners, ListenerMode::Single);
        assert_eq!(config.engine.pool_mode, PoolMode::Legacy);
        assert!(!config.engine.pin_threads);
        assert!(config.threads() >= 1);
        assert_eq!(config.lease_duration, Duration::from_secs(6));
        assert_eq!(config.drain_timeout, Duration::from_millis(1500));
        // The sockets' grace (10 s by default) is cut to the drain's.
        assert_eq!(config.websocket_drain_grace, Duration::from_millis(1500));
    }

    #[test]
    fn invalid_configs_are_refused() {
        for (args, kind) in [
            (&["--max-inflight-per-thread", "0"][..], "too_small"),
            (&["--lease-duration", "2s"], "duration"),
            (&["--lease-duration", "4500ms"], "duration"),
            (&["--namespace", "Not_A_Namespace"], "invalid_name"),
            (&["--advertise-host", "http://x"], "invalid_advertise_host"),
            (
                &["--grpc-addr", "0.0.0.0:65535", "--threads", "2"],
                "port_range",
            ),
        ] {
            let error = parse(args).unwrap_err();
            assert_eq!(error.kind(), kind, "{args:?}: {error}");
        }
        assert!(Args::try_parse_from(["isolane-node", "--pool-mode", "nope"]).is_err());
        assert!(Args::try_parse_from(["isolane-node", "--lease-duration", "5x"]).is_err());
    }

    #[test]
    fn grpc_without_tls_or_insecure_is_refused() {
        let validate = |args: &[&str]| {
            let mut argv = vec!["isolane-node", "--node-name", "node-a"];
            argv.extend_from_slice(args);
            Args::try_parse_from(argv).unwrap().validate()
        };
        for (args, kind) in [
            (&[][..], "grpc_security"),
            (&["--grpc-tls-cert", "/nonexistent"], "grpc_security"),
            (
                &["--insecure-grpc", "--grpc-tls-ca", "/nonexistent"],
                "grpc_security",
            ),
            (
                &[
                    "--grpc-tls-cert",
                    "/nonexistent/cert",
                    "--grpc-tls-key",
                    "/nonexistent/key",
                    "--grpc-tls-ca",
                    "/nonexistent/ca",
                ],
                "tls",
            ),
        ] {
            let error = validate(args).unwrap_err();
            assert_eq!(error.kind(), kind, "{args:?}: {error}");
        }
        let config = validate(&["--insecure-grpc"]).unwrap();
        assert_eq!(config.grpc_security, GrpcSecurity::Insecure);
    }

    #[test]
    fn every_flag_names_its_env_var() {
        let help = <Args as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        for env in [
            NAMESPACE_ENV,
            NODE_NAME_ENV,
            GRPC_ADDR_ENV,
            ADVERTISE_HOST_ENV,
            LISTENERS_ENV,
            THREADS_ENV,
            PIN_THREADS_ENV,
            POOL_MODE_ENV,
            ISOLATES_PER_THREAD_ENV,
            HEAP_BUDGET_MIB_ENV,
            SPARE_ISOLATES_ENV,
            MAX_INFLIGHT_ENV,
            LEASE_DURATION_ENV,
            DRAIN_TIMEOUT_ENV,
            WEBSOCKET_DRAIN_GRACE_ENV,
            REVISION_WAIT_ENV,
            BUNDLE_REVISIONS_ENV,
            BUNDLE_CACHE_DIR_ENV,
            BUNDLE_CACHE_MIB_ENV,
            CODE_CACHE_MIB_ENV,
            SNAPSHOT_CACHE_DIR_ENV,
            PLAIN_HTTP_REGISTRIES_ENV,
            BUNDLE_REGISTRIES_ENV,
            isolane_proto::mtls::TLS_CERT_ENV,
            isolane_proto::mtls::TLS_KEY_ENV,
            isolane_proto::mtls::TLS_CA_ENV,
            isolane_proto::mtls::INSECURE_ENV,
            isolane_telemetry::ADMIN_ADDR_ENV,
            isolane_storage::POSTGRES_URL_ENV,
        ] {
            assert!(help.contains(env), "{env} missing from --help");
        }
    }

    #[test]
    fn the_code_cache_sits_beside_the_bundles_unless_turned_off() {
        let config = parse(&["--bundle-cache-dir", "/var/cache/b"]).unwrap();
        let code_cache = config.engine.code_cache.expect("on by default");
        assert_eq!(code_cache.dir, PathBuf::from("/var/cache/b"));
        assert_eq!(code_cache.max_bytes, 256 << 20);
        assert_eq!(config.artifacts.cache_dir, PathBuf::from("/var/cache/b"));
        let off = parse(&["--code-cache-mib", "0"]).unwrap();
        assert!(off.engine.code_cache.is_none());
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
        let config = parse(&[&flag(&good)]).unwrap();
        assert!(config.artifacts.registry_ca.is_some());
        assert!(parse(&[]).unwrap().artifacts.registry_ca.is_none());
        for bad in [garbage, dir.path().join("missing.crt")] {
            let error = parse(&[&flag(&bad)]).unwrap_err();
            assert_eq!(error.kind(), "registry_ca", "{error}");
        }
    }

    #[test]
    fn a_store_only_when_a_database_is_named() {
        assert!(parse(&[]).unwrap().engine.store.is_none());
        let config = parse(&["--storage-postgres-url", "postgres://kv@db.example/isolane"]);
        assert!(config.unwrap().engine.store.is_some());
        let error = parse(&[
            "--storage-postgres-url",
            "postgres://kv@db/x?sslmode=nonsense",
        ]);
        assert!(matches!(error, Err(ConfigError::Storage(_))), "{error:?}");
        let error = parse(&[
            "--storage-postgres-url",
            "host=db",
            "--storage-postgres-ca-file",
            "/nonexistent/ca.pem",
        ]);
        assert!(matches!(error, Err(ConfigError::Storage(_))), "{error:?}");
    }
}
