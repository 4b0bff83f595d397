//! `isolane d1 migrations apply|list --remote` on a cluster (issue 58): a
//! real kube-apiserver with RBAC and the aggregation layer, the operator,
//! two one-thread runtime nodes, one real PostgreSQL and the router (with
//! its aggregated API registered as the APIService
//! `v1alpha1.tail.isolane.dev`, and its tail endpoint) as processes, and
//! the `isolane` binary run in a wrangler project with a kubeconfig whose
//! user is a CLIENT CERTIFICATE (no token the router could see), bound to
//! the chart's ClusterRole `isolane-d1-migrate` in namespace `team-a` only.
//!
//! 0. Discovery lists `d1databases/migrations` (get, create).
//! 1. `list --remote` (through the API server) names both files; `apply
//!    --remote` applies them (on the database's owner node on the ring,
//!    which logs it); a Worker of team-a binding the database reads the
//!    migrated tables and `d1_migrations`' rows.
//! 2. Applying again applies nothing; `list` says so; `kubectl get --raw`
//!    of the subresource names the files applied.
//! 3. A third file whose second statement fails as it runs (an integer
//!    overflow, once its first has run): the command exits 1 naming it and
//!    SQLite's words; the first two stay, its first statement is rolled
//!    back.
//! 4. Refused, changing nothing: the certificate's user against team-b,
//!    where a Role grants it the aggregated API's group only (the API
//!    server proxies, the router's own SubjectAccessReview refuses: 403
//!    naming the permission); a ServiceAccount of team-a against team-b
//!    (the API server's 403); a token the API server does not accept
//!    (401); a body over 8 MiB (413).
//! 5. `--endpoint` (the router's tail endpoint, the ServiceAccount's
//!    bearer token) applies a good third file, which the Worker, with the
//!    database open, reads next.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use isolane_e2e::aggregated::AggregatedApi;
use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::process;
use isolane_e2e::tenant;
use isolane_e2e::workers::{self, inline_worker};
use isolane_placement::{Node, NodeSet};
use isolane_testenv::{ControlPlane, Postgres, TENANT_USER, TestCa, free_port, wait_until};
use isolane_worker::Binding;
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::Api;
use kube::api::PostParams;

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";
const SETTLE: Duration = Duration::from_secs(90);
/// The router's aggregated API, as the chart registers it.
const API: AggregatedApi = AggregatedApi {
    group: "tail.isolane.dev",
    version: "v1alpha1",
    group_priority_minimum: 1000,
    version_priority: 15,
    namespace: "tail-api",
    service: "isolane-tail-api",
};
const BASE: &str = "/apis/tail.isolane.dev/v1alpha1";

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

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// The chart's ClusterRole (charts/isolane/templates/rbac.yaml): the
/// aggregated API's group (the API server's check) and the CRD's (the
/// router's).
fn migrate_role() -> ClusterRole {
    from_json(serde_json::json!({
        "metadata": { "name": "isolane-d1-migrate" },
        "rules": [{
            "apiGroups": ["isolane.dev", "tail.isolane.dev"],
            "resources": ["d1databases/migrations"],
            "verbs": ["get", "create"],
        }],
    }))
}

