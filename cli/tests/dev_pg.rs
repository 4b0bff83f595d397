//! The real `pg` npm client (node-postgres, compat/pg/worker.js) in a
//! Worker served by `isolane dev`, querying a real PostgreSQL server
//! (`isolane_testenv::Postgres`) over `connect()` from cloudflare:sockets:
//! pg finds it runs on Workers and connects through pg-cloudflare, which
//! imports cloudflare:sockets with `import()`. Bundled as wrangler bundles
//! with nodejs_compat (compat/pg/bundle.mjs), and served by workerd beside
//! it: the answers are the same, in plain text and over TLS (STARTTLS:
//! pg's SSLRequest, then `startTls()` on the socket).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use isolane_testenv::{Postgres, workerd};

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, repo, request, when_ready};

/// The date compat/lib/wrangler.mjs and the compat suite give both runtimes.
const COMPATIBILITY_DATE: &str = "2025-11-01";

/// What compat/pg/worker.js answers when every query went as it should.
fn expected(tls: bool) -> serde_json::Value {
    serde_json::json!({
        "row": { "two": 2, "echo": "hi", "postgres": true },
        "names": ["one", "two"],
        "failed": "42P01 relation \"missing_table\" does not exist",
        "bytes": [1, 2, 3],
        "big": 200000,
        "tls": tls,
    })
}

/// Bundles compat/pg/worker.js into `dir/pg.js`.
fn bundle(dir: &Path) -> std::path::PathBuf {
    let compat = repo().join("compat");
    assert!(
        compat.join("node_modules/pg").is_dir(),
        "{}/node_modules/pg is missing: run hack/install-deps.sh (it runs `npm ci` in compat/)",
        compat.display()
    );
    let bundle = dir.join("pg.js");
    let bundled = Command::new("node")
        .arg(compat.join("pg/bundle.mjs"))
        .arg(&bundle)
        .status()
        .unwrap();
    assert!(bundled.success(), "compat/pg/bundle.mjs failed");
    bundle
}

/// `isolane dev` serving the bundle with nodejs_compat, and its port.
fn serve(bundle: &Path, extra: &[&str]) -> (Dev, u16) {
    let port = free_port().unwrap();
    let port_arg = port.to_string();
    let mut args = vec![
        bundle.to_str().unwrap(),
        "--port",
        &port_arg,
        "--compatibility-date",
        COMPATIBILITY_DATE,
        "--compatibility-flags",
        "nodejs_compat",
    ];
    args.extend_from_slice(extra);
    (Dev::start(&args), port)
}

/// POSTs `body` to `path` on 127.0.0.1:`port`.
async fn post(port: u16, path: &str, body: &str) -> Result<(u16, String), String> {
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header(http::header::HOST, "localhost")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client().request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        status,
        String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    ))
}

/// workerd serving the same bundle (its network trusting `trusted`), and
/// its port.
fn serve_on_workerd(dir: &Path, trusted: Option<&str>) -> (isolane_testenv::Process, u16) {
    let compat = repo().join("compat");
    let bin = workerd::binary(&compat);
    assert!(
        bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        bin.display()
    );
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let mut service = workerd::Service::module("pg", "pg.js", COMPATIBILITY_DATE, address);
    service.compatibility_flags = vec!["nodejs_compat".to_owned()];
    service.network = true;
    service.trusted_certificates = trusted.into_iter().map(str::to_owned).collect();
    let config = workerd::write_config(dir, "workerd.capnp", &[service]).unwrap();
    let process = workerd::serve(&bin, &config, &[], &dir.join("workerd.log")).unwrap();
    (process, address.port())
}

#[tokio::test]
async fn pg_queries_postgres_through_connect() {
    let postgres = Postgres::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bundle = bundle(dir.path());
    let (mut dev, port) = serve(&bundle, &[]);
    let query = format!(
        "db=postgres://postgres@127.0.0.1:{}/postgres",
        postgres.port()
    );
    let client = client();
    let (status, body) =
        when_ready(&client, &mut dev, port, "localhost", &format!("/?{query}")).await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer, expected(false));
    // A second request on the same isolate: its own connection.
    let (status, again) =
        when_ready(&client, &mut dev, port, "localhost", &format!("/?{query}")).await;
    assert_eq!((status, again.as_str()), (200, body.as_str()));
    assert!(dev.interrupt().success());

    // workerd, given the same bundle, answers the same.
    let (_workerd, workerd_port) = serve_on_workerd(dir.path(), None);
    let path = format!("/?{query}");
    let on_workerd = isolane_testenv::wait_until("workerd to answer", DEADLINE, || {
        request(&client, workerd_port, "localhost", &path)
    })
    .await;
    assert_eq!((on_workerd.0, on_workerd.1.as_str()), (200, body.as_str()));
}

/// pg over TLS: `sslmode=require` in the connection string, and
/// `ssl: { ca }` in the options. The server's certificate is signed by the
/// test's own CA, which `isolane dev --fetch-extra-ca` trusts (workerd: its
/// network's `trustedCertificates`); without it the handshake fails and
/// nothing is queried.
#[tokio::test]
async fn pg_queries_postgres_over_starttls() {
    let postgres = Postgres::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bundle = bundle(dir.path());
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, postgres.ca_pem()).unwrap();
    let db = format!(
        "db=postgres://postgres@127.0.0.1:{}/postgres",
        postgres.port()
    );
    let require = format!("/?{db}&ssl=require");
    let with_ca = format!("/?{db}");
    let client = client();

    // Not trusted: the handshake fails, for the certificate.
    let (mut dev, port) = serve(&bundle, &[]);
    let (status, body) = when_ready(&client, &mut dev, port, "localhost", &require).await;
    assert_eq!(status, 502, "{body}");
    assert!(body.to_lowercase().contains("certificate"), "{body}");
    assert!(dev.interrupt().success());

    let (mut dev, port) = serve(&bundle, &["--fetch-extra-ca", ca.to_str().unwrap()]);
    let (status, body) = when_ready(&client, &mut dev, port, "localhost", &require).await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer, expected(true));
    let (status, given_ca) = post(port, &with_ca, postgres.ca_pem()).await.unwrap();
    assert_eq!((status, given_ca.as_str()), (200, body.as_str()));
    assert!(dev.interrupt().success());

    // workerd, given the same bundle and trusting the same CA, answers the same.
    let (_workerd, workerd_port) = serve_on_workerd(dir.path(), Some(postgres.ca_pem()));
    let on_workerd = isolane_testenv::wait_until("workerd to answer", DEADLINE, || {
        request(&client, workerd_port, "localhost", &require)
    })
    .await;
    assert_eq!((on_workerd.0, on_workerd.1.as_str()), (200, body.as_str()));
    let on_workerd = post(workerd_port, &with_ca, postgres.ca_pem())
        .await
        .unwrap();
    assert_eq!((on_workerd.0, on_workerd.1.as_str()), (200, body.as_str()));
}
