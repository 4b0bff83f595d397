//! D1 through `isolane dev` as a user runs it (issue 58): the real binary,
//! real HTTP, one engine thread.
//!
//! - `compat/apps/d1` (every D1 method and error), built by the compat
//!   suite's wrangler, is served by `isolane dev` and by `wrangler dev`
//!   (miniflare's local D1 on workerd) in the same run and the answers
//!   compared. Normalized before comparing: each
//!   `meta.duration` and `meta.timings.sql_duration_ms` (timings),
//!   `meta.served_by` (the server's name), and `meta.rows_read` /
//!   `meta.rows_written`, which Isolane counts from stock SQLite (rows
//!   returned plus full-scan steps; rows changed) where workerd counts with
//!   its own SQLite's counters (index writes too): asserted apart below.
//!   Also asserted apart: D1's 2,000,000-byte value limit, which Isolane
//!   holds to and miniflare does not, and one `meta` after `withSession()`
//!   (miniflare's session bookmark adds a page of its own).
//! - What a request wrote is there after `isolane dev` is killed with
//!   SIGKILL and started again on the same state folder.
//! - `isolane d1 migrations apply --local` (the default, as wrangler's)
//!   applies a migrations folder once, in order, a failing file rolled
//!   back; the database it makes answers as the one `wrangler d1
//!   migrations apply --local` makes. `migrations list` prints what
//!   `wrangler d1 migrations list --local` prints for the same folder and
//!   state; `migrations create` names the next file as wrangler does.
//!   With `migrations_pattern` (drizzle's nested layout, unpadded numbers)
//!   both list and apply the same files in the same order, and the two
//!   databases answer alike.
//! - `compat/apps/drizzle`: Drizzle ORM's D1 driver on a database migrated
//!   from drizzle-kit's folder (`d1 migrations apply`, ours and wrangler's)
//!   and its Durable Object driver on a SQLite-backed object migrated by
//!   `drizzle-orm/durable-sqlite/migrator` (the same files, bundled):
//!   inserts and updates with `returning()`, joins, aggregates, a batch and
//!   a transaction (kept, and rolled back by a unique violation),
//!   relational queries, column modes, the errors Drizzle wraps; the same
//!   JSON as `wrangler dev`'s, and the same after a SIGKILL and a restart.
//! - Two namespaces' databases of the same name are apart; an endless
//!   recursive CTE ends at the Worker's CPU limit while a neighbour Worker
//!   on the same thread answers before, during and after it.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/peer.rs"]
mod peer;
#[path = "support/dev.rs"]
mod support;
use nix::sys::signal::Signal;
use serde_json::Value;
use support::{Dev, client, free_port, request, when_ready};