/// Binds the certificate's user to `kind` `role` in `namespace`.
async fn bind_user(cp: &ControlPlane, namespace: &str, kind: &str, role: &str) {
    let binding: RoleBinding = from_json(serde_json::json!({
        "metadata": { "name": format!("{role}-user") },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role },
        "subjects": [{ "kind": "User", "name": TENANT_USER, "apiGroup": "rbac.authorization.k8s.io" }],
    }));
    Api::<RoleBinding>::namespaced(cp.client(), namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// In `namespace`, a Role granting D1 migrations in the aggregated API's
/// group only (what the API server checks, not what the router does),
/// bound to the certificate's user.
async fn grant_api_group_only(cp: &ControlPlane, namespace: &str) {
    let role: Role = from_json(serde_json::json!({
        "metadata": { "name": "api-group-only" },
        "rules": [{
            "apiGroups": ["tail.isolane.dev"],
            "resources": ["d1databases/migrations"],
            "verbs": ["get", "create"],
        }],
    }));
    Api::<Role>::namespaced(cp.client(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    bind_user(cp, namespace, "Role", "api-group-only").await;
}

/// `kubectl get --raw path` with `kubeconfig`: stdout, or stderr.
fn kubectl_raw(kubeconfig: &Path, path: &str) -> Result<String, String> {
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "--raw", path])
        .output()
        .map_err(|e| e.to_string())?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if out.status.success() {
        Ok(text(&out.stdout))
    } else {
        Err(text(&out.stderr))
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

/// `isolane d1 migrations <args…> --remote` in `dir` with `kubeconfig`,
/// through the API server, or to the router's tail endpoint `endpoint`:
/// exit code, stdout, stderr.
fn isolane(
    dir: &Path,
    kubeconfig: &Path,
    endpoint: Option<SocketAddr>,
    args: &[&str],
) -> (Option<i32>, String, String) {
    let mut command = std::process::Command::new(process::binary("isolane", "ISOLANE_BIN"));
    command
        .current_dir(dir)
        .args(["d1", "migrations"])
        .args(args)
        .arg("--remote")
        .env("KUBECONFIG", kubeconfig)
        .env_remove("ISOLANE_TAIL_ENDPOINT");
    if let Some(endpoint) = endpoint {
        command.args(["--endpoint", &format!("http://{endpoint}")]);
    }
    let output = command.output().unwrap();
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

/// The router with its aggregated API (a certificate of `ca`) and its
/// tail endpoint on `tail_addr`, the APIService registered and served.
async fn start_system(
    cp: &ControlPlane,
    dir: &Path,
    database: &Postgres,
    tail_addr: SocketAddr,
) -> Cluster {
    cp.create_namespace(API.namespace).await.unwrap();
    let api_addr: SocketAddr = ([127, 0, 0, 1], free_port().unwrap()).into();
    let ca = TestCa::new("isolane-tail-api-ca").unwrap();
    let mut options = ClusterOptions::with_postgres(&database.connection_string());
    let mut extra_args = vec!["--tail-addr".to_owned(), tail_addr.to_string()];
    extra_args.extend(API.router_args(&ca, dir, api_addr));
    options.router = RouterOptions {
        extra_args,
        ..RouterOptions::default()
    };
    let cluster = Cluster::start(cp, dir, options).await;
    API.register(cp, api_addr.port(), &ca.cert_pem()).await;
    // === 0. discovery lists the subresource ===
    wait_until(
        "the APIService to list d1databases/migrations",
        SETTLE,
        || {
            let listed = kubectl_raw(cp.kubeconfig_path(), BASE).and_then(|list| {
                let value: serde_json::Value =
                    serde_json::from_str(&list).map_err(|e| e.to_string())?;
                let resources = value["resources"].as_array().cloned().unwrap_or_default();
                resources
                    .into_iter()
                    .find(|r| r["name"] == "d1databases/migrations")
                    .filter(|r| r["verbs"] == serde_json::json!(["get", "create"]))
                    .map(|_| ())
                    .ok_or(list)
            });
            async move { listed }
        },
    )
    .await;
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_apply_on_the_owner_with_the_caller_s_rights() {
    let database = Postgres::start().unwrap();
    let cp = ControlPlane::start().await.expect("control plane starts");
    let (cert, key) = cp
        .tenant_client_cert()
        .expect("a control plane of our own (its tenant certificate)");
    workers::prepare(&cp, &[TEAM, OTHER]).await;
    let dir = tempfile::tempdir().unwrap();
    let tail_addr: SocketAddr = ([127, 0, 0, 1], free_port().unwrap()).into();
    let cluster = start_system(&cp, dir.path(), &database, tail_addr).await;
    let client = cp.client();
    let mut shop = inline_worker("shop", SHOP, &["shop.test"]);
    shop.spec.bindings = vec![Binding::d1("DB", "orders")];
    workers::apply(&client, TEAM, &shop).await;
    workers::wait_ready(&client, TEAM, "shop", SETTLE).await;
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &migrate_role())
        .await
        .unwrap();
    bind_user(&cp, TEAM, "ClusterRole", "isolane-d1-migrate").await;
    grant_api_group_only(&cp, OTHER).await;
    let kubeconfig = dir.path().join("cert.kubeconfig");
    tenant::kubeconfig_with_certificate(&cp, (&cert, &key), &kubeconfig);
    let token = tenant::account_token(&cp, TEAM, "migrator", "isolane-d1-migrate").await;
    let token_config = dir.path().join("token.kubeconfig");
    tenant::kubeconfig_with(&cp, &token, &token_config);
    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    project(&app);
    let ingress = Ingress::new(cluster.ingress());
    let team = ["DB", "-n", TEAM];

    // === 1. list, apply, and the Worker reads them ===
    let list = [&["list"][..], &team].concat();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, None, &list);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.starts_with("Migrations to be applied:\n")
            && stdout.contains("│ 0001_init.sql │")
            && stdout.contains("│ 0002_more.sql │"),
        "{stdout}"
    );
    let apply = [&["apply"][..], &team].concat();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, None, &apply);
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

    // === 2. again: nothing to apply; kubectl reads what is applied ===
    let (code, stdout, _) = isolane(&app, &kubeconfig, None, &apply);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "No migrations to apply.\n")
    );
    let (code, stdout, _) = isolane(&app, &kubeconfig, None, &list);
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "\u{2705} No migrations to apply!\n")
    );
    let raw = format!("{BASE}/namespaces/{TEAM}/d1databases/orders/migrations");
    let applied: serde_json::Value =
        serde_json::from_str(&kubectl_raw(&kubeconfig, &raw).unwrap()).unwrap();
    assert_eq!(
        applied,
        serde_json::json!({ "applied": ["0001_init.sql", "0002_more.sql"] })
    );

    // === 3. a bad third file: named, rolled back, the first two stay ===
    std::fs::write(
        app.join("migrations/0003_bad.sql"),
        "INSERT INTO items (name) VALUES ('c');\nSELECT abs(-9223372036854775807 - 1);\n",
    )
    .unwrap();
    let (code, stdout, stderr) = isolane(&app, &kubeconfig, None, &apply);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("0003_bad.sql failed") && stderr.contains("integer overflow"),
        "{stderr}"
    );
    assert_eq!(read(&ingress, 2).await, migrated);
    std::fs::remove_file(app.join("migrations/0003_bad.sql")).unwrap();
    std::fs::write(
        app.join("migrations/0003_good.sql"),
        "INSERT INTO items (name) VALUES ('c');\n",
    )
    .unwrap();

    // === 4. refused: another namespace, a bad token, too big a body ===
    let other = ["apply", "DB", "-n", OTHER];
    let (code, _, stderr) = isolane(&app, &kubeconfig, None, &other);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("403")
            && stderr.contains(&format!(
                "{TENANT_USER} may not apply D1 migrations in namespace team-b"
            ))
            && stderr.contains("d1databases/migrations (group isolane.dev)"),
        "{stderr}"
    );
    let (code, _, stderr) = isolane(&app, &token_config, None, &other);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("403")
            && stderr.contains("in namespace team-b")
            && stderr.contains("isolane-d1-migrate"),
        "{stderr}"
    );
    let stranger = dir.path().join("stranger.kubeconfig");
    tenant::kubeconfig_with(&cp, "not-a-token", &stranger);
    let (code, _, stderr) = isolane(&app, &stranger, None, &apply);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("401"), "{stderr}");
    let big = app.join("migrations/0004_big.sql");
    std::fs::write(&big, format!("-- {}\n", "x".repeat(9 << 20))).unwrap();
    let (code, _, stderr) = isolane(&app, &kubeconfig, None, &apply);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("413"), "{stderr}");
    std::fs::remove_file(&big).unwrap();
    assert_eq!(read(&ingress, 2).await, migrated);

    // === 5. --endpoint: a migration while the Worker has the database open ===
    let (code, stdout, stderr) = isolane(&app, &token_config, Some(tail_addr), &apply);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "Applied 0003_good.sql\n");
    let last = read(&ingress, 3).await;
    assert_eq!(last["items"][2]["name"], "c", "{last}");
}
