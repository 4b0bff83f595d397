//! The `isolane-node` binary against a real kube-apiserver: a bundle Secret
//! in, the Lease out, requests by gRPC to the endpoints the Lease lists, a
//! new revision served after a Secret update, and the drain on SIGTERM.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use isolane_membership::{NODE_LABEL, NodeMember};
use isolane_proto::runtime::v1::ExecuteRequest;
use isolane_testenv::{Process, wait_until};
use isolane_worker::{BUNDLE_KEY, BUNDLE_LABEL, Bundle, REVISION_ANNOTATION, WORKER_ID_ANNOTATION};
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams};
use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::support::*;

const NAMESPACE: &str = "isolane-node-test";
const NODE: &str = "node-a";
const WAIT: Duration = Duration::from_secs(30);

fn bundle_secret(name: &str, script: &str) -> (Secret, Bundle) {
    let bundle = Bundle::new(
        format!("demo/{name}"),
        script.to_owned(),
        BTreeMap::from([("GREETING".to_owned(), "hi".to_owned())]),
        isolane_worker::Limits::default(),
        Vec::new(),
    );
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(Bundle::secret_name("demo", name)),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([(
                BUNDLE_LABEL.to_owned(),
                "true".to_owned(),
            )])),
            annotations: Some(BTreeMap::from([
                (WORKER_ID_ANNOTATION.to_owned(), bundle.worker_id.clone()),
                (REVISION_ANNOTATION.to_owned(), bundle.revision.clone()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            BUNDLE_KEY.to_owned(),
            ByteString(serde_json::to_vec(&bundle).unwrap()),
        )])),
        ..Secret::default()
    };
    (secret, bundle)
}