/// `value` with the fields named in the module's doc set to null.
fn normalized(value: &Value) -> Value {
    const FIELDS: [&str; 5] = [
        "duration",
        "sql_duration_ms",
        "served_by",
        "rows_read",
        "rows_written",
    ];
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if FIELDS.contains(&k.as_str()) {
                        Value::Null
                    } else {
                        normalized(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// The differences asserted apart (see the module's doc), taken out of
/// both answers: D1's value limit, and the `meta` after `withSession()`.
fn set_apart(ours: &mut Value, theirs: &mut Value) {
    for key in ["bigValue", "bigRow"] {
        assert_eq!(
            theirs[key], 2_000_001,
            "miniflare takes a 2,000,001-byte value"
        );
        assert_eq!(
            ours[key]["error"], "D1_ERROR: string or blob too big: SQLITE_TOOBIG",
            "{key}"
        );
        ours[key] = Value::Null;
        theirs[key] = Value::Null;
    }
    for answer in [&mut *ours, &mut *theirs] {
        let batch = &mut answer["sessionBatch"][0];
        assert_eq!(batch["results"], serde_json::json!([{ "one": 1 }]));
        batch["meta"] = Value::Null;
    }
}

#[tokio::test]
async fn dev_d1_answers_as_wrangler_dev_does_and_keeps_writes_across_a_kill() {
    let app = support::repo().join("compat/apps/d1");
    let state = tempfile::tempdir().unwrap();
    let client = client();
    let port = free_port().unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    let wrangler = free_port().unwrap();
    let _wrangler = peer::wrangler_dev_persisting(&app, wrangler, &state.path().join("wrangler"));
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    peer::wrangler_ready(&client, &app, wrangler, "/").await;

    let mut ours = peer::json(&client, port, "/probe").await;
    let mut theirs = peer::json(&client, wrangler, "/probe").await;
    // The counts Isolane takes from stock SQLite, as they are.
    assert_eq!(ours["run"]["meta"]["rows_written"], 1);
    assert_eq!(ours["all"]["meta"]["rows_read"], 5);
    set_apart(&mut ours, &mut theirs);
    let (ours, theirs) = (normalized(&ours), normalized(&theirs));
    for (key, value) in theirs.as_object().unwrap() {
        assert_eq!(&ours[key], value, "{key}: isolane dev, then wrangler dev");
    }
    assert_eq!(ours, theirs);
    // A few answers spelled out, so that the comparison is not of nothing.
    assert_eq!(
        ours["exec"],
        serde_json::json!({ "count": 2, "duration": null })
    );
    assert_eq!(
        ours["first"],
        serde_json::json!({ "name": "bob", "score": 2 })
    );
    assert_eq!(
        ours["all"]["results"][0]["data"],
        serde_json::json!([1, 2, 3])
    );
    assert_eq!(ours["afterFailedBatch"], 2, "a failed batch kept nothing");
    assert_eq!(
        ours["bindUndefined"]["error"],
        "D1_TYPE_ERROR: Type 'undefined' not supported for value 'undefined'"
    );
    assert_eq!(
        ours["bigStatement"]["error"],
        "D1_ERROR: statement too long: SQLITE_TOOBIG"
    );

    // Acknowledged writes outlive a SIGKILL.
    let stamp = format!("{:?}", Instant::now());
    let put = format!("/put?k=kept&v={}", urlencode(&stamp));
    assert_eq!(peer::json(&client, port, &put).await, true);
    dev.process.signal(Signal::SIGKILL).unwrap();
    dev.process.wait_exit(support::DEADLINE).unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    assert_eq!(
        peer::json(&client, port, "/get?k=kept").await,
        stamp.as_str()
    );
    assert!(dev.interrupt().success());
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// A Worker of a namespace on D1 database `probe`: `/put`, `/get`, and
/// `/loop`, an endless recursive CTE; errors answered as `caught …`.
const APP: &str = r#"export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const k = url.searchParams.get('k');
    try {
      switch (url.pathname) {
        case '/put':
          await env.DB.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)');
          await env.DB.prepare('INSERT OR REPLACE INTO kv VALUES (?, ?)').bind(k, url.searchParams.get('v')).run();
          return new Response('ok');
        case '/get':
          return new Response(String(await env.DB.prepare('SELECT v FROM kv WHERE k = ?').bind(k).first('v')));
        case '/loop':
          await env.DB.prepare('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c').first();
          return new Response('the loop ended');
      }
    } catch (e) {
      return new Response(`caught ${e.message}`);
    }
    return new Response('?');
  }
};
"#;

#[tokio::test]
async fn dev_d1_namespaces_are_apart_and_an_endless_query_ends_at_the_cpu_limit() {
    let spec = |host: &str| {
        format!(
            "  routes: [{{ host: {host} }}]\n  limits: {{ cpuMs: 50 }}\n  bindings: [{{ name: DB, d1: {{ database: probe }} }}]\n"
        )
    };
    let client = client();
    let (_dir, dev, port) = support::two_teams_and_a_neighbour(&client, spec, APP).await;
    let ok = (200, "neighbour ok".to_owned());
    let ask = |host: &'static str, path: &'static str| request(&client, port, host, path);

    // The same database name, two namespaces: two databases.
    assert_eq!(
        ask("a.test", "/put?k=x&v=from-a").await.unwrap(),
        (200, "ok".into())
    );
    assert_eq!(
        ask("b.test", "/get?k=x").await.unwrap().1,
        "caught D1_ERROR: no such table: kv: SQLITE_ERROR"
    );
    assert_eq!(
        ask("b.test", "/put?k=x&v=from-b").await.unwrap(),
        (200, "ok".into())
    );
    assert_eq!(ask("a.test", "/get?k=x").await.unwrap().1, "from-a");
    assert_eq!(ask("b.test", "/get?k=x").await.unwrap().1, "from-b");

    // The endless query, with the neighbour before, during and after.
    assert_eq!(ask("neighbour.test", "/").await.unwrap(), ok);
    let started = Instant::now();
    let (hostile, during) = tokio::join!(ask("a.test", "/loop"), async {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let asked = Instant::now();
        (ask("neighbour.test", "/").await.unwrap(), asked.elapsed())
    });
    let took = started.elapsed();
    let (status, body) = hostile.unwrap();
    eprintln!(
        "endless CTE at cpuMs 50: answered {status} in {took:?}: {body}; the neighbour asked during it answered in {:?}",
        during.1
    );
    assert!(status >= 500, "{status} {body}");
    assert!(body.contains("CPU time limit of 50 ms exceeded"), "{body}");
    assert!(took < Duration::from_secs(5), "the query ran {took:?}");
    assert_eq!(during.0, ok);
    assert!(during.1 < Duration::from_secs(5), "{:?}", during.1);
    assert_eq!(ask("neighbour.test", "/").await.unwrap(), ok);
    // The database serves on, its data whole.
    assert_eq!(ask("a.test", "/get?k=x").await.unwrap().1, "from-a");
    assert!(dev.interrupt().success());
}

/// A wrangler project whose Worker answers its items and the migrations
/// applied, as JSON.
const MIGRATED: &str = r#"export default {
  async fetch(request, env) {
    const items = await env.DB.prepare('SELECT * FROM items ORDER BY id').all();
    const applied = await env.DB.prepare('SELECT name FROM d1_migrations ORDER BY id').raw();
    return Response.json({ items: items.results, applied: applied.flat() });
  }
};
"#;

