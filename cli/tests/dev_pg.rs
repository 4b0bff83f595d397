//! The real `pg` npm client (node-postgres, compat/pg/worker.js) in a
//! Worker served by `isolane dev`, querying a real PostgreSQL server
//! (`isolane_testenv::Postgres`) over `connect()` from cloudflare:sockets:
//! pg finds it runs on Workers and connects through pg-cloudflare, which
//! imports cloudflare:sockets with `import()`. Bundled as wrangler bundles
//! with nodejs_compat (compat/pg/bundle.mjs), and served by workerd beside
//! it: the answers are the same.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use isolane_testenv::{Postgres, workerd};

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, repo, request, when_ready};

/// The date compat/lib/wrangler.mjs and the compat suite give both runtimes.
const COMPATIBILITY_DATE: &str = "2025-11-01";

#[tokio::test]
async fn pg_queries_postgres_through_connect() {
    let compat = repo().join("compat");
    assert!(
        compat.join("node_modules/pg").is_dir(),
        "{}/node_modules/pg is missing: run hack/install-deps.sh (it runs `npm ci` in compat/)",
        compat.display()
    );
    let postgres = Postgres::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("pg.js");
    let bundled = Command::new("node")
        .arg(compat.join("pg/bundle.mjs"))
        .arg(&bundle)
        .status()
        .unwrap();
    assert!(bundled.success(), "compat/pg/bundle.mjs failed");
    let port = free_port().unwrap();
    let mut dev = Dev::start(&[
        bundle.to_str().unwrap(),
        "--port",
        &port.to_string(),
        "--compatibility-date",
        COMPATIBILITY_DATE,
        "--compatibility-flags",
        "nodejs_compat",
    ]);
    let query = format!(
        "db=postgres://postgres@127.0.0.1:{}/postgres",
        postgres.port()
    );
    let client = client();
    let (status, body) =
        when_ready(&client, &mut dev, port, "localhost", &format!("/?{query}")).await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer,
        serde_json::json!({
            "row": { "two": 2, "echo": "hi", "postgres": true },
            "names": ["one", "two"],
            "failed": "42P01 relation \"missing_table\" does not exist",
            "bytes": [1, 2, 3],
            "big": 200000,
        })
    );
    // A second request on the same isolate: its own connection.
    let (status, again) =
        when_ready(&client, &mut dev, port, "localhost", &format!("/?{query}")).await;
    assert_eq!((status, again.as_str()), (200, body.as_str()));
    assert!(dev.interrupt().success());

    // workerd, given the same bundle, answers the same.
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
    let config = workerd::write_config(dir.path(), "workerd.capnp", &[service]).unwrap();
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    let path = format!("/?{query}");
    let on_workerd = isolane_testenv::wait_until("workerd to answer", DEADLINE, || {
        request(&client, address.port(), "localhost", &path)
    })
    .await;
    assert_eq!((on_workerd.0, on_workerd.1.as_str()), (200, body.as_str()));
}
