//! `isolane d1 migrations apply|list --remote` on a cluster (issue 58): a
//! real kube-apiserver with RBAC, the operator, two one-thread runtime
//! nodes, one real PostgreSQL and the router (with its tail endpoint) as
//! processes, and the `isolane` binary run in a wrangler project with a
//! kubeconfig whose user is a ServiceAccount token bound to the chart's
//! ClusterRole `isolane-d1-migrate` in namespace `team-a` only.
//!
//! 1. `list --remote` names both files of the folder; `apply --remote`
//!    applies them (on the database's owner node on the ring, which logs
//!    it); a Worker of team-a binding the database reads the migrated
//!    tables and `d1_migrations`' rows.
//! 2. Applying again applies nothing; `list` says so.
//! 3. A third file whose second statement fails as it runs (an integer
//!    overflow, once its first has run): the command exits 1 naming it and
//!    SQLite's words; the first two stay, its first statement is rolled
//!    back.
//! 4. The same identity against team-b's database of the same name is
//!    refused (403, naming the permission); a token Kubernetes does not
//!    accept is refused (401); neither changes anything.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::process;
use isolane_e2e::tenant;
use isolane_e2e::workers::{self, inline_worker};
use isolane_placement::{Node, NodeSet};
use isolane_testenv::{ControlPlane, Postgres, free_port, wait_until};
use isolane_worker::Binding;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";
const SETTLE: Duration = Duration::from_secs(90);

/// Reads what the migrations made.
const SHOP: &str = r#"export default {
  async fetch(request, env) {
    try {
      const items = await env.DB.prepare('SELECT * FROM items ORDER BY id').all();
      const applied = await env.DB.prepare('SELECT name FROM d1_migrations ORDER BY id').raw();
      return Response.json({ items: items.results, applied: applied.flat() });
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  }
};
"#;

/// The chart's ClusterRole (charts/isolane/templates/rbac.yaml).
fn migrate_role() -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some("isolane-d1-migrate".to_owned()),
            ..ObjectMeta::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["isolane.dev".to_owned()]),
            resources: Some(vec!["d1databases/migrations".to_owned()]),
            verbs: vec!["get".to_owned(), "create".to_owned()],
            ..PolicyRule::default()
        }]),
        ..ClusterRole::default()
    }
}

/// A wrangler project binding database `orders` with two migrations.
fn project(dir: &Path) {
    std::fs::write(dir.join("index.js"), SHOP).unwrap();
    std::fs::write(
        dir.join("wrangler.toml"),
        "name = 'shop'\nmain = 'index.js'\ncompatibility_date = '2025-11-01'\n\
         [[d1_databases]]\nbinding = 'DB'\ndatabase_name = 'orders'\ndatabase_id = 'x'\n",
    )
    .unwrap();
    let migrations = dir.join("migrations");
    std::fs::create_dir(&migrations).unwrap();
    std::fs::write(
        migrations.join("0001_init.sql"),
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);\nINSERT INTO items (name) VALUES ('a');\n",
    )
    .unwrap();
    std::fs::write(
        migrations.join("0002_more.sql"),
        "ALTER TABLE items ADD COLUMN price REAL;\nINSERT INTO items (name, price) VALUES ('b', 2.5);\n",
    )
    .unwrap();
}

