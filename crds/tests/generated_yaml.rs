//! The committed CRD YAML must be exactly what the Rust types generate.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crds/ has a parent: the workspace root")
}

#[test]
fn committed_crd_yaml_matches_the_types() {
    let generated = isolane_crds::worker_crd_yaml().unwrap();
    for target in ["crds/worker.yaml", "charts/isolane/crds/worker.yaml"] {
        let committed = std::fs::read_to_string(root().join(target))
            .unwrap_or_else(|e| panic!("read {target}: {e}"));
        assert!(
            committed == generated,
            "{target} is stale: run `cargo run -p isolane-crds --bin crdgen -- --write`"
        );
    }
    let generated = isolane_crds::tenant_policy_crd_yaml().unwrap();
    for target in [
        "crds/tenantpolicy.yaml",
        "charts/isolane/crds/tenantpolicy.yaml",
    ] {
        let committed = std::fs::read_to_string(root().join(target))
            .unwrap_or_else(|e| panic!("read {target}: {e}"));
        assert!(
            committed == generated,
            "{target} is stale: run `cargo run -p isolane-crds --bin crdgen -- --write`"
        );
    }
}

#[test]
fn example_workers_deserialize_into_the_types() {
    let dir = root().join("deploy/examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_yaml::Value::deserialize(doc).unwrap();
            if value.get("kind").and_then(|k| k.as_str()) == Some("Worker") {
                let worker: isolane_crds::Worker = serde_yaml::from_value(value)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert!(worker.spec.script.is_some() != worker.spec.script_from.is_some());
                seen += 1;
            }
        }
    }
    assert!(
        seen >= 3,
        "expected at least 3 example Workers, found {seen}"
    );
}

use serde::Deserialize;

#[test]
fn defaults_fill_an_empty_spec() {
    let spec: isolane_crds::WorkerSpec =
        serde_json::from_str(r#"{"script": "export default {}"}"#).unwrap();
    assert_eq!(spec.limits, isolane_worker::Limits::default());
    assert_eq!(spec.replicas, 1);
    let route: isolane_worker::Route =
        serde_json::from_str(r#"{"host": "a.example.com"}"#).unwrap();
    assert_eq!(route.path_prefix, "/");
}
