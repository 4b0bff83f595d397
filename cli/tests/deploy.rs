//! `isolane deploy` of wrangler projects, as a user runs it: the real
//! binary in the project's folder. `--dry-run`'s YAML for configs that use
//! every supported key (TOML with modules pushed by digest, its staging
//! environment, and JSONC with one script in a ConfigMap) is held by golden
//! files (`cli/tests/wrangler/*.yaml`; `ISOLANE_UPDATE_GOLDEN=1` writes
//! them); a config with keys the platform cannot honour is refused with one
//! line per key. The apply against a real API server is in
//! `deploy_apiserver.rs`.
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