/// `isolane d1 <args…>` in `dir`: exit code, stdout, stderr.
fn isolane_d1(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_isolane"))
        .current_dir(dir)
        .arg("d1")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `wrangler d1 migrations apply DB --local --persist-to persist` in
/// `dir`: its exit code and output.
fn wrangler_apply(dir: &Path, persist: &Path) -> (Option<i32>, String) {
    let persist = persist.to_str().unwrap();
    wrangler_d1(
        dir,
        &[
            "migrations",
            "apply",
            "DB",
            "--local",
            "--persist-to",
            persist,
        ],
    )
}

/// `wrangler d1 <args…>` in `dir`: its exit code and output.
fn wrangler_d1(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    use isolane_testenv::wrangler;
    let node = wrangler::node22(&support::repo()).expect("Node.js 22 for wrangler");
    let output = std::process::Command::new(node)
        .current_dir(dir)
        .arg(wrangler::wrangler_js(&support::repo()))
        .arg("d1")
        .args(args)
        .envs(wrangler::OFFLINE_ENV)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text)
}

#[tokio::test]
async fn d1_migrations_apply_local_runs_each_file_once_in_order_as_wrangler_does() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    std::fs::write(dir.path().join("index.js"), MIGRATED).unwrap();
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = 'shop'\nmain = 'index.js'\ncompatibility_date = '2025-11-01'\n\
         [[d1_databases]]\nbinding = 'DB'\ndatabase_name = 'shopdb'\ndatabase_id = 'x'\nmigrations_dir = 'schema'\n",
    )
    .unwrap();
    let schema = dir.path().join("schema");
    std::fs::create_dir(&schema).unwrap();
    std::fs::write(
        schema.join("0001_init.sql"),
        "-- the first table\nCREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);\nINSERT INTO items (name) VALUES ('a');\n",
    )
    .unwrap();
    std::fs::write(
        schema.join("0002_more.sql"),
        "ALTER TABLE items ADD COLUMN price REAL;\nINSERT INTO items (name, price) VALUES ('b', 2.5);\n",
    )
    .unwrap();

    // Local is the default, as wrangler's.
    let default_local = ["migrations", "apply", "DB", "--state", state_arg];
    let (code, stdout, stderr) = isolane_d1(dir.path(), &default_local);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Applied 0001_init.sql\nApplied 0002_more.sql\n");
    let by_name = [
        "migrations",
        "apply",
        "shopdb",
        "--local",
        "--state",
        state_arg,
    ];
    let apply = ["migrations", "apply", "DB", "--local", "--state", state_arg];
    let (code, stdout, _) = isolane_d1(dir.path(), &by_name);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "No migrations to apply.\n")
    );
    // wrangler's own `d1 migrations apply --local` on the same folder,
    // into a local D1 of its own (served by `wrangler dev` below).
    let persist = dir.path().join("wrangler-state");
    let (code, stdout) = wrangler_apply(dir.path(), &persist);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("0002_more.sql"), "{stdout}");
    // A file that fails is rolled back, and named.
    std::fs::write(
        schema.join("0003_bad.sql"),
        "INSERT INTO items (name) VALUES ('c');\nINSERT INTO nowhere VALUES (1);\n",
    )
    .unwrap();
    let (code, _, stderr) = isolane_d1(dir.path(), &apply);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("0003_bad.sql failed"), "{stderr}");
    assert!(stderr.contains("no such table: nowhere"), "{stderr}");

    // isolane dev on the same state serves what the migrations made.
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(
        &["--port", &port.to_string(), "--state", state_arg],
        Some(dir.path()),
    );
    let client = client();
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    let wrangler = free_port().unwrap();
    let _wrangler = peer::wrangler_dev_persisting(dir.path(), wrangler, &persist);
    peer::wrangler_ready(&client, dir.path(), wrangler, "/").await;
    let ours = peer::json(&client, port, "/").await;
    assert_eq!(
        ours,
        peer::json(&client, wrangler, "/").await,
        "isolane dev, then wrangler dev"
    );
    assert_eq!(
        ours,
        serde_json::json!({
            "items": [
                { "id": 1, "name": "a", "price": null },
                { "id": 2, "name": "b", "price": 2.5 }
            ],
            "applied": ["0001_init.sql", "0002_more.sql"]
        })
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn d1_migrations_list_and_create_answer_as_wrangler_s() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    std::fs::write(dir.path().join("index.js"), MIGRATED).unwrap();
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = 'shop'\nmain = 'index.js'\ncompatibility_date = '2025-11-01'\n\
         [[d1_databases]]\nbinding = 'DB'\ndatabase_name = 'shopdb'\ndatabase_id = 'x'\n",
    )
    .unwrap();
    // `create` makes the folder and numbers the files.
    let create = |message: &str| {
        let (code, stdout, stderr) =
            isolane_d1(dir.path(), &["migrations", "create", "DB", message]);
        assert_eq!(code, Some(0), "{stderr}");
        stdout
    };
    let stdout = create("create items");
    assert!(
        stdout.starts_with("\u{2705} Successfully created Migration '0001_create_items.sql'!\n"),
        "{stdout}"
    );
    let folder = dir.path().join("migrations");
    std::fs::write(
        folder.join("0001_create_items.sql"),
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);\n",
    )
    .unwrap();
    create("add b");
    // wrangler names the next file alike: 0003_add_c.sql, in a copy.
    let copy = tempfile::tempdir().unwrap();
    for file in ["index.js", "wrangler.toml"] {
        std::fs::copy(dir.path().join(file), copy.path().join(file)).unwrap();
    }
    std::fs::create_dir(copy.path().join("migrations")).unwrap();
    for file in ["0001_create_items.sql", "0002_add_b.sql"] {
        std::fs::copy(folder.join(file), copy.path().join("migrations").join(file)).unwrap();
    }
    let (code, theirs) = wrangler_d1(copy.path(), &["migrations", "create", "DB", "add c"]);
    assert_eq!(code, Some(0), "{theirs}");
    assert!(
        copy.path().join("migrations/0003_add_c.sql").exists(),
        "{theirs}"
    );
    create("add c");
    assert!(folder.join("0003_add_c.sql").exists());
    // `list`: the pending files, in wrangler's table, as wrangler prints
    // them for the same folder and database.
    let list = ["migrations", "list", "DB", "--state", state_arg];
    let (code, ours, stderr) = isolane_d1(dir.path(), &list);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ours.starts_with("Migrations to be applied:\n"), "{ours}");
    let persist = dir.path().join("wrangler-state");
    let persist = persist.to_str().unwrap();
    let wrangler_list = [
        "migrations",
        "list",
        "DB",
        "--local",
        "--persist-to",
        persist,
    ];
    let (code, theirs) = wrangler_d1(dir.path(), &wrangler_list);
    assert_eq!(code, Some(0), "{theirs}");
    assert!(
        theirs.contains(&ours),
        "ours:\n{ours}\nwrangler's:\n{theirs}"
    );
    // Applied: nothing is pending, in either.
    let apply = ["migrations", "apply", "DB", "--state", state_arg];
    let (code, _, stderr) = isolane_d1(dir.path(), &apply);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, theirs) = wrangler_apply(dir.path(), Path::new(persist));
    assert_eq!(code, Some(0), "{theirs}");
    let (code, ours, _) = isolane_d1(dir.path(), &list);
    assert_eq!(
        (code, ours.as_str()),
        (Some(0), "\u{2705} No migrations to apply!\n")
    );
    let (_, theirs) = wrangler_d1(dir.path(), &wrangler_list);
    assert!(theirs.contains(&ours), "{theirs}");
}

