//! The workerd launcher's config for Durable Objects: a counter class kept
//! on local disk answers 1, 2 on the real workerd (compat's npm copy), and
//! its count outlives a restart of workerd on the same folder.

use std::time::Duration;

use isolane_testenv::{free_port, http_probe, wait_until, workerd};

const COUNTER: &str = r#"
export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    const n = ((await this.state.storage.get('n')) ?? 0) + 1;
    await this.state.storage.put('n', n);
    return new Response(String(n));
  }
}
export default {
  fetch(request, env) { return env.COUNTER.get(env.COUNTER.idFromName('a')).fetch(request); },
};
"#;

fn serve(dir: &std::path::Path) -> (isolane_testenv::Process, std::net::SocketAddr) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = workerd::binary(&repo.join("compat"));
    assert!(
        bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        bin.display()
    );
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().expect("a free port")));
    let service = workerd::Service {
        durable_objects: vec![("COUNTER".to_owned(), "Counter".to_owned())],
        object_storage: Some(dir.join("objects")),
        ..workerd::Service::module("main", "worker.js", "2024-09-23", address)
    };
    let config = workerd::write_config(dir, "config.capnp", &[service]).expect("config written");
    let process =
        workerd::serve(&bin, &config, &[], &dir.join("workerd.log")).expect("workerd starts");
    (process, address)
}

async fn count(address: std::net::SocketAddr) -> String {
    wait_until(
        "workerd answers 200",
        Duration::from_secs(30),
        || async move {
            http_probe::get(address, "/")
                .await
                .filter(|response| response.status == 200)
                .map(|response| response.body)
        },
    )
    .await
}

#[tokio::test]
async fn a_durable_object_on_local_disk_counts_and_outlives_workerd() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::create_dir_all(dir.path().join("objects")).expect("objects folder");
    std::fs::write(dir.path().join("worker.js"), COUNTER).expect("worker.js written");
    let (process, address) = serve(dir.path());
    assert_eq!(count(address).await, "1");
    assert_eq!(count(address).await, "2");
    drop(process);
    let (_process, address) = serve(dir.path());
    assert_eq!(count(address).await, "3");
}

/// A socket with a keypair serves HTTPS: curl trusting only the CA that
/// issued it (and nothing else) gets the Worker's answer.
#[tokio::test]
async fn a_socket_with_a_keypair_serves_https() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = workerd::binary(&repo.join("compat"));
    std::fs::write(
        dir.path().join("worker.js"),
        "export default { fetch() { return new Response('over tls'); } };",
    )
    .expect("worker.js written");
    let ca = isolane_testenv::TestCa::new("workerd-tls").expect("a CA");
    let leaf = ca
        .issue(isolane_testenv::Leaf::server("workerd", &["localhost"]))
        .expect("a certificate");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).expect("ca.pem written");
    let port = free_port().expect("a free port");
    let service = workerd::Service {
        tls: Some(workerd::Keypair {
            certificate_chain: leaf.cert_pem,
            private_key: leaf.key_pem,
        }),
        ..workerd::Service::module(
            "main",
            "worker.js",
            "2024-09-23",
            ([127, 0, 0, 1], port).into(),
        )
    };
    let config = workerd::write_config(dir.path(), "config.capnp", &[service]).expect("config");
    let _process = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log"))
        .expect("workerd starts");
    let url = format!("https://localhost:{port}/");
    let resolve = format!("localhost:{port}:127.0.0.1");
    let body = wait_until("workerd answers over TLS", Duration::from_secs(30), || {
        let (url, resolve, ca_file) = (url.clone(), resolve.clone(), ca_file.clone());
        async move {
            let output = tokio::process::Command::new("curl")
                .args(["-s", "--max-time", "5", "--resolve", &resolve, "--cacert"])
                .arg(&ca_file)
                .arg(&url)
                .output()
                .await
                .ok()?;
            output.status.success().then_some(output.stdout)
        }
    })
    .await;
    assert_eq!(body, b"over tls");
}
