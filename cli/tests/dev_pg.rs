//! The real `pg` npm client (node-postgres, compat/pg/worker.js) in a
//! Worker served by `isolane dev`, querying a real PostgreSQL server
//! (`isolane_testenv::Postgres`) over `connect()` from cloudflare:sockets:
//! pg finds it runs on Workers and connects through pg-cloudflare, which
//! imports cloudflare:sockets with `import()`. Bundled as wrangler bundles
//! with nodejs_compat (compat/pg/bundle.mjs).
#![allow(clippy::unwrap_used)]

use std::process::Command;

use isolane_testenv::Postgres;

#[path = "support/dev.rs"]
mod support;
use support::{Dev, client, free_port, repo, when_ready};

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
        "2025-11-01",
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
    assert_eq!((status, again), (200, body));
    assert!(dev.interrupt().success());
}