#[tokio::test]
async fn d1_migrations_pattern_takes_nested_files_in_wrangler_s_order() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    std::fs::write(dir.path().join("index.js"), MIGRATED).unwrap();
    // drizzle's layout, numbered without padding (wrangler orders 9 before 10).
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = 'shop'\nmain = 'index.js'\ncompatibility_date = '2025-11-01'\n\
         [[d1_databases]]\nbinding = 'DB'\ndatabase_name = 'shopdb'\ndatabase_id = 'x'\n\
         migrations_dir = 'db'\nmigrations_pattern = 'db/*/migration.sql'\n",
    )
    .unwrap();
    let files = [
        (
            "db/1_init/migration.sql",
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);\nINSERT INTO items (name) VALUES ('a');\n",
        ),
        (
            "db/9_more/migration.sql",
            "INSERT INTO items (name) VALUES ('b');\n",
        ),
        (
            "db/10_last/migration.sql",
            "INSERT INTO items (name) VALUES ('c');\n",
        ),
        // Not the pattern's: never run (each would fail).
        (
            "db/9_more/snapshot.sql",
            "INSERT INTO nowhere VALUES (1);\n",
        ),
        ("db/top.sql", "INSERT INTO nowhere VALUES (2);\n"),
    ];
    for (path, sql) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, sql).unwrap();
    }
    // `list`: the same table as wrangler's, before anything is applied.
    let list = ["migrations", "list", "DB", "--state", state_arg];
    let (code, ours, stderr) = isolane_d1(dir.path(), &list);
    assert_eq!(code, Some(0), "{stderr}");
    let at = |name: &str| ours.find(name).unwrap_or(usize::MAX);
    assert!(
        at("│ 1_init/migration.sql ") < at("│ 9_more/migration.sql ")
            && at("│ 9_more/migration.sql ") < at("│ 10_last/migration.sql ")
            && at("│ 10_last/migration.sql ") < usize::MAX
            && !ours.contains("snapshot")
            && !ours.contains("top.sql"),
        "{ours}"
    );
    let persist = dir.path().join("wrangler-state");
    let persist_arg = persist.to_str().unwrap();
    let wrangler_list = [
        "migrations",
        "list",
        "DB",
        "--local",
        "--persist-to",
        persist_arg,
    ];
    let (code, theirs) = wrangler_d1(dir.path(), &wrangler_list);
    assert_eq!(code, Some(0), "{theirs}");
    assert!(
        theirs.contains(&ours),
        "ours:\n{ours}\nwrangler's:\n{theirs}"
    );
    // `apply`, ours and wrangler's, each into its own local database.
    let (code, stdout, stderr) = isolane_d1(
        dir.path(),
        &["migrations", "apply", "DB", "--state", state_arg],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "Applied 1_init/migration.sql\nApplied 9_more/migration.sql\nApplied 10_last/migration.sql\n"
    );
    let (code, theirs) = wrangler_apply(dir.path(), &persist);
    assert_eq!(code, Some(0), "{theirs}");
    // `create` would write a file the pattern does not take: refused.
    let (code, _, stderr) = isolane_d1(dir.path(), &["migrations", "create", "DB", "x"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("would not match migrations_pattern"),
        "{stderr}"
    );

    // isolane dev and wrangler dev serve the same rows and names.
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(
        &["--port", &port.to_string(), "--state", state_arg],
        Some(dir.path()),
    );
    let client = client();
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    let wrangler = free_port().unwrap();
    let _wrangler = peer::wrangler_dev_persisting(dir.path(), wrangler, &persist);
    peer::wrangler_ready(&client, dir.path(), wrangler, "/").await;
    let ours = peer::json(&client, port, "/").await;
    assert_eq!(
        ours,
        peer::json(&client, wrangler, "/").await,
        "isolane dev, then wrangler dev"
    );
    assert_eq!(
        ours["applied"],
        serde_json::json!([
            "1_init/migration.sql",
            "9_more/migration.sql",
            "10_last/migration.sql"
        ])
    );
    assert_eq!(ours["items"].as_array().map(Vec::len), Some(3), "{ours}");
    assert!(dev.interrupt().success());
}

