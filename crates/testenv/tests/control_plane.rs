//! ControlPlane against the real etcd and kube-apiserver (or ISOLANE_TEST_KUBECONFIG).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use isolane_testenv::{ControlPlane, KUBE_VERSION, wait_until_blocking};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};

/// Set only in the child process of `processes_die_with_the_test_process`.
const ORPHAN_HELPER_ENV: &str = "ISOLANE_TESTENV_ORPHAN_HELPER";
const GONE_DEADLINE: Duration = Duration::from_secs(10);

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// Whether `pid` is still a live etcd or kube-apiserver (not a reused pid, not a zombie).
fn is_control_plane_process(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) state ...": a zombie ('Z') is dead already, only not yet reaped.
    // comm is cut at 15 bytes: the cached binary shows as "kube-apiserver-".
    let Some((head, state)) = stat.rsplit_once(") ") else {
        return false;
    };
    let comm = head.split_once(" (").map_or("", |(_, comm)| comm);
    (comm == "etcd" || comm.starts_with("kube-apiserver")) && !state.starts_with('Z')
}

fn wait_until_gone(pids: &[u32]) {
    wait_until_blocking(
        "the control plane's processes to die",
        GONE_DEADLINE,
        || {
            let alive: Vec<u32> = pids
                .iter()
                .copied()
                .filter(|&pid| is_control_plane_process(pid))
                .collect();
            if alive.is_empty() {
                Ok(())
            } else {
                Err(format!("still running: {alive:?}"))
            }
        },
    );
}

#[tokio::test]
async fn starts_serves_and_tears_down() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    eprintln!("control plane ready in {:?}", cp.startup_time());

    // Unique, for runs against a shared ISOLANE_TEST_KUBECONFIG cluster.
    let namespace = format!("testenv-{}", std::process::id());
    cp.create_namespace(&namespace)
        .await
        .expect("create namespace");

    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &namespace);
    let configmap = ConfigMap {
        metadata: ObjectMeta {
            name: Some("greeting".to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("hello".to_owned(), "world".to_owned())])),
        ..ConfigMap::default()
    };
    configmaps
        .create(&PostParams::default(), &configmap)
        .await
        .expect("create configmap");
    let read = configmaps.get("greeting").await.expect("get configmap");
    assert_eq!(
        read.data.and_then(|data| data.get("hello").cloned()),
        Some("world".to_owned())
    );

    // kubectl reads the same kubeconfig and sees the same object.
    let output = cp
        .kubectl([
            "get",
            "configmap",
            "greeting",
            "-n",
            &namespace,
            "-o",
            "jsonpath={.data.hello}",
        ])
        .output()
        .expect("run kubectl get");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "world");

    let output = cp
        .kubectl(["version", "-o", "json"])
        .output()
        .expect("run kubectl version");
    assert!(output.status.success(), "{output:?}");
    let version: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    if !cp.is_existing_cluster() {
        assert_eq!(
            version["serverVersion"]["gitVersion"], KUBE_VERSION,
            "{version}"
        );
    }

    let pids = cp.process_ids();
    let log_dir = cp.log_dir().map(ToOwned::to_owned);
    drop(cp);
    wait_until_gone(&pids);
    if let Some(dir) = log_dir
        && std::env::var_os(isolane_testenv::ENV_KEEP_TEST_LOGS).is_none()
    {
        assert!(!dir.exists(), "{} was not removed", dir.display());
    }
}

#[tokio::test]
async fn apply_file_creates_objects() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    let namespace = format!("applied-{}", std::process::id());
    cp.create_namespace(&namespace)
        .await
        .expect("create namespace");
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("configmap.yaml");
    std::fs::write(
        &manifest,
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: {namespace}\ndata:\n  answer: \"42\"\n"
        ),
    )
    .unwrap();
    cp.apply_file(&manifest).await.expect("apply");
    // Applying again is a no-op, not a conflict.
    cp.apply_file(&manifest).await.expect("apply again");

    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &namespace);
    let read = configmaps.get("applied").await.expect("get configmap");
    assert_eq!(
        read.data.and_then(|data| data.get("answer").cloned()),
        Some("42".to_owned())
    );

    let error = cp
        .apply_file(dir.path().join("missing.yaml"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "kubectl", "{error}");
}

/// Kills a process that started a control plane (no Drop runs) and checks that
/// etcd and kube-apiserver die with it.
#[test]
fn processes_die_with_the_test_process() {
    if std::env::var_os(isolane_testenv::ENV_TEST_KUBECONFIG).is_some() {
        return; // nothing is started on an existing cluster
    }
    /// Kills the helper even when an assertion below fails.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill(); // SIGKILL: no destructor runs in the helper
            let _ = self.0.wait();
        }
    }

    let mut helper = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "orphan_helper", "--ignored", "--nocapture"])
            .env(ORPHAN_HELPER_ENV, "1")
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the helper"),
    );
    let stdout = helper.0.stdout.take().unwrap();
    // The helper prints one line once its control plane is ready, or exits (EOF).
    let line = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("control plane: ").map(str::to_owned))
        .expect("the helper reports its control plane");
    let mut fields = line.split(' ');
    let pids: Vec<u32> = fields
        .next()
        .unwrap()
        .split(',')
        .map(|pid| pid.parse().unwrap())
        .collect();
    let log_dir = fields.next().unwrap().to_owned();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&pid| is_control_plane_process(pid)));

    drop(helper);
    wait_until_gone(&pids);
    std::fs::remove_dir_all(log_dir).unwrap();
}

#[tokio::test]
#[ignore = "run by processes_die_with_the_test_process"]
async fn orphan_helper() {
    if std::env::var_os(ORPHAN_HELPER_ENV).is_none() {
        return;
    }
    let cp = ControlPlane::start().await.expect("control plane starts");
    let pids: Vec<String> = cp.process_ids().iter().map(u32::to_string).collect();
    println!(
        "control plane: {} {}",
        pids.join(","),
        cp.log_dir().unwrap().display()
    );
    // Wait to be killed; bounded in case the parent test is gone.
    tokio::time::sleep(Duration::from_secs(120)).await;
}
