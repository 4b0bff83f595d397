//! `isolane deploy` of wrangler projects, as a user runs it: the real
//! binary in the project's folder. `--dry-run`'s YAML is held by golden
//! files (`cli/tests/wrangler/*.yaml`; `ISOLANE_UPDATE_GOLDEN=1` writes
//! them): `every-key/` sets every key `cli/src/wrangler/keys.rs` maps (a
//! test reads the table and fails when the project leaves one out), at the
//! top level and in an environment; `shop/` (TOML, modules pushed by
//! digest) and `hello/` (JSONC, one script in a ConfigMap) as users write
//! them. Every key the table refuses, and each value within a mapped key
//! the platform cannot honour, is one line and nothing is deployed. The
//! apply against a real API server is in `deploy_apiserver.rs`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrangler")
}

fn deploy(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_isolane"))
        .arg("deploy")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `isolane deploy --dry-run <args>` in `project`, held by `golden`.
fn assert_golden(project: &str, args: &[&str], golden: &str) {
    let mut argv = vec!["--dry-run"];
    argv.extend(args);
    let output = deploy(&fixtures().join(project), &argv);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    let path = fixtures().join(golden);
    if std::env::var_os("ISOLANE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &yaml).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        yaml == expected,
        "{} differs (ISOLANE_UPDATE_GOLDEN=1 rewrites it):\n--- expected\n{expected}\n--- got\n{yaml}",
        path.display()
    );
    // What is printed is a valid Worker (and ConfigMap).
    for document in serde_yaml::Deserializer::from_str(&yaml) {
        let value = <serde_yaml::Value as serde::Deserialize>::deserialize(document).unwrap();
        if value["kind"] == "Worker" {
            serde_yaml::from_value::<isolane_crds::Worker>(value).unwrap();
        }
    }
}

#[test]
fn dry_run_of_a_toml_project_of_modules_names_the_bundle_by_digest() {
    assert_golden(
        "shop",
        &["-n", "shop", "--repository", "registry.example/shop/app"],
        "shop.yaml",
    );
}

#[test]
fn dry_run_of_an_environment_takes_its_vars_bindings_and_routes() {
    assert_golden(
        "shop",
        &[
            "--env",
            "staging",
            "-n",
            "shop",
            "--repository",
            "registry.example/shop/app",
        ],
        "shop-staging.yaml",
    );
}

#[test]
fn dry_run_of_a_jsonc_project_of_one_script_puts_it_in_a_config_map() {
    assert_golden("hello", &["--config", "wrangler.jsonc"], "hello.yaml");
}

#[test]
fn modules_without_a_repository_are_refused_saying_what_to_give() {
    let output = deploy(&fixtures().join("shop"), &["--dry-run"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the code is 3 modules: give --repository"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn each_unsupported_key_is_one_line_and_nothing_is_deployed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.js"), "export default {};").unwrap();
    std::fs::write(
        dir.path().join("wrangler.toml"),
        "name = 'a'\nmain = 'index.js'\nfrobnicate = 1\n\
         vectorize = [{ binding = 'B', index_name = 'b' }]\n\
         [assets]\ndirectory = 'public'\n\
         [[migrations]]\ntag = 'v1'\nrenamed_classes = [{ from = 'Room', to = 'Hall' }]\n\
         [env.staging]\nd1_databases = [{ binding = 'DB', database_name = 'db' }]\n",
    )
    .unwrap();
    let output = deploy(dir.path(), &["--dry-run", "--env", "staging"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "nothing is printed to apply");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "wrangler.toml: frobnicate: not supported: not a wrangler key Isolane knows",
            "wrangler.toml: vectorize: not supported: this binding kind is not supported yet",
            "wrangler.toml: migrations[0].renamed_classes: not supported: a class's objects cannot be renamed yet",
            "isolane deploy: wrangler.toml: 3 key(s) cannot be deployed (above)",
        ]
    );
}

/// One entry of `cli/src/wrangler/keys.rs`'s table, read from its source:
/// the name, how an environment inherits it, and what Isolane makes of it
/// (`Mapped`, `NoEffect`, `Unsupported`, `Build`).
struct TableKey {
    name: String,
    inherit: String,
    support: String,
}