/// The routes of `compat/apps/drizzle`, in the order asked: what Drizzle
/// writes and then reads on D1 and on the SQLite-backed object.
const DRIZZLE_ROUTES: [&str; 4] = ["/d1/write", "/do/write", "/d1/read", "/do/read"];

#[tokio::test]
async fn drizzle_on_d1_and_on_a_sqlite_object_answers_as_on_wrangler_dev_and_after_a_kill() {
    let app = support::repo().join("compat/apps/drizzle");
    let state = tempfile::tempdir().unwrap();
    let state_arg = state.path().to_str().unwrap();
    let persist = state.path().join("wrangler");
    // drizzle-kit's folder into each local D1 database: ours, wrangler's.
    let apply = ["migrations", "apply", "DB", "--state", state_arg];
    let (code, stdout, stderr) = isolane_d1(&app, &apply);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "Applied 0000_authors_posts.sql\nApplied 0001_post_tags.sql\n\
         Applied 0002_settings.sql\nApplied 0003_likes_check.sql\n"
    );
    let (code, theirs) = wrangler_apply(&app, &persist);
    assert_eq!(code, Some(0), "{theirs}");

    let client = client();
    let port = free_port().unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    let wrangler = free_port().unwrap();
    let _wrangler = peer::wrangler_dev_persisting(&app, wrangler, &persist);
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    peer::wrangler_ready(&client, &app, wrangler, "/").await;
    let mut answers = Vec::new();
    for route in DRIZZLE_ROUTES {
        let ours = peer::json(&client, port, route).await;
        let theirs = peer::json(&client, wrangler, route).await;
        for (key, value) in theirs.as_object().unwrap() {
            assert_eq!(
                &ours[key], value,
                "{route} {key}: isolane dev, then wrangler dev"
            );
        }
        assert_eq!(ours, theirs, "{route}: isolane dev, then wrangler dev");
        answers.push(ours);
    }
    drizzle_answers_spelled_out(&answers);

    // Killed (SIGKILL) and started again on its state: the same rows, no
    // migration run twice.
    dev.process.signal(Signal::SIGKILL).unwrap();
    dev.process.wait_exit(support::DEADLINE).unwrap();
    let mut dev = peer::dev_with_node(&app, port, state.path());
    when_ready(&client, &mut dev, port, "localhost", "/").await;
    for (route, before) in DRIZZLE_ROUTES.iter().zip(&answers).skip(2) {
        assert_eq!(
            &peer::json(&client, port, route).await,
            before,
            "{route} after a restart"
        );
    }
    assert!(dev.interrupt().success());
}

