//! A SQLite-backed Durable Object (wrangler's `new_sqlite_classes`) served
//! by `isolane dev` from a wrangler project and by workerd (`enableSql =
//! true`) from the same files: one request runs the same SQL on each
//! (inserts with bindings, the cursor's shapes, `one()`'s errors, several
//! statements in one `exec`, `transactionSync` kept and rolled back,
//! refused statements, SQLite's errors) and both answer the same JSON; and
//! the rows `isolane dev` acknowledged outlive a SIGKILL of it.
#![allow(clippy::unwrap_used)]

use isolane_testenv::workerd;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, repo, request, when_ready};

const COMPATIBILITY_DATE: &str = "2025-11-01";

const WRANGLER_TOML: &str = r#"
name = "chat"
main = "chat.js"
compatibility_date = "2025-11-01"
durable_objects.bindings = [{ name = "CHAT", class_name = "Chat" }]
[[migrations]]
tag = "v1"
new_sqlite_classes = ["Chat"]
"#;

const CHAT_JS: &str = r#"
import { DurableObject } from 'cloudflare:workers';
const thrown = (f) => { try { f(); return 'no error'; } catch (e) { return `${e.name}: ${e.message}`; } };
const bytes = (v) => (v instanceof ArrayBuffer ? [...new Uint8Array(v)] : v);
export class Chat extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec('CREATE TABLE IF NOT EXISTS msg (id INTEGER PRIMARY KEY, who TEXT NOT NULL, body TEXT, n REAL, data BLOB)');
  }
  fetch() {
    const sql = this.sql;
    const storage = this.ctx.storage;
    const out = {};
    const ins = sql.exec('INSERT INTO msg (who, body, n, data) VALUES (?, ?, ?, ?), (?, ?, ?, ?)',
      'ann', 'hi', 1, new Uint8Array([1, 2]).buffer, 'bob', null, 2.5, new Uint8Array([3]));
    out.insert = [ins.columnNames, ins.rowsWritten, ins.toArray()];
    const sel = sql.exec('SELECT id, who, body, n, typeof(n) AS t, data FROM msg ORDER BY id');
    out.columns = sel.columnNames;
    out.rows = sel.toArray().map((r) => ({ ...r, data: bytes(r.data) }));
    out.raw = sql.exec('SELECT who, n FROM msg ORDER BY id').raw().toArray();
    out.iterated = [...sql.exec('SELECT who FROM msg ORDER BY id')].map((r) => r.who);
    const cursor = sql.exec('SELECT who FROM msg ORDER BY id');
    out.next = [cursor.next(), cursor.next(), cursor.next()];
    out.one = sql.exec('SELECT count(*) AS n FROM msg').one();
    out.none = thrown(() => sql.exec('SELECT 1 WHERE 0').one());
    out.many = thrown(() => sql.exec('SELECT who FROM msg').one());
    out.returning = sql.exec("INSERT INTO msg (who) VALUES ('cy') RETURNING id, who").one();
    out.multi = sql.exec('SELECT 1 AS a; SELECT 2 AS b').toArray();
    out.rolledBack = thrown(() => storage.transactionSync(() => { sql.exec("INSERT INTO msg (who) VALUES ('gone')"); throw new Error('undo'); }));
    out.kept = storage.transactionSync(() => sql.exec("INSERT INTO msg (who) VALUES ('dee') RETURNING who").one().who);
    out.count = sql.exec('SELECT count(*) AS n FROM msg').one().n;
    out.begin = thrown(() => sql.exec('BEGIN'));
    out.savepoint = thrown(() => sql.exec('SAVEPOINT s'));
    out.attach = thrown(() => sql.exec("ATTACH DATABASE 'x' AS x"));
    out.pragma = thrown(() => sql.exec('PRAGMA journal_mode = DELETE'));
    out.tableInfo = sql.exec('PRAGMA table_info(msg)').toArray().map((r) => r.name);
    out.reserved = thrown(() => sql.exec('CREATE TABLE _cf_x (a)'));
    out.missing = thrown(() => sql.exec('SELECT * FROM nowhere'));
    out.syntax = thrown(() => sql.exec('SELEC 1'));
    out.bindings = thrown(() => sql.exec('SELECT ?'));
    out.constraint = thrown(() => sql.exec('INSERT INTO msg (who) VALUES (NULL)'));
    out.size = sql.databaseSize > 0;
    return Response.json(out);
  }
}
export default {
  fetch(request, env) { return env.CHAT.getByName('room').fetch(request); },
};
"#;

#[tokio::test]
async fn dev_and_workerd_answer_the_same_sql() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wrangler.toml"), WRANGLER_TOML).unwrap();
    std::fs::write(dir.path().join("chat.js"), CHAT_JS).unwrap();
    let client = client();

    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let (status, on_dev) = when_ready(&client, &mut dev, port, "localhost", "/").await;
    assert_eq!(status, 200, "{on_dev}\n{}", dev.log());
    assert!(dev.interrupt().success());

    let bin = workerd::binary(&repo().join("compat"));
    assert!(
        bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        bin.display()
    );
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let objects = dir.path().join("objects");
    std::fs::create_dir_all(&objects).unwrap();
    let service = workerd::Service {
        durable_objects: vec![("CHAT".to_owned(), "Chat".to_owned())],
        enable_sql: true,
        // SQL needs objects on disk: workerd's in-memory storage is not
        // SQLite-backed (it throws the same error as a class without it).
        object_storage: Some(objects),
        ..workerd::Service::module("chat", "chat.js", COMPATIBILITY_DATE, address)
    };
    let config = workerd::write_config(dir.path(), "workerd.capnp", &[service]).unwrap();
    let log = dir.path().join("workerd.log");
    let _workerd = workerd::serve(&bin, &config, &["--verbose".into()], &log).unwrap();
    let (status, on_workerd) = isolane_testenv::wait_until("workerd to answer", DEADLINE, || {
        request(&client, address.port(), "localhost", "/")
    })
    .await;
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(status, 200, "{on_workerd}\n{logged}");
    let on_dev: serde_json::Value = serde_json::from_str(&on_dev).unwrap();
    let on_workerd: serde_json::Value = serde_json::from_str(&on_workerd).unwrap();
    assert_eq!(on_dev, on_workerd);
}

/// Rows `isolane dev` acknowledged are there after it is SIGKILLed and
/// started again on the same state folder (each request adds 4 rows and
/// answers the count).
#[tokio::test]
async fn dev_sql_rows_outlive_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wrangler.toml"), WRANGLER_TOML).unwrap();
    std::fs::write(dir.path().join("chat.js"), CHAT_JS).unwrap();
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let client = client();
    let mut counts = Vec::new();
    for _ in 0..2 {
        let port = free_port().unwrap();
        let args = ["--port", &port.to_string(), "--state", state];
        let mut dev = Dev::start_in(&args, Some(dir.path()));
        let (status, body) = when_ready(&client, &mut dev, port, "localhost", "/").await;
        assert_eq!(status, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        counts.push(answer["count"].clone());
        dev.process.kill();
    }
    assert_eq!(counts, [4, 8]);
}
