//! The chart on a real kubelet, as a user runs it: the images `make images`
//! builds (from the binaries the other tests run) loaded into the test node's
//! containerd, `helm install` with the chart's own probes, security context
//! and RBAC, every pod Ready, the webhook answering `kubectl apply`, a Worker
//! answering HTTP through the router's Service (its ClusterIP, through
//! kube-proxy's rules), a WebSocket echoed through it, an 8 MiB bundle
//! pushed to the test registry and served by digest, then switched to a
//! second digest with no cold start (`pods/bundle.rs`), the leading
//! operator pod deleted and the other replica taking over (a Worker applied
//! after that answers too), `helm upgrade` rolling the node DaemonSet (surge)
//! and the router under steady load with no failed request, the only node pod deleted under load with no failed
//! request, 1,000 WebSocket clients echoed through the Service and their node
//! pod deleted mid-stream: each socket closed 1012 and reconnected
//! (`pods/websockets.rs`), and `helm uninstall` leaving no Isolane object.
//!
//! Needs root (the node: containerd, a bridge, iptables); see docs/testing.md.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_e2e::ingress::Ingress;
use isolane_e2e::load::{Load, LoadOptions, Target};
use isolane_e2e::process::workspace_root;
use isolane_e2e::release::{
    first_answer, helm_install, is_ready, kubelet_control_plane, router_service, worker_yaml,
};
use isolane_e2e::tools::{run, text, tool};
use isolane_testenv::wait_until;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;

const RELEASE: &str = "isolane";
const NAMESPACE: &str = "isolane-system";
const HOST: &str = "hello.pods.test";
const LEADER_LEASE: &str = "isolane-operator-leader";

#[path = "pods/bundle.rs"]
mod bundle;
#[path = "pods/websockets.rs"]
mod websockets;

/// Two clients sending to the Worker through `address` every 20 ms, once 20
/// answers have come.
async fn steady_load(address: SocketAddr) -> Load {
    let load = Load::start(
        address,
        vec![Target::host(HOST)],
        LoadOptions {
            concurrency: 2,
            pause: Duration::from_millis(20),
        },
    );
    load.wait_for_more(20, Duration::from_secs(30)).await;
    load
}

/// `kubectl delete pod` in the release namespace, without waiting.
fn delete_pod(kubeconfig: &Path, pod: &str) {
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["delete", "pod", pod, "-n", NAMESPACE, "--wait=false"]),
        None,
    );
    assert!(
        output.status.success(),
        "delete pod {pod}: {}",
        text(&output)
    );
}

/// The name of the only node pod once it is Ready (a replaced one may
/// still be stopping: this waits for it to be gone).
async fn only_node_pod(pods: &kube::Api<Pod>) -> String {
    wait_until("one node pod, Ready", Duration::from_secs(90), || async {
        let list = pods
            .list(&ListParams::default().labels("app.kubernetes.io/component=node"))
            .await
            .ok()?;
        match list.items.as_slice() {
            [pod] if is_ready(pod) => pod.metadata.name.clone(),
            _ => None,
        }
    })
    .await
}

fn worker(script: &str) -> String {
    worker_yaml("hello", HOST, script)
}

/// `kubectl apply` of `manifest`, which must succeed.
fn apply(kubeconfig: &Path, manifest: &str) {
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["apply", "-f", "-"]),
        Some(manifest),
    );
    assert!(output.status.success(), "kubectl apply: {}", text(&output));
}

/// The WebSocket echo Worker of docs/websockets.md.
const ECHO: &str = "export default {\n  fetch(request) {\n    const [client, server] = Object.values(new WebSocketPair());\n    server.accept();\n    server.addEventListener('message', (event) => server.send(event.data));\n    return new Response(null, { status: 101, webSocket: client });\n  },\n};";

