//! The `isolane-router` binary as a process: flag validation, and the whole
//! composition (watches, admin server, router workers) against a real
//! apiserver, ending with a graceful SIGTERM.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use isolane_crds::Worker;
use isolane_membership::node_lease;
use isolane_testenv::{Process, free_port, wait_until};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};

use crate::fake_node::FakeNode;
use crate::support::control_plane_with_workers;

const BIN: &str = env!("CARGO_BIN_EXE_isolane-router");
const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn invalid_configuration_exits_64_before_binding() {
    for args in [
        &["--load-factor", "0.5"][..],
        &["--request-timeout", "0s"],
        &["--nodes-namespace", "Bad_Name"],
        // Neither TLS files nor --insecure-grpc.
        &["--grpc-tls-cert", "/nonexistent"],
        // A value clap cannot parse, or a flag it does not know, is a usage
        // error too: 64, as the other binaries and docs/router.md say (clap's
        // own default would be 2).
        &["--request-timeout", "soon"],
        &["--no-such-flag", "x"],
    ] {
        let output = tokio::process::Command::new(BIN)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(64), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(args[0]), "{args:?}: {stderr}");
    }
    let help = tokio::process::Command::new(BIN)
        .arg("--help")
        .output()
        .await
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--request-timeout"));
}

async fn get(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    host: Option<&str>,
) -> Option<(StatusCode, http::HeaderMap, Bytes)> {
    let mut request = Request::get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = client
        .request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .ok()?;
    let (parts, body) = response.into_parts();
    Some((
        parts.status,
        parts.headers,
        body.collect().await.ok()?.to_bytes(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_routes_from_the_apiserver_and_stops_on_sigterm() {
    let cp = control_plane_with_workers(&["apps", "isolane-system"]).await;
    let client = cp.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), "apps");
    let node = FakeNode::start("node-1").await;
    let lease = node_lease(
        "node-1",
        "isolane-system",
        &[format!("http://{}", node.addr)],
        2,
        false,
        Duration::from_secs(60),
        Timestamp::now(),
    );
    Api::<Lease>::namespaced(client.clone(), "isolane-system")
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let worker: Worker = serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "Worker",
        "metadata": {"name": "hello", "namespace": "apps"},
        "spec": {"script": "export default {}", "routes": [{"host": "hello.test"}]},
    }))
    .unwrap();
    workers
        .create(&PostParams::default(), &worker)
        .await
        .unwrap();
    workers
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "revision": "rev-1",
                "conditions": [{"type": "Ready", "status": "True", "reason": "Serving",
                    "message": "", "lastTransitionTime": Timestamp::now().to_string()}],
            }})),
        )
        .await
        .unwrap();

    let (listen, admin) = (free_port().unwrap(), free_port().unwrap());
    let (listen_addr, admin_addr) = (format!("127.0.0.1:{listen}"), format!("127.0.0.1:{admin}"));
    let logs = tempfile::tempdir().unwrap();
    let envs: [(&str, &OsStr); 6] = [
        ("KUBECONFIG", cp.kubeconfig_path().as_os_str()),
        ("ISOLANE_LISTEN_ADDR", listen_addr.as_ref()),
        ("ISOLANE_ADMIN_ADDR", admin_addr.as_ref()),
        ("ISOLANE_ROUTER_WORKERS", "2".as_ref()),
        ("ISOLANE_SHUTDOWN_GRACE", "2s".as_ref()),
        // No node answers in this test; mTLS is covered by the node's and e2e tests.
        ("ISOLANE_INSECURE_GRPC", "true".as_ref()),
    ];
    let mut child = Process::spawn(
        "isolane-router",
        Path::new(BIN),
        [] as [&str; 0],
        &envs,
        &logs.path().join("router.log"),
    )
    .unwrap();
    let http: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();

    // Ready once both watches have synced.
    let ready = format!("http://127.0.0.1:{admin}/ready");
    wait_until("the router to be ready", WAIT, || async {
        matches!(get(&http, &ready, None).await, Some((StatusCode::OK, _, _)))
    })
    .await;
    let url = format!("http://127.0.0.1:{listen}/anything");
    let (status, headers, _) = get(&http, &url, Some("hello.test")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-isolane-node"], "node-1");
    assert_eq!(headers["x-echo-worker"], "apps/hello");
    let (status, _, _) = get(&http, &url, Some("nobody.test")).await.unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND);
    let metrics = format!("http://127.0.0.1:{admin}/metrics");
    let (_, _, text) = get(&http, &metrics, None).await.unwrap();
    let text = String::from_utf8_lossy(&text);
    assert!(
        text.contains(r#"isolane_router_requests_total{node="node-1",status_class="2xx"} 1"#),
        "{text}"
    );
    assert!(text.contains("isolane_router_live_nodes 1"), "{text}");

    drop(http);
    let status = child
        .terminate(Duration::from_secs(10))
        .expect("exits within 10 s of SIGTERM");
    assert!(status.success(), "{status:?}");
}
