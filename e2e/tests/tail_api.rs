//! `isolane tail` through the Kubernetes API (issue 61): a real
//! kube-apiserver with the aggregation layer (front-proxy CA and client
//! certificate, `X-Remote-*` headers), the operator, a runtime node and the
//! router (with its tail API on loopback, registered as the APIService
//! `v1alpha1.tail.isolane.dev` behind an ExternalName Service of
//! `127.0.0.1`) as processes, and the `isolane` binary and kubectl with
//! kubeconfigs that hold no token the router could see:
//! 0. before the APIService is registered, `isolane tail` says the tail API
//!    is not available and how to check it;
//! 1. a user of a client certificate, and a ServiceAccount whose token an
//!    exec plugin prints, both bound to the tail role in `tenant-a`, tail
//!    `tenant-a`'s Worker and see its console lines;
//! 2. the certificate's user tailing `tenant-b` (no RoleBinding there) gets
//!    the apiserver's 403, with a message naming the permission; in
//!    `tenant-c`, where a Role grants it only the tail API's group, the
//!    apiserver proxies and the router's own SubjectAccessReview (group
//!    `isolane.dev`) refuses;
//! 3. `kubectl get --raw` of the same path streams the same events;
//! 4. a request to the tail API's port without the front-proxy certificate
//!    (none, or a user's certificate of the apiserver's client CA) is
//!    refused and causes no TokenReview.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use isolane_e2e::aggregated::AggregatedApi;
use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::process;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Process, TENANT_USER, TestCa, free_port, wait_until};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec, TokenReview};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::Api;
use kube::api::PostParams;

const SETTLE: Duration = Duration::from_secs(90);
const CLI_BIN_ENV: &str = "ISOLANE_BIN";
/// The namespace of the tail API's Service (the chart's is the release's).
const API_NAMESPACE: &str = "tail-api";
const API_SERVICE: &str = "isolane-tail-api";
const TAIL_API: AggregatedApi = AggregatedApi {
    group: "tail.isolane.dev",
    version: "v1alpha1",
    group_priority_minimum: 1000,
    version_priority: 15,
    namespace: API_NAMESPACE,
    service: API_SERVICE,
};
const BASE: &str = "/apis/tail.isolane.dev/v1alpha1";

const TALKER: &str = "export default { fetch(request) {
    const path = new URL(request.url).pathname;
    console.log('tail me', path);
    return new Response('ok ' + path);
} };";

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// The chart's ClusterRole (charts/isolane/templates/rbac.yaml): `get` on
/// `workers/tail` in the CRD's group (the router's check) and the tail
/// API's (the apiserver's).
fn tail_role() -> ClusterRole {
    from_json(serde_json::json!({
        "metadata": { "name": "isolane-worker-tail" },
        "rules": [{
            "apiGroups": ["isolane.dev", "tail.isolane.dev"],
            "resources": ["workers/tail"],
            "verbs": ["get"],
        }],
    }))
}

/// Binds `subject` to the tail role in `namespace`.
async fn bind(cp: &ControlPlane, namespace: &str, name: &str, subject: serde_json::Value) {
    bind_to(
        cp,
        namespace,
        name,
        "ClusterRole",
        "isolane-worker-tail",
        subject,
    )
    .await;
}

