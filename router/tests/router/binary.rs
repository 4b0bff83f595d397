//! The `isolane-router` binary as a process: flag validation, and the whole
//! composition (watches, admin server, router workers) against a real
//! apiserver, ending with a graceful SIGTERM.

use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use isolane_crds::Worker;
use isolane_membership::node_lease;
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

/// Kills the child if the test fails before it exits.
struct Child(tokio::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
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

    let (listen, admin) = (free_port(), free_port());
    let child = tokio::process::Command::new(BIN)
        .env("KUBECONFIG", cp.kubeconfig_path())
        .env("ISOLANE_LISTEN_ADDR", format!("127.0.0.1:{listen}"))
        .env("ISOLANE_ADMIN_ADDR", format!("127.0.0.1:{admin}"))
        .env("ISOLANE_ROUTER_WORKERS", "2")
        .env("ISOLANE_SHUTDOWN_GRACE", "2s")
        // No node answers in this test; mTLS is covered by the node's and e2e tests.
        .env("ISOLANE_INSECURE_GRPC", "true")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let http: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();

    // Ready once both watches have synced.
    let ready = format!("http://127.0.0.1:{admin}/ready");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some((StatusCode::OK, _, _)) = get(&http, &ready, None).await {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    let pid = child.0.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.0.wait())
        .await
        .expect("exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