/// keys.rs's `KEYS`, every `key("name", Inherit, Support…)` entry of it.
fn table() -> Vec<TableKey> {
    let source: String = include_str!("../src/wrangler/keys.rs")
        .split_whitespace()
        .collect();
    let (_, rest) = source.split_once("pubconstKEYS:&[Key]=&[").unwrap();
    let (entries, _) = rest.split_once("];").unwrap();
    let keys: Vec<TableKey> = entries
        .split("key(\"")
        .skip(1)
        .map(|entry| {
            let (name, rest) = entry.split_once("\",").unwrap();
            let (inherit, rest) = rest.split_once(',').unwrap();
            let support = rest.split(['(', ')', ',']).next().unwrap();
            TableKey {
                name: name.to_owned(),
                inherit: inherit.to_owned(),
                support: support.to_owned(),
            }
        })
        .collect();
    // Every entry read, and read right.
    assert_eq!(keys.len(), entries.matches("key(").count());
    assert!(
        keys.iter()
            .all(|k| ["Yes", "No", "TopOnly"].contains(&k.inherit.as_str()))
    );
    let supports = ["Mapped", "NoEffect", "Unsupported", "Build"];
    assert!(keys.iter().all(|k| supports.contains(&k.support.as_str())));
    keys
}

#[test]
fn dry_run_of_a_project_of_every_mapped_key() {
    assert_golden(
        "every-key",
        &["-n", "every", "--repository", "registry.example/every/app"],
        "every-key.yaml",
    );
}

#[test]
fn dry_run_of_an_environment_of_every_key_it_does_not_inherit() {
    assert_golden(
        "every-key",
        &[
            "--env",
            "staging",
            "-n",
            "every",
            "--repository",
            "registry.example/every/app",
        ],
        "every-key-staging.yaml",
    );
}

/// Whether a value asks something of the platform (not empty, not false).
fn asks_something(value: &toml::Value) -> bool {
    match value {
        toml::Value::Array(items) => !items.is_empty(),
        toml::Value::Table(table) => !table.is_empty(),
        toml::Value::Boolean(set) => *set,
        _ => true,
    }
}

#[test]
fn the_every_key_project_sets_every_key_the_table_maps() {
    let text = std::fs::read_to_string(fixtures().join("every-key/wrangler.toml")).unwrap();
    let top: toml::Table = toml::from_str(&text).unwrap();
    let staging = top["env"]["staging"].as_table().unwrap();
    let keys = table();
    let mapped: Vec<&TableKey> = keys.iter().filter(|k| k.support == "Mapped").collect();
    assert!(mapped.len() >= 23, "{} mapped keys read", mapped.len());
    let set =
        |table: &toml::Table, key: &TableKey| table.get(&key.name).is_some_and(asks_something);
    let missing: Vec<&str> = mapped
        .iter()
        .filter(|key| !set(&top, key))
        .map(|key| key.name.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "every-key/wrangler.toml leaves out mapped keys: {missing:?}"
    );
    // What an environment does not inherit, it sets itself.
    let missing: Vec<&str> = mapped
        .iter()
        .filter(|key| key.inherit == "No" && !set(staging, key))
        .map(|key| key.name.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "every-key's [env.staging] leaves out mapped keys it does not inherit: {missing:?}"
    );
}

/// `isolane deploy --dry-run` of a project of `config` (and an empty
/// `index.js`) with `args`: refused, nothing printed, its stderr lines.
fn refused(config: &str, args: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.js"), "export default {};").unwrap();
    std::fs::write(dir.path().join("wrangler.toml"), config).unwrap();
    let mut argv = vec!["--dry-run"];
    argv.extend(args);
    let output = deploy(dir.path(), &argv);
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing is printed to apply");
    stderr.lines().map(str::to_owned).collect()
}