/// Binds `subject` to the role `kind`/`role` in `namespace`.
async fn bind_to(
    cp: &ControlPlane,
    namespace: &str,
    name: &str,
    kind: &str,
    role: &str,
    subject: serde_json::Value,
) {
    let binding: RoleBinding = from_json(serde_json::json!({
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role },
        "subjects": [subject],
    }));
    Api::<RoleBinding>::namespaced(cp.client(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("create the RoleBinding");
}

/// A ServiceAccount `reader` in `namespace`, bound to the tail role there;
/// returns a token of it.
async fn reader_token(cp: &ControlPlane, namespace: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(cp.client(), namespace);
    let account: ServiceAccount =
        from_json(serde_json::json!({ "metadata": { "name": "reader" } }));
    accounts
        .create(&PostParams::default(), &account)
        .await
        .expect("create the ServiceAccount");
    let subject =
        serde_json::json!({ "kind": "ServiceAccount", "name": "reader", "namespace": namespace });
    bind(cp, namespace, "reader-tails", subject).await;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    accounts
        .create_token_request("reader", &PostParams::default(), &request)
        .await
        .expect("a token for the ServiceAccount")
        .status
        .expect("the token")
        .token
}

/// The control plane's kubeconfig with its user replaced by `user` (YAML).
fn kubeconfig_with(cp: &ControlPlane, user: serde_yaml::Value, path: &Path) {
    let text = std::fs::read_to_string(cp.kubeconfig_path()).expect("the admin kubeconfig");
    let mut config: serde_yaml::Value = serde_yaml::from_str(&text).expect("a kubeconfig");
    for entry in config["users"].as_sequence_mut().expect("users") {
        entry["user"] = user.clone();
    }
    let yaml = serde_yaml::to_string(&config).expect("a kubeconfig as YAML");
    std::fs::write(path, yaml).expect("write the tenant kubeconfig");
}

/// In `namespace`, a Role granting `get` on `workers/tail` in the tail
/// API's group only (what the apiserver checks, not what the router does),
/// bound to `subject`.
async fn grant_tail_api_only(cp: &ControlPlane, namespace: &str, subject: serde_json::Value) {
    let role: Role = from_json(serde_json::json!({
        "metadata": { "name": "tail-api-only" },
        "rules": [{
            "apiGroups": ["tail.isolane.dev"],
            "resources": ["workers/tail"],
            "verbs": ["get"],
        }],
    }));
    Api::<Role>::namespaced(cp.client(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .expect("create the Role");
    bind_to(
        cp,
        namespace,
        "tail-api-only",
        "Role",
        "tail-api-only",
        subject,
    )
    .await;
}

/// `isolane tail talker -n namespace` with `kubeconfig`, expected to fail:
/// its stderr.
fn refused_tail(cli: &Path, kubeconfig: &Path, namespace: &str) -> String {
    let refused = std::process::Command::new(cli)
        .args(tail_args(namespace))
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("run isolane tail");
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success(), "{stderr}");
    stderr
}

/// An exec plugin (a script) that prints an ExecCredential with `token`.
fn exec_plugin(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("exec-credential.sh");
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": { "token": token },
    });
    std::fs::write(
        &path,
        format!("#!/bin/sh\ncat <<'EOF'\n{credential}\nEOF\n"),
    )
    .expect("write the exec plugin");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("make the exec plugin executable");
    path
}

/// `kubectl <args>` with `kubeconfig`: its stdout, or its stderr.
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
    }
}