/// A few of Drizzle's answers spelled out, so that the comparison is not
/// of nothing (or of two errors).
fn drizzle_answers_spelled_out(answers: &[Value]) {
    let unique = "UNIQUE constraint failed: authors.email: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)";
    assert_eq!(
        answers[0]["duplicate"]["cause"]["message"],
        format!("D1_ERROR: {unique}")
    );
    assert_eq!(
        answers[0]["duplicate"]["error"]["type"],
        "DrizzleQueryError"
    );
    assert_eq!(answers[1]["duplicate"]["error"]["message"], unique);
    for written in &answers[..2] {
        assert_eq!(
            written["atomic"],
            serde_json::json!([[{ "id": 1, "likes": 13 }, { "id": 2, "likes": 15 }], [{ "id": 4, "likes": 0 }]])
        );
        assert_eq!(
            written["likesKept"],
            serde_json::json!([{ "likes": "35" }, { "likes": "35" }]),
            "a failed batch or transaction kept nothing"
        );
        assert!(
            written["negative"]
                .to_string()
                .contains("CHECK constraint failed: likes_positive"),
            "{}",
            written["negative"]
        );
    }
    // Drizzle's interactive transaction is D1's refused BEGIN; on the
    // object a nested transaction is rolled back alone.
    assert!(
        answers[0]["transaction"]["cause"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("D1_ERROR: To execute a transaction, please use")),
        "{}",
        answers[0]["transaction"]
    );
    assert_eq!(
        answers[1]["transaction"],
        serde_json::json!({ "inner": "DrizzleError: Rollback", "titles": [{ "title": "Outer" }] })
    );
    // The database and the object hold the same rows.
    for key in [
        "join",
        "aggregate",
        "relational",
        "withSettings",
        "first",
        "values",
        "one",
    ] {
        assert_eq!(
            answers[2][key], answers[3][key],
            "{key}: D1, then the object"
        );
    }
    assert_eq!(
        answers[2]["relational"],
        serde_json::json!([
            { "id": 1, "name": "Ada L.", "posts": [{ "title": "Notes", "likes": 15 }, { "title": "Engines", "likes": 13 }] },
            { "id": 2, "name": "Brian", "posts": [{ "title": "Unix", "likes": 7 }] },
            { "id": 3, "name": "Cyril", "posts": [] }
        ])
    );
    assert_eq!(
        answers[2]["values"],
        serde_json::json!([
            ["cy@example.com", 3, "Cyril"],
            ["brian@example.com", 2, "Brian"],
            ["ada@example.com", 1, "Ada L."]
        ])
    );
    assert_eq!(answers[3]["migrations"].as_array().map(Vec::len), Some(4));
}