/// A WebSocket through the router's Service to a node pod and back: text
/// and binary messages echoed in order, and a clean close.
async fn echo_through_the_service(kubeconfig: &Path, address: SocketAddr) {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;
    let host = "echo.pods.test";
    apply(kubeconfig, &worker_yaml("echo", host, ECHO));
    let (mut socket, _) = wait_until(
        "a WebSocket through the Service",
        Duration::from_secs(90),
        || async {
            let tcp = tokio::net::TcpStream::connect(address).await.ok()?;
            tokio_tungstenite::client_async(format!("ws://{host}/"), tcp)
                .await
                .ok()
        },
    )
    .await;
    for i in 0..50 {
        let message = if i % 2 == 0 {
            Message::text(format!("message {i}"))
        } else {
            Message::binary(vec![i; 1024])
        };
        socket.send(message.clone()).await.expect("send");
        let echoed = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("an echo in time")
            .expect("the socket is open")
            .expect("a message");
        assert_eq!(echoed, message, "message {i}");
    }
    socket.close(None).await.expect("close");
    eprintln!("50 WebSocket messages echoed through the router's Service");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_runs_on_a_kubelet_and_serves_a_worker_through_its_service() {
    if std::env::var_os(isolane_testenv::ENV_TEST_KUBECONFIG).is_some() {
        // An existing cluster has its own nodes, which cannot load these images.
        return;
    }
    let image_dir = tempfile::tempdir().expect("tempdir");
    let cp = kubelet_control_plane(image_dir.path()).await;
    let kubeconfig = cp.kubeconfig_path().to_owned();
    // On the node's bridge address, which exists once the node's host is prepared.
    let registry = bundle::start_registry();

    // `helm install --wait`: every Deployment and DaemonSet rolled out, which
    // needs every pod Ready by the chart's own readiness probes.
    let installed = Instant::now();
    let output = run(
        helm_install(
            &mut Command::new(tool("helm")),
            RELEASE,
            workspace_root().join("charts/isolane"),
            &kubeconfig,
            NAMESPACE,
        )
        // hello, echo, after and the bundle's two revisions stay warm.
        .args(["--set", "node.config.isolatesPerThread=6"])
        .args(["--set", "router.replicas=1"])
        .args(bundle::helm_values(&registry))
        .args(websockets::helm_values()),
        None,
    );
    assert!(output.status.success(), "helm install: {}", text(&output));
    eprintln!("helm install --wait took {:?}", installed.elapsed());

    let pods = kube::Api::<Pod>::namespaced(cp.client(), NAMESPACE);
    // `helm --wait` may return while a DaemonSet pod is still becoming Ready
    // (Helm allows maxUnavailable of them): wait for all, with a deadline.
    let all_ready = |list: &kube::core::ObjectList<Pod>| list.items.iter().all(is_ready);
    let deadline = Instant::now() + Duration::from_secs(120);
    let list = loop {
        let list = pods.list(&Default::default()).await.expect("list pods");
        if (list.items.len() >= 4 && all_ready(&list)) || Instant::now() > deadline {
            break list;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    eprintln!("every pod Ready after {:?}", installed.elapsed());
    assert!(list.items.len() >= 4, "operator ×2, node, router");
    for pod in &list.items {
        let name = pod.metadata.name.clone().unwrap_or_default();
        assert!(is_ready(pod), "{name} is not Ready");
        // The chart's security context reached the container as the kubelet ran it.
        let spec = pod.spec.clone().unwrap_or_default();
        let context = spec.containers[0]
            .security_context
            .clone()
            .unwrap_or_default();
        assert_eq!(context.read_only_root_filesystem, Some(true), "{name}");
        assert_eq!(
            spec.security_context.and_then(|c| c.run_as_user),
            Some(65532),
            "{name}"
        );
    }

    // The webhook answers: a script that does not parse is refused at apply time.
    // Its pod being Ready does not make its Service reachable at once: the
    // EndpointSlice and then kube-proxy's rules follow it (CI saw "connection
    // refused" from the apiserver's call right after every pod was Ready), so
    // wait for the webhook itself to answer.
    let output = wait_until(
        "the admission webhook to be reachable through its Service",
        Duration::from_secs(60),
        || {
            let output = run(
                Command::new("kubectl")
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["apply", "-f", "-"]),
                Some(&worker("export default { fetch( }")),
            );
            let unreachable = text(&output).contains("failed calling webhook");
            async move { (!unreachable).then_some(output) }
        },
    )
    .await;
    assert!(!output.status.success(), "a broken script was admitted");
    assert!(
        text(&output).contains("admission webhook"),
        "refused, but not by the webhook: {}",
        text(&output)
    );
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["apply", "-f", "-"]),
        Some(&worker(
            "export default {\n  async fetch(request) {\n    return new Response(\"hello from a pod\\n\");\n  },\n};",
        )),
    );
    assert!(output.status.success(), "kubectl apply: {}", text(&output));

    // HTTP through the router's Service: its ClusterIP, which only kube-proxy's
    // iptables rules send to the router pod.
    let address = router_service(cp.client(), NAMESPACE, RELEASE).await;
    let ingress = Ingress::new(address);
    let reply = first_answer(&ingress, HOST).await;
    assert_eq!(reply.body, "hello from a pod\n");
    eprintln!(
        "from helm install to the first 200 through the Service: {:?}",
        installed.elapsed()
    );
    echo_through_the_service(&kubeconfig, address).await;
    bundle::pushed_served_and_switched(&cp.client(), &pods, &registry, &ingress, image_dir.path())
        .await;

    // The leading operator pod goes away; the other replica takes the Lease
    // and reconciles a Worker applied after that. The apply goes through the
    // webhook at once: the stopping replica served it until its endpoint
    // left the Service (operator.preStopSleepSeconds).
    let leases = kube::Api::<Lease>::namespaced(cp.client(), NAMESPACE);
    let holder = |lease: Lease| lease.spec.and_then(|spec| spec.holder_identity);
    let leader = holder(leases.get(LEADER_LEASE).await.expect("the leader Lease"))
        .expect("a leader holds the Lease");
    let deleted = Instant::now();
    delete_pod(&kubeconfig, &leader);
    let new_leader = wait_until("another operator to lead", Duration::from_secs(90), || {
        let leases = leases.clone();
        let leader = leader.clone();
        async move {
            let holder = holder(leases.get(LEADER_LEASE).await.ok()?)?;
            (holder != leader && !holder.is_empty()).then_some(holder)
        }
    })
    .await;
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["apply", "-f", "-"]),
        Some(&worker_yaml(
            "after",
            "after.pods.test",
            "export default {\n  async fetch(request) {\n    return new Response(\"after the takeover\\n\");\n  },\n};",
        )),
    );
    assert!(output.status.success(), "kubectl apply: {}", text(&output));
    let reply = wait_until(
        "the Worker applied after the takeover to answer",
        Duration::from_secs(90),
        || {
            let ingress = ingress.clone();
            async move {
                match ingress.get("after.pods.test", "/").await {
                    Ok(reply) if reply.status == 200 => Some(reply),
                    _ => None,
                }
            }
        },
    )
    .await;
    assert_eq!(reply.body, "after the takeover\n");
    eprintln!(
        "leader {leader} deleted; {new_leader} led and served a new Worker {:?} later",
        deleted.elapsed()
    );

    // `helm upgrade` that rolls the node DaemonSet (a surge: the new pod is
    // Ready before the old one stops) and the router under steady load.
    let load = steady_load(address).await;
    let upgraded = Instant::now();
    let output = run(
        Command::new(tool("helm"))
            .args(["upgrade", RELEASE])
            .arg(workspace_root().join("charts/isolane"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", NAMESPACE, "--reuse-values"])
            .args(["--set", "node.podAnnotations.rolled=once"])
            .args(["--set", "router.podAnnotations.rolled=once"])
            .args(["--set", "node.updateStrategy.type=RollingUpdate"])
            .args(["--set", "node.updateStrategy.rollingUpdate.maxSurge=1"])
            .args([
                "--set",
                "node.updateStrategy.rollingUpdate.maxUnavailable=0",
            ])
            .args(["--wait", "--timeout", "4m"]),
        None,
    );
    assert!(output.status.success(), "helm upgrade: {}", text(&output));
    let rolled = upgraded.elapsed();
    load.wait_for_more(20, Duration::from_secs(30)).await;
    let tally = load.stop().await;
    eprintln!(
        "helm upgrade rolled the node and the router in {rolled:?} under load: {}\n{}",
        tally.summary(),
        tally.describe_failures(upgraded)
    );
    // Nothing failed: the node's surge rollout lost no request, and the old
    // router pod kept accepting (its preStop sleep) until kube-proxy had
    // stopped sending it new connections.
    let failures = tally.failures();
    assert!(
        failures.is_empty(),
        "{} requests failed during the rollout: {failures:?}",
        failures.len()
    );

    // The only node pod is deleted under load: it drains (its Lease says so)
    // and the DaemonSet starts a new one; meanwhile the router holds the
    // requests that find no live node (`router.config.nodeWait`) instead of
    // refusing them, and retries only the ones a draining node refused before
    // starting them.
    // The surge's old pod may still be stopping: wait for the one left.
    let old_node = only_node_pod(&pods).await;
    let load = steady_load(address).await;
    let deleted = Instant::now();
    delete_pod(&kubeconfig, &old_node);
    let new_node = wait_until(
        "a new node pod to be Ready",
        Duration::from_secs(120),
        || {
            let pods = pods.clone();
            let old_node = old_node.clone();
            async move {
                let list = pods
                    .list(&ListParams::default().labels("app.kubernetes.io/component=node"))
                    .await
                    .ok()?;
                list.items.into_iter().find_map(|pod| {
                    let name = pod.metadata.name.clone()?;
                    (name != old_node && is_ready(&pod)).then_some(name)
                })
            }
        },
    )
    .await;
    let replaced = deleted.elapsed();
    // Served by the new pod: the swap is complete, not merely begun.
    load.wait_for_more(20, Duration::from_secs(60)).await;
    let tally = load.stop().await;
    eprintln!(
        "node pod {old_node} deleted under load, {new_node} Ready after {replaced:?}: {}\n{}",
        tally.summary(),
        tally.describe_failures(deleted)
    );
    let failures = tally.failures();
    assert!(
        failures.is_empty(),
        "{} requests failed while the node pod was replaced: {failures:?}",
        failures.len()
    );

    // 1,000 WebSocket clients, then their node pod deleted mid-stream.
    websockets::thousand_clients_and_a_drain(&kubeconfig, &pods, address).await;

    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "delete", "workers", "hello", "after", "big", "-n", "default", "--wait",
            ]),
        None,
    );
    assert!(output.status.success(), "delete worker: {}", text(&output));
    let output = run(
        Command::new(tool("helm"))
            .args(["uninstall", RELEASE, "--wait", "--timeout", "2m"])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", NAMESPACE]),
        None,
    );
    assert!(output.status.success(), "helm uninstall: {}", text(&output));
    wait_until(
        "every Isolane pod to be gone",
        Duration::from_secs(90),
        || {
            let pods = pods.clone();
            async move {
                let list = pods.list(&Default::default()).await.ok()?;
                list.items.is_empty().then_some(())
            }
        },
    )
    .await;
    // Nothing of the release is left, in any namespace or cluster-wide (the
    // CRD stays, as Helm keeps the CRDs it installed from crds/).
    let output = run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "get",
                "all,secrets,configmaps,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets,networkpolicies,clusterroles,clusterrolebindings,validatingwebhookconfigurations",
                "--all-namespaces",
                "-l",
                &format!("app.kubernetes.io/instance={RELEASE}"),
                "-o",
                "name",
            ]),
        None,
    );
    assert!(output.status.success(), "kubectl get: {}", text(&output));
    let left = String::from_utf8_lossy(&output.stdout);
    assert!(left.trim().is_empty(), "left behind: {left}");
}
