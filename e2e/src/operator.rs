//! The operator under test, as a real process against a real apiserver.
//!
//! The binary is the one `ISOLANE_OPERATOR_BIN` names (see
//! [`crate::process::binary`]). Tests
//! use short leader-election timings (lease 3 s, renew deadline 2 s, retry
//! 500 ms) so that failover is measured in seconds.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use isolane_testenv::ControlPlane;

use crate::certs::ServingCert;
use crate::http;
use isolane_testenv::{Process, free_port, wait_until};

use crate::process;

/// Environment variable naming a prebuilt operator binary (skips the build).
pub const OPERATOR_BIN_ENV: &str = "ISOLANE_OPERATOR_BIN";
pub use isolane_testenv::workers::OPERATOR_NAMESPACE;

/// How to start an operator.
#[derive(Clone, Debug)]
pub struct OperatorOptions {
    /// Holder identity in the leader Lease; also names the log file.
    pub identity: String,
    /// Serve the admission webhook with this certificate.
    pub webhook: Option<ServingCert>,
    /// `--lease-duration`.
    pub lease_duration: Duration,
    /// `--renew-deadline`.
    pub renew_deadline: Duration,
    /// `--retry-period`.
    pub retry_period: Duration,
    /// More flags.
    pub extra_args: Vec<String>,
    /// More environment variables (`OTEL_*`).
    pub extra_env: Vec<(String, String)>,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        Self {
            identity: "operator-a".to_owned(),
            webhook: None,
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(500),
            extra_args: Vec::new(),
            extra_env: Vec::new(),
        }
    }
}

/// A running operator.
#[derive(Debug)]
pub struct Operator {
    /// The process.
    pub process: Process,
    /// Its admin address (/livez, /readyz, /metrics).
    pub admin: SocketAddr,
    /// Its webhook address, when enabled.
    pub webhook: Option<SocketAddr>,
    /// Its identity.
    pub identity: String,
}

impl Operator {
    /// Starts an operator for `cp`, logging to `<dir>/<identity>.log`.
    pub fn start(cp: &ControlPlane, dir: &Path, options: &OperatorOptions) -> Self {
        let binary = process::binary("isolane-operator", OPERATOR_BIN_ENV);
        let admin: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free local port")).into();
        let flag = |duration: Duration| humantime::format_duration(duration).to_string();
        let mut args = vec![
            "--namespace".to_owned(),
            OPERATOR_NAMESPACE.to_owned(),
            "--admin-addr".to_owned(),
            admin.to_string(),
            "--identity".to_owned(),
            options.identity.clone(),
            "--lease-duration".to_owned(),
            flag(options.lease_duration),
            "--renew-deadline".to_owned(),
            flag(options.renew_deadline),
            "--retry-period".to_owned(),
            flag(options.retry_period),
            "--membership-interval".to_owned(),
            "500ms".to_owned(),
        ];
        let webhook = options.webhook.as_ref().map(|cert| {
            let addr: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free local port")).into();
            args.extend([
                "--webhook-addr".to_owned(),
                addr.to_string(),
                "--webhook-cert".to_owned(),
                cert.cert_path.display().to_string(),
                "--webhook-key".to_owned(),
                cert.key_path.display().to_string(),
            ]);
            addr
        });
        args.extend(options.extra_args.iter().cloned());
        let log = dir.join(format!("{}.log", options.identity));
        let kubeconfig = cp.kubeconfig_path().as_os_str();
        let mut envs: Vec<(&str, &OsStr)> = vec![
            ("KUBECONFIG", kubeconfig),
            ("NO_COLOR", OsStr::new("1")),
            (
                "ISOLANE_LOG",
                OsStr::new("info,isolane_operator=debug,kube=warn"),
            ),
        ];
        envs.extend(process::extra_env(&options.extra_env));
        let process = Process::spawn(&options.identity, &binary, &args, &envs, &log)
            .expect("the operator starts");
        Self {
            process,
            admin,
            webhook,
            identity: options.identity.clone(),
        }
    }

    /// Waits until `/readyz` answers 200.
    pub async fn wait_ready(&self, timeout: Duration) {
        let what = format!("{} /readyz", self.identity);
        wait_until(&what, timeout, || async {
            let response = http::get(self.admin, "/readyz").await?;
            (response.status == 200).then_some(())
        })
        .await;
    }

    /// The `/metrics` exposition, if the admin server answers.
    pub async fn metrics(&self) -> Option<String> {
        let response = http::get(self.admin, "/metrics").await?;
        (response.status == 200).then_some(response.body)
    }

    /// The value of one metric series.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        http::metric(&self.metrics().await?, series)
    }

    /// Whether this replica reports being the leader (`isolane_operator_leader 1`).
    pub async fn is_leader(&self) -> bool {
        self.metric("isolane_operator_leader").await == Some(1.0)
    }
}

/// The operator's validating webhook, for Worker CREATE and UPDATE.
pub async fn register_webhook(cp: &ControlPlane, url: &str, ca_pem: &str) {
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    let hook = Hook {
        name: "workers.isolane.dev",
        operations: &["CREATE", "UPDATE"],
        failure_policy: "Fail",
    };
    register::<ValidatingWebhookConfiguration>(cp, url, ca_pem, &hook).await;
}

/// The operator's mutating webhook (the finalizer), for Worker CREATE.
pub async fn register_mutating_webhook(cp: &ControlPlane, url: &str, ca_pem: &str) {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    let hook = Hook {
        name: "finalizer.workers.isolane.dev",
        operations: &["CREATE"],
        failure_policy: "Ignore",
    };
    register::<MutatingWebhookConfiguration>(cp, url, ca_pem, &hook).await;
}

/// What differs between the operator's two webhooks.
struct Hook {
    name: &'static str,
    operations: &'static [&'static str],
    failure_policy: &'static str,
}

/// Registers `hook` at `url` for Worker requests, as the chart does: a
/// webhook configuration of kind `K` named `isolane-operator`.
async fn register<K>(cp: &ControlPlane, url: &str, ca_pem: &str, hook: &Hook)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let ca_bundle = k8s_openapi::ByteString(ca_pem.as_bytes().to_vec());
    let configuration: K = serde_json::from_value(serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": K::kind(&()),
        "metadata": {"name": "isolane-operator"},
        "webhooks": [{
            "name": hook.name,
            "clientConfig": {"url": url, "caBundle": ca_bundle},
            "rules": [{
                "apiGroups": ["isolane.dev"],
                "apiVersions": ["v1alpha1"],
                "operations": hook.operations,
                "resources": ["workers"],
                "scope": "Namespaced",
            }],
            "failurePolicy": hook.failure_policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }],
    }))
    .expect("webhook configuration");
    kube::Api::<K>::all(cp.client())
        .patch(
            "isolane-operator",
            &kube::api::PatchParams::apply("isolane-e2e").force(),
            &kube::api::Patch::Apply(&configuration),
        )
        .await
        .expect("register the webhook");
}
