//! A whole node beside the control plane: the kubelet runs a pod from an image
//! the project builds (`hack/build-images.sh isolane-pause`), kube-proxy
//! programs a Service, and dropping the control plane leaves nothing on the
//! host (bridge, iptables chains, cgroups, mounts, processes).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_testenv::{Config, ControlPlane, NodeConfig, wait_until};
use k8s_openapi::api::core::v1::Pod;

const PAUSE: &str = "isolane.test/isolane-pause:node-test";

fn build_pause_image(out: &Path) -> std::path::PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hack/build-images.sh");
    let output = Command::new(script)
        .arg("--out")
        .arg(out)
        .args([
            "--registry",
            "isolane.test",
            "--tag",
            "node-test",
            "isolane-pause",
        ])
        .output()
        .expect("run hack/build-images.sh");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out.join("isolane-pause.oci.tar")
}

fn pod_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  namespace: default
spec:
  securityContext:
    runAsNonRoot: true
    runAsUser: 65535
    seccompProfile:
      type: RuntimeDefault
  containers:
    - name: pause
      image: {PAUSE}
      imagePullPolicy: Never
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities:
          drop: ["ALL"]
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_runs_a_pod_and_leaves_nothing_behind() {
    if std::env::var_os(isolane_testenv::ENV_TEST_KUBECONFIG).is_some() {
        return; // an existing cluster has its own nodes
    }
    let images = tempfile::tempdir().unwrap();
    let pause = build_pause_image(images.path());
    let config = Config {
        node: Some(NodeConfig {
            images: vec![pause],
            pause_image: PAUSE.to_owned(),
        }),
        ..Config::from_env()
    };
    let cp = ControlPlane::start_with(config)
        .await
        .expect("control plane with a node");
    assert!(cp.has_node());
    let started = Instant::now();

    let mut apply = cp.kubectl(["apply", "-f", "-"]);
    let mut child = apply
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(pod_yaml().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());

    let pods = kube::Api::<Pod>::namespaced(cp.client(), "default");
    let ip = wait_until("the pod to run", Duration::from_secs(90), || async {
        let pod = pods.get("sleeper").await.expect("get pod");
        let status = pod.status.unwrap_or_default();
        if status.phase.as_deref() == Some("Running") {
            Ok(status.pod_ip.expect("a running pod has an IP"))
        } else {
            Err(format!("not running: {:?}", status.conditions))
        }
    })
    .await;
    eprintln!("pod running at {ip} after {:?}", started.elapsed());
    assert!(ip.starts_with("10.87.0."), "{ip}");

    let pids = cp.process_ids();
    assert_eq!(pids.len(), 7, "etcd, apiserver and five node processes");
    drop(cp);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived the control plane"
        );
    }
    let left = isolane_testenv::node_leftovers();
    assert!(left.is_empty(), "left behind: {left:?}");
}