/// `isolane d1 migrations <args…> --remote` in `dir` with `kubeconfig`:
/// exit code, stdout, stderr.
fn isolane(
    dir: &Path,
    kubeconfig: &Path,
    endpoint: SocketAddr,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let output = std::process::Command::new(process::binary("isolane", "ISOLANE_BIN"))
        .current_dir(dir)
        .args(["d1", "migrations"])
        .args(args)
        .args(["--remote", "--endpoint", &format!("http://{endpoint}")])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The Worker's answer, once it is a 200 with `applied` rows.
async fn read(ingress: &Ingress, applied: usize) -> serde_json::Value {
    wait_until(
        "the Worker to read the migrated tables",
        SETTLE,
        || async move {
            let reply = ingress.get("shop.test", "/").await.ok()?;
            let value: serde_json::Value = serde_json::from_str(&reply.body).ok()?;
            (reply.status == 200 && value["applied"].as_array()?.len() == applied).then_some(value)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_apply_on_the_owner_with_the_caller_s_rights() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    workers::prepare(&cp, &[TEAM, OTHER]).await;
    let dir = tempfile::tempdir().unwrap();
    let tail_addr: SocketAddr = ([127, 0, 0, 1], free_port().unwrap()).into();
    let mut options = ClusterOptions::with_postgres(&database.connection_string());
    options.router = RouterOptions {
        extra_args: vec!["--tail-addr".to_owned(), tail_addr.to_string()],
        ..RouterOptions::default()
    };
    let cluster = Cluster::start(&cp, dir.path(), options).await;
    let client = cp.client();
    let mut shop = inline_worker("shop", SHOP, &["shop.test"]);
    shop.spec.bindings = vec![Binding::d1("DB", "orders")];
    workers::apply(&client, TEAM, &shop).await;
    workers::wait_ready(&client, TEAM, "shop", SETTLE).await;
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &migrate_role())
        .await
        .unwrap();
    let token = tenant::account_token(&cp, TEAM, "migrator", "isolane-d1-migrate").await;
    let kubeconfig = dir.path().join("team-a.kubeconfig");
    tenant::kubeconfig_with(&cp, &token, &kubeconfig);
    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    project(&app);
    let ingress = Ingress::new(cluster.ingress());
    let team = ["DB", "-n", TEAM];

    // === 1. list, apply, and the Worker reads them ===
    let list = [&["list"][..], &team].concat();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, tail_addr, &list);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("Migrations to be applied:\n")
            && stdout.contains("│ 0001_init.sql │")
            && stdout.contains("│ 0002_more.sql │"),
        "{stdout}"
    );
    let apply = [&["apply"][..], &team].concat();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, tail_addr, &apply);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Applied 0001_init.sql\nApplied 0002_more.sql\n");
    let migrated = serde_json::json!({
        "items": [
            { "id": 1, "name": "a", "price": null },
            { "id": 2, "name": "b", "price": 2.5 }
        ],
        "applied": ["0001_init.sql", "0002_more.sql"]
    });
    assert_eq!(read(&ingress, 2).await, migrated);
    // The owner on the ring applied them.
    let nodes = cluster.node_names();
    let set = NodeSet::new(nodes.iter().map(|n| Node::new(n.clone(), 1)).collect());
    let key = isolane_worker::d1::placement_key(TEAM, "orders");
    let owner = &set.nodes()[set.primary(&key).unwrap()].name;
    for node in &cluster.nodes {
        let applied_here = node.process.log().contains("D1 migrations applied");
        assert_eq!(applied_here, &node.name == owner, "node {}", node.name);
    }

    // === 2. again: nothing to apply ===
    let (code, stdout, _) = isolane(&app, &kubeconfig, tail_addr, &apply);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "No migrations to apply.\n")
    );
    let (code, stdout, _) = isolane(&app, &kubeconfig, tail_addr, &list);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "\u{2705} No migrations to apply!\n")
    );

    // === 3. a bad third file: named, rolled back, the first two stay ===
    std::fs::write(
        app.join("migrations/0003_bad.sql"),
        "INSERT INTO items (name) VALUES ('c');\nSELECT abs(-9223372036854775807 - 1);\n",
    )
    .unwrap();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, tail_addr, &apply);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("0003_bad.sql failed") && stderr.contains("integer overflow"),
        "{stderr}"
    );
    assert_eq!(read(&ingress, 2).await, migrated);

    // === 4. another namespace, a bad token: refused ===
    std::fs::remove_file(app.join("migrations/0003_bad.sql")).unwrap();
    std::fs::write(
        app.join("migrations/0003_good.sql"),
        "INSERT INTO items (name) VALUES ('c');\n",
    )
    .unwrap();
    let other = ["apply", "DB", "-n", OTHER];
    let (code, _, stderr) = isolane(&app, &kubeconfig, tail_addr, &other);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("403")
            && stderr.contains("may not apply D1 migrations in namespace team-b")
            && stderr.contains("d1databases/migrations"),
        "{stderr}"
    );
    let stranger = dir.path().join("stranger.kubeconfig");
    tenant::kubeconfig_with(&cp, "not-a-token", &stranger);
    let (code, _, stderr) = isolane(&app, &stranger, tail_addr, &apply);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    assert_eq!(read(&ingress, 2).await, migrated);

    // === 5. a migration while the Worker has the database open: seen ===
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, tail_addr, &apply);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Applied 0003_good.sql\n");
    let last = read(&ingress, 3).await;
    assert_eq!(last["items"][2]["name"], "c", "{last}");
}