#[test]
fn every_key_the_table_refuses_is_one_line_with_its_reason() {
    let keys = table();
    let refused_keys: Vec<&str> = keys
        .iter()
        .filter(|k| k.support == "Unsupported" || k.support == "Build")
        .map(|k| k.name.as_str())
        .collect();
    assert!(refused_keys.len() >= 30, "{refused_keys:?}");
    let mut config = "name = 'a'\nmain = 'index.js'\n".to_owned();
    for key in &refused_keys {
        config.push_str(&format!("{key} = 1\n"));
    }
    let lines = refused(&config, &[]);
    for key in &refused_keys {
        let prefix = format!("wrangler.toml: {key}: not supported: ");
        let of_key: Vec<&String> = lines.iter().filter(|l| l.starts_with(&prefix)).collect();
        assert!(
            of_key.len() == 1 && of_key[0].len() > prefix.len(),
            "{key}: {lines:#?}"
        );
    }
    assert_eq!(lines.len(), refused_keys.len() + 1, "{lines:#?}");
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "isolane deploy: wrangler.toml: {} key(s) cannot be deployed (above)",
            refused_keys.len()
        )
    );
    // One of each kind, whole: a key the platform has no use for, and a
    // build key without the project's wrangler to honour it.
    assert!(lines.contains(
        &"wrangler.toml: node_compat: not supported: use compatibility_flags = [\"nodejs_compat\"]"
            .to_owned()
    ));
    assert!(lines.iter().any(|l| l.starts_with(
        "wrangler.toml: define: not supported: a build key, honoured when isolane builds with the project's own wrangler"
    )));
}

#[test]
fn each_value_a_mapped_key_cannot_take_is_one_line() {
    let lines = refused(
        "name = 'a'\nmain = 'index.js'\n\
         [[migrations]]\ntag = 'v1'\ndeleted_classes = ['Old']\n\
         transferred_classes = [{ from = 'A', from_script = 'b', to = 'A' }]\n\
         [env.staging]\n\
         migrations = [{ tag = 'v2', new_classes = ['B'] }]\n\
         durable_objects.bindings = [{ name = 'O', class_name = 'O', script_name = 'inventory', environment = 'production' }]\n\
         services = [{ binding = 'S', service = 'auth', environment = 'production' }]\n\
         dispatch_namespaces = [{ binding = 'D', namespace = 'tenants', outbound = { service = 'egress', environment = 'production' } }]\n\
         queues.producers = [{ binding = 'Q', queue = 'jobs', delivery_delay = 43201 }]\n\
         queues.consumers = [{ queue = 'jobs', type = 'http_pull' }, { queue = 'other', visibility_timeout_ms = 100 }]\n\
         d1_databases = [{ binding = 'DB', database_name = 'shop-db', remote = true }, { binding = 'DB2' }]\n\
         r2_buckets = [{ binding = 'R', bucket_name = 'files', jurisdiction = 'eu', remote = true }, { binding = 'R2' }]\n\
         workflows = [{ binding = 'W', name = 'signup' }]\n",
        &["--env", "staging"],
    );
    assert_eq!(
        lines,
        [
            "wrangler.toml: env.staging.migrations: not supported: only the top level may set it (wrangler ignores it here too)",
            "wrangler.toml: durable_objects.bindings[0].environment: not supported: a binding names the hosting Worker by its name (script_name)",
            "wrangler.toml: services[0].environment: not supported: a binding calls the Worker of that name, in this namespace",
            "wrangler.toml: dispatch_namespaces[0].outbound.environment: not supported: the outbound Worker is the Worker of that name, in this namespace",
            "wrangler.toml: queues.producers[0].delivery_delay: not supported: 43201 is out of 0 to 43200 seconds (12 hours)",
            "wrangler.toml: d1_databases[0].remote: not supported: a remote binding reaches Cloudflare's database; Isolane serves its own",
            "wrangler.toml: d1_databases[1].database_name: not supported: a D1 binding needs database_name (or database_id)",
            "wrangler.toml: r2_buckets[0].remote: not supported: a remote binding reaches Cloudflare's bucket; Isolane serves its own",
            "wrangler.toml: r2_buckets[0].jurisdiction: not supported: a jurisdiction is where Cloudflare keeps a bucket; Isolane keeps it where it runs",
            "wrangler.toml: r2_buckets[1].bucket_name: not supported: an R2 binding needs bucket_name",
            "wrangler.toml: workflows[0].class_name: not supported: a workflow binding needs class_name",
            "wrangler.toml: migrations[0].deleted_classes: not supported: a class's objects cannot be deleted by a migration yet",
            "wrangler.toml: migrations[0].transferred_classes: not supported: objects cannot move between Workers yet",
            "wrangler.toml: queues.consumers[0].type: not supported: only push consumers (a Worker's queue handler) are supported",
            "wrangler.toml: queues.consumers[1].visibility_timeout_ms: not supported: a pull consumer's setting",
            "isolane deploy: wrangler.toml: 15 key(s) cannot be deployed (above)",
        ]
    );
}