async fn apply(secrets: &Api<Secret>, secret: &Secret) {
    let name = secret.metadata.name.clone().unwrap();
    secrets
        .patch(
            &name,
            &PatchParams::apply("node-test").force(),
            &Patch::Apply(secret),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_binary_serves_bundles_from_secrets_holds_a_lease_and_drains() {
    let cp = isolane_testenv::ControlPlane::start().await.unwrap();
    cp.create_namespace(NAMESPACE).await.unwrap();
    let client = cp.client();
    let secrets = Api::<Secret>::namespaced(client.clone(), NAMESPACE);
    let leases = Api::<Lease>::namespaced(client.clone(), NAMESPACE);

    let v1 =
        "export default { fetch(request, env) { return new Response(env.GREETING + ' v1'); } };";
    let (secret, bundle_v1) = bundle_secret("hello", v1);
    apply(&secrets, &secret).await;
    let (echo_secret, echo) = bundle_secret("waits", WAITS_FOR_BODY);
    apply(&secrets, &echo_secret).await;
    // A malformed bundle Secret is ignored, not fatal.
    let mut broken = bundle_secret("broken", v1).0;
    broken.data = Some(BTreeMap::from([(
        BUNDLE_KEY.to_owned(),
        ByteString(b"{".to_vec()),
    )]));
    apply(&secrets, &broken).await;

    let logs = tempfile::tempdir().unwrap();
    let mut node = Process::spawn(
        "isolane-node",
        Path::new(env!("CARGO_BIN_EXE_isolane-node")),
        [
            "--namespace",
            NAMESPACE,
            "--node-name",
            NODE,
            "--grpc-addr",
            "127.0.0.1:0",
            "--admin-addr",
            "127.0.0.1:0",
            // mTLS is covered by `mtls`; this test is about bundles and the Lease.
            "--insecure-grpc",
            "--threads",
            "2",
            "--pin-threads",
            "false",
            "--spare-isolates",
            "1",
            "--listeners",
            "per-thread",
            "--lease-duration",
            "3s",
            "--drain-timeout",
            "20s",
        ],
        &[
            ("KUBECONFIG", cp.kubeconfig_path().as_os_str()),
            ("ISOLANE_LOG", OsStr::new("info,isolane_node=debug")),
        ],
        &logs.path().join("node.log"),
    )
    .unwrap();

    // The Lease appears, listing one endpoint per thread.
    let lease = wait_until("the node's lease", WAIT, || {
        let leases = leases.clone();
        async move { leases.get_opt(NODE).await.unwrap() }
    })
    .await;
    let labels = lease.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get(NODE_LABEL).map(String::as_str), Some("true"));
    let member = NodeMember::from_lease(&lease).unwrap();
    assert_eq!(member.threads, 2);
    assert!(!member.draining);
    assert_eq!(member.endpoints.len(), 2, "{:?}", member.endpoints);
    assert!(
        member
            .endpoints
            .iter()
            .all(|e| e.starts_with("http://127.0.0.1:"))
    );
    assert_ne!(member.endpoints[0], member.endpoints[1]);
    assert_eq!(lease.spec.as_ref().unwrap().lease_duration_seconds, Some(3));

    // A request to thread 1, through thread 1's own listener.
    let mut thread1 = connect(member.endpoint_for(1).unwrap()).await;
    let answer = call(
        &mut thread1,
        head("GET", "demo/hello", &bundle_v1.revision, 1),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(answer.head.status, 200);
    assert_eq!(answer.text(), "hi v1");

    // The Lease is renewed (every second for a 3 s lease).
    let first_renewal = lease.spec.as_ref().unwrap().renew_time.clone().unwrap();
    wait_until("a lease renewal", WAIT, || {
        let leases = leases.clone();
        let first = first_renewal.clone();
        async move {
            let lease = leases.get(NODE).await.unwrap();
            let renewed = lease.spec.unwrap().renew_time.unwrap();
            (renewed.0 > first.0).then_some(())
        }
    })
    .await;

    // A new revision: served as soon as the watch delivers it (the request
    // waits for it if it asks first).
    let v2 =
        "export default { fetch(request, env) { return new Response(env.GREETING + ' v2'); } };";
    let (secret_v2, bundle_v2) = bundle_secret("hello", v2);
    assert_ne!(bundle_v1.revision, bundle_v2.revision);
    apply(&secrets, &secret_v2).await;
    let mut thread0 = connect(member.endpoint_for(0).unwrap()).await;
    let answer = call(
        &mut thread0,
        head("GET", "demo/hello", &bundle_v2.revision, 0),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(answer.text(), "hi v2");
    // The previous revision still runs for requests that ask for it.
    let answer = call(
        &mut thread0,
        head("GET", "demo/hello", &bundle_v1.revision, 0),
        &[],
    )
    .await
    .unwrap();
    assert_eq!(answer.text(), "hi v1");

    // A request in flight (its body not ended) when SIGTERM arrives.
    let (tx, rx) = mpsc::channel(4);
    tx.send(ExecuteRequest::head(head(
        "POST",
        "demo/waits",
        &echo.revision,
        1,
    )))
    .await
    .unwrap();
    tx.send(ExecuteRequest::body(&b"abcd"[..])).await.unwrap();
    let in_flight = {
        let mut client = thread1.clone();
        tokio::spawn(async move {
            let responses = client.execute(ReceiverStream::new(rx)).await?.into_inner();
            collect(responses).await
        })
    };
    let admin = stats_until_in_flight(&mut thread1).await;
    assert_eq!(admin, 1);

    node.signal(Signal::SIGTERM).unwrap();
    wait_until("the lease to say draining", WAIT, || {
        let leases = leases.clone();
        async move {
            let lease = leases.get(NODE).await.unwrap();
            NodeMember::from_lease(&lease)
                .unwrap()
                .draining
                .then_some(())
        }
    })
    .await;
    // New requests are refused so the router retries elsewhere.
    let refused = call(&mut thread0, head("GET", "demo/hello", "", 0), &[])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable);
    // The one in flight finishes.
    tx.send(ExecuteRequest::end()).await.unwrap();
    let answer = in_flight.await.unwrap().unwrap();
    assert_eq!(answer.text(), "got 4");

    wait_until("the lease to be deleted", WAIT, || {
        let leases = leases.clone();
        async move { leases.get_opt(NODE).await.unwrap().is_none().then_some(()) }
    })
    .await;
    let status = wait_until("the node to exit", WAIT, || {
        let status = node.try_exit();
        async move { status }
    })
    .await;
    assert!(status.success(), "exit status {status:?}");
}

/// Waits until the node reports one request in flight (by `Stats`).
async fn stats_until_in_flight(
    client: &mut isolane_proto::runtime::v1::runtime_client::RuntimeClient<
        tonic::transport::Channel,
    >,
) -> u32 {
    wait_until("a request in flight", WAIT, || {
        let mut client = client.clone();
        async move {
            let stats = client
                .stats(isolane_proto::runtime::v1::StatsRequest {})
                .await
                .unwrap()
                .into_inner();
            let in_flight: u32 = stats.threads.iter().map(|t| t.in_flight).sum();
            (in_flight > 0).then_some(in_flight)
        }
    })
    .await
}

#[test]
fn an_invalid_configuration_exits_64_before_binding() {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_isolane-node"))
        .args(["--node-name", "n", "--max-inflight-per-thread", "0"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(64));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_isolane-node"))
        .args(["--listeners", "sideways"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(64));
}