/// How many TokenReviews the apiserver has served (its own metric).
fn token_reviews(cp: &ControlPlane) -> f64 {
    let metrics = kubectl(cp.kubeconfig_path(), &["get", "--raw", "/metrics"]).expect("/metrics");
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{") && l.contains("resource=\"tokenreviews\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |sum, n| sum + n)
}

/// One TokenReview of a bogus token, so that the count is seen to move.
async fn review_a_token(cp: &ControlPlane) {
    let review: TokenReview = from_json(serde_json::json!({ "spec": { "token": "not-a-token" } }));
    Api::<TokenReview>::all(cp.client())
        .create(&PostParams::default(), &review)
        .await
        .expect("a TokenReview");
}

/// Sends requests to `path_prefix/N` of tenant-a's Worker until `log`
/// shows one of them as a console line.
async fn wait_for_lines(ingress: &Ingress, log: &Path, path_prefix: &str) {
    let mut n = 0;
    wait_until("the tail to show a console line", SETTLE, || {
        n += 1;
        let (ingress, log) = (ingress.clone(), log.to_owned());
        let path = format!("{path_prefix}/{n}");
        async move {
            let _ = ingress.get("a.test", &path).await;
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            text.contains(&format!("tail me {path_prefix}/"))
                .then_some(())
        }
    })
    .await;
}

fn tail_args(namespace: &str) -> Vec<String> {
    ["tail", "talker", "-n", namespace, "--format", "json"]
        .map(str::to_owned)
        .to_vec()
}

/// The router with its tail API on `addr`, serving a certificate of `ca`
/// for the Service's name.
async fn start_system(cp: &ControlPlane, dir: &Path, addr: SocketAddr, ca: &TestCa) -> Cluster {
    let options = ClusterOptions {
        nodes: 1,
        router: RouterOptions {
            extra_args: TAIL_API.router_args(ca, dir, addr),
            ..RouterOptions::default()
        },
        ..ClusterOptions::default()
    };
    Cluster::start(cp, dir, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn isolane_tail_goes_through_the_kubernetes_api_with_any_kubeconfig_user() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let (tenant_cert, tenant_key) = cp
        .tenant_client_cert()
        .expect("a control plane of our own (its tenant certificate)");
    workers::prepare(&cp, &["tenant-a", "tenant-b", "tenant-c"]).await;
    cp.create_namespace(API_NAMESPACE).await.expect("namespace");
    let dir = tempfile::tempdir().expect("temp dir");
    let api_addr: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let ca = TestCa::new("isolane-tail-api-ca").expect("a CA");
    let cluster = start_system(&cp, dir.path(), api_addr, &ca).await;
    let client = cp.client();
    for (namespace, host) in [("tenant-a", "a.test"), ("tenant-b", "b.test")] {
        workers::apply(
            &client,
            namespace,
            &inline_worker("talker", TALKER, &[host]),
        )
        .await;
        workers::wait_ready(&client, namespace, "talker", SETTLE).await;
    }
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &tail_role())
        .await
        .expect("create the tail ClusterRole");
    let user = serde_json::json!({ "kind": "User", "name": TENANT_USER, "apiGroup": "rbac.authorization.k8s.io" });
    bind(&cp, "tenant-a", "tenant-tails", user.clone()).await;
    grant_tail_api_only(&cp, "tenant-c", user).await;
    let cert_config = dir.path().join("cert.kubeconfig");
    let cert_user: serde_yaml::Value = serde_yaml::from_str(&format!(
        "client-certificate: {}\nclient-key: {}\n",
        tenant_cert.display(),
        tenant_key.display()
    ))
    .expect("a user");
    kubeconfig_with(&cp, cert_user, &cert_config);
    let plugin = exec_plugin(dir.path(), &reader_token(&cp, "tenant-a").await);
    let exec_config = dir.path().join("exec.kubeconfig");
    let exec_user: serde_yaml::Value = serde_yaml::from_str(&format!(
        "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: {}\n  interactiveMode: Never\n",
        plugin.display()
    ))
    .expect("a user");
    kubeconfig_with(&cp, exec_user, &exec_config);
    let cli = process::binary("isolane", CLI_BIN_ENV);

    // === 0. before the APIService: not available, clearly ===
    let stderr = refused_tail(&cli, &cert_config, "tenant-a");
    assert!(
        stderr.contains("tail: Isolane's aggregated API (tail.isolane.dev) is not available (404")
            && stderr.contains("kubectl get apiservice v1alpha1.tail.isolane.dev"),
        "{stderr}"
    );
    TAIL_API
        .register(&cp, api_addr.port(), &ca.cert_pem())
        .await;
    wait_until("the APIService to be served", SETTLE, || {
        let result = kubectl(cp.kubeconfig_path(), &["get", "--raw", BASE]).and_then(|list| {
            if list.contains("workers/tail") {
                Ok(())
            } else {
                Err(format!("discovery without workers/tail: {list}"))
            }
        });
        async move { result }
    })
    .await;
    let ingress = Ingress::new(cluster.ingress());

    // === 2. no RoleBinding in tenant-b: the apiserver's 403, clearly ===
    let stderr = refused_tail(&cli, &cert_config, "tenant-b");
    assert!(
        stderr.contains("403")
            && stderr.contains("get on workers/tail")
            && stderr.contains("in namespace tenant-b")
            && stderr.contains("isolane-worker-tail"),
        "{stderr}"
    );
    // Only the tail API's group in tenant-c: the router's check refuses.
    let stderr = refused_tail(&cli, &cert_config, "tenant-c");
    assert!(
        stderr.contains("403")
            && stderr.contains(&format!(
                "{TENANT_USER} may not tail workers in namespace tenant-c"
            ))
            && stderr.contains("(group isolane.dev)"),
        "{stderr}"
    );

    // === 1. a certificate's user and an exec plugin's token ===
    let mut tails = Vec::new();
    for (name, kubeconfig) in [("cert", &cert_config), ("exec", &exec_config)] {
        let log = dir.path().join(format!("tail-{name}.log"));
        let env: [(&str, &OsStr); 1] = [("KUBECONFIG", kubeconfig.as_os_str())];
        let tail = Process::spawn("isolane tail", &cli, tail_args("tenant-a"), &env, &log)
            .expect("start isolane tail");
        wait_for_lines(&ingress, &log, &format!("/{name}")).await;
        tails.push(tail);
    }

    // === 3. kubectl get --raw streams the same events ===
    let raw_log = dir.path().join("kubectl-raw.log");
    let path = format!("{BASE}/namespaces/tenant-a/workers/talker/tail");
    let raw_args = [
        "--kubeconfig",
        &cert_config.display().to_string(),
        "get",
        "--raw",
        &path,
    ]
    .map(str::to_owned);
    let raw = Process::spawn(
        "kubectl get --raw",
        Path::new("kubectl"),
        raw_args,
        &[],
        &raw_log,
    )
    .expect("start kubectl");
    wait_for_lines(&ingress, &raw_log, "/raw").await;
    let cert_log = dir.path().join("tail-cert.log");
    wait_until("the same events in isolane tail", SETTLE, || {
        let text = std::fs::read_to_string(&cert_log).unwrap_or_default();
        async move { text.contains("tail me /raw/").then_some(()) }
    })
    .await;
    tails.push(raw);

    // === 4. not the front proxy: refused, and no TokenReview ===
    // The count is the apiserver's: one review of ours shows it counts.
    let untouched = token_reviews(&cp);
    review_a_token(&cp).await;
    let before = token_reviews(&cp);
    assert_eq!(before, untouched + 1.0, "the apiserver counts TokenReviews");
    let admin = kube::config::Kubeconfig::read_from(cp.kubeconfig_path()).expect("kubeconfig");
    let admin_user = admin.auth_infos[0]
        .auth_info
        .clone()
        .expect("the admin user");
    let url = format!("https://{api_addr}{path}");
    let admin_cert = admin_user.client_certificate.expect("admin certificate");
    let admin_key = admin_user.client_key.expect("admin key");
    let no_cert = [
        "-sk",
        "--max-time",
        "10",
        "-H",
        "Authorization: Bearer x",
        url.as_str(),
    ];
    let user_cert = [
        "-sk",
        "--max-time",
        "10",
        "--cert",
        admin_cert.as_str(),
        "--key",
        admin_key.as_str(),
        "-H",
        "X-Remote-User: system:admin",
        url.as_str(),
    ];
    for args in [&no_cert[..], &user_cert[..]] {
        let out = std::process::Command::new("curl")
            .args(args)
            .output()
            .expect("run curl");
        let body = String::from_utf8_lossy(&out.stdout);
        assert!(
            !out.status.success() && body.is_empty(),
            "not refused: {body}"
        );
    }
    let after = token_reviews(&cp);
    println!(
        "TokenReviews served by the apiserver: {before} before the refused requests, {after} after"
    );
    assert_eq!(before, after, "a refused request caused a TokenReview");
    for mut tail in tails {
        tail.kill();
    }
    cluster.shutdown();
}
