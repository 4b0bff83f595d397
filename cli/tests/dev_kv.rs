//! Workers KV through `isolane dev` as a user runs it: the real binary,
//! real HTTP, the SQLite file under `--state`. The notes example
//! (examples/kv-notes.js) puts, reads, lists and deletes with metadata and
//! expiry, and its notes outlive a restart; Workers of two Kubernetes
//! namespaces binding the same KV namespace name never see each other's
//! data; a Worker YAML with a bad binding is refused with a clear message.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use isolane_testenv::wait_until;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port, repo};

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// One request; the answer's status, `x-metadata` header and body.
async fn call(
    client: &HttpClient,
    port: u16,
    method: &str,
    host: &str,
    path: &str,
    body: &str,
) -> Result<(u16, Option<String>, String), String> {
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header(http::header::HOST, host)
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let metadata = response
        .headers()
        .get("x-metadata")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((
        status,
        metadata,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// `GET path` once the server answers (it is starting), within the deadline.
async fn when_ready(
    client: &HttpClient,
    dev: &mut Dev,
    port: u16,
    host: &str,
    path: &str,
) -> (u16, Option<String>, String) {
    wait_until("isolane dev to answer", DEADLINE, || {
        let exited = dev.process.try_exit();
        async move {
            assert!(exited.is_none(), "isolane dev exited early: {exited:?}");
            call(client, port, "GET", host, path, "").await
        }
    })
    .await
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

fn notes(port: u16, state: &str) -> Dev {
    Dev::start(&[
        "examples/kv-notes.js",
        "--kv",
        "NOTES",
        "--state",
        state,
        "--port",
        &port.to_string(),
    ])
}

#[tokio::test]
async fn dev_kv_puts_gets_lists_and_deletes_and_keeps_notes_across_a_restart() {
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().join("state");
    let state_arg = state_dir.to_str().unwrap().to_owned();
    let port = free_port().unwrap();
    let mut dev = notes(port, &state_arg);
    let client = client();
    let h = "notes.test";
    assert_eq!(
        when_ready(&client, &mut dev, port, h, "/notes/hello").await,
        (404, None, "no such note\n".to_owned())
    );
    let put = |path: &'static str, body: &'static str| {
        let client = client.clone();
        async move { call(&client, port, "PUT", h, path, body).await.unwrap().0 }
    };
    assert_eq!(put("/notes/hello", "hi there").await, 201);
    assert_eq!(put("/notes/help", "ask").await, 201);
    assert_eq!(put("/notes/soon?ttl=3600", "goes away later").await, 201);
    assert_eq!(put("/notes/gone", "x").await, 201);
    assert_eq!(
        call(&client, port, "GET", h, "/notes/hello", "")
            .await
            .unwrap(),
        (
            200,
            Some(r#"{"type":"text/plain"}"#.to_owned()),
            "hi there".to_owned()
        )
    );
    assert_eq!(
        call(&client, port, "DELETE", h, "/notes/gone", "")
            .await
            .unwrap()
            .0,
        204
    );
    // The list: keys in order, each with its metadata, the expiring one
    // with its expiration; pages joined by the cursor.
    let (status, _, page) = call(&client, port, "GET", h, "/notes?prefix=he&limit=1", "")
        .await
        .unwrap();
    assert_eq!(status, 200);
    let page: serde_json::Value = serde_json::from_str(&page).unwrap();
    assert_eq!(page["keys"][0]["name"], "hello");
    assert_eq!(page["list_complete"], false);
    let cursor = page["cursor"].as_str().unwrap().to_owned();
    let (_, _, next) = call(
        &client,
        port,
        "GET",
        h,
        &format!("/notes?prefix=he&cursor={cursor}"),
        "",
    )
    .await
    .unwrap();
    let next: serde_json::Value = serde_json::from_str(&next).unwrap();
    assert_eq!(next["keys"][0]["name"], "help");
    assert_eq!(next["list_complete"], true);
    let (_, _, all) = call(&client, port, "GET", h, "/notes", "").await.unwrap();
    let all: serde_json::Value = serde_json::from_str(&all).unwrap();
    let names: Vec<&str> = all["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hello", "help", "soon"]);
    assert_eq!(all["keys"][0]["metadata"]["type"], "text/plain");
    assert!(all["keys"][0].get("expiration").is_none());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expiration = all["keys"][2]["expiration"].as_u64().unwrap();
    assert!(
        (now + 3500..=now + 3700).contains(&expiration),
        "{expiration} vs {now}"
    );
    // A TTL under a minute is refused (the Worker's put throws), and loses
    // nothing.
    assert_eq!(put("/notes/hello?ttl=30", "overwritten").await, 500);
    assert!(dev.interrupt().success());

    // Restarted on the same state folder: the notes are still there.
    let port = free_port().unwrap();
    let mut dev = notes(port, &state_arg);
    assert_eq!(
        when_ready(&client, &mut dev, port, h, "/notes/hello").await,
        (
            200,
            Some(r#"{"type":"text/plain"}"#.to_owned()),
            "hi there".to_owned()
        )
    );
    assert_eq!(
        call(&client, port, "GET", h, "/notes/gone", "")
            .await
            .unwrap()
            .0,
        404
    );
    assert!(state_dir.join(isolane_storage::SQLITE_FILE).exists());
    assert!(dev.interrupt().success());
}

/// The same Worker in two namespaces, each on its own host, binding the
/// same KV namespace name.
const TWO_NAMESPACES: &str = r#"apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: notes, namespace: team-a }
spec:
  routes: [{ host: a.test }]
  bindings: [{ name: NOTES, kvNamespace: notes }]
  scriptFrom: { configMapKeyRef: { name: code, key: notes.js } }
---
apiVersion: isolane.dev/v1alpha1
kind: Worker
metadata: { name: notes, namespace: team-b }
spec:
  routes: [{ host: b.test }]
  bindings: [{ name: NOTES, kvNamespace: notes }]
  scriptFrom: { configMapKeyRef: { name: code, key: notes.js } }
"#;

/// The folder's ConfigMap with the notes example as `notes.js`.
fn code_config_map() -> String {
    let script = std::fs::read_to_string(repo().join("examples/kv-notes.js")).unwrap();
    let indented: String = script.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{ name: code }}\ndata:\n  notes.js: |\n{indented}"
    )
}

#[tokio::test]
async fn dev_keeps_each_kubernetes_namespace_s_kv_apart() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), TWO_NAMESPACES).unwrap();
    std::fs::write(dir.path().join("code.yaml"), code_config_map()).unwrap();
    let state = dir.path().join("state");
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &["--state", state.to_str().unwrap()]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "a.test", "/notes/plan")
            .await
            .0,
        404
    );
    let put = |host: &'static str, body: &'static str| {
        let client = client.clone();
        async move {
            call(&client, port, "PUT", host, "/notes/plan", body)
                .await
                .unwrap()
                .0
        }
    };
    assert_eq!(put("a.test", "a's plan").await, 201);
    let get = |host: &'static str| {
        let client = client.clone();
        async move {
            let (status, _, body) = call(&client, port, "GET", host, "/notes/plan", "")
                .await
                .unwrap();
            (status, body)
        }
    };
    assert_eq!(get("b.test").await, (404, "no such note\n".to_owned()));
    let (_, _, list) = call(&client, port, "GET", "b.test", "/notes", "")
        .await
        .unwrap();
    assert!(list.contains(r#""keys":[]"#), "{list}");
    assert_eq!(put("b.test", "b's plan").await, 201);
    assert_eq!(get("a.test").await, (200, "a's plan".to_owned()));
    assert_eq!(get("b.test").await, (200, "b's plan".to_owned()));
    assert_eq!(
        call(&client, port, "DELETE", "b.test", "/notes/plan", "")
            .await
            .unwrap()
            .0,
        204
    );
    assert_eq!(get("a.test").await, (200, "a's plan".to_owned()));
    assert!(dev.interrupt().success());
}

#[test]
fn a_worker_yaml_with_a_bad_binding_exits_64_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = |bindings: &str| {
        format!(
            "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: w }}\nspec:\n  routes: [{{ host: w.test }}]\n  env: [{{ name: NOTES, value: x }}]\n  bindings: {bindings}\n  script: 'export default {{}}'\n"
        )
    };
    for (bindings, says) in [
        (
            "[{ name: NOTES, kvNamespace: notes }]",
            "binding name \"NOTES\" is used twice",
        ),
        (
            "[{ name: COUNTER, durableObject: { className: Counter, worker: other/host } }]",
            "durableObject.worker \"other/host\" is not a Worker name",
        ),
    ] {
        std::fs::write(dir.path().join("w.yaml"), yaml(bindings)).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_isolane"))
            .args(["dev", "--workers", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(64));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("spec.bindings: ") && stderr.contains(says),
            "{stderr}"
        );
    }
}
