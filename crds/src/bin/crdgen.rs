//! Writes the Worker and TenantPolicy CustomResourceDefinitions as YAML.
//!
//! `crdgen` prints them (one document each); `crdgen --write` writes each
//! to every committed location (`crds/` and the Helm chart's `crds/`),
//! relative to the workspace root.

use std::path::{Path, PathBuf};

/// Where each generated CRD is committed, relative to the workspace root.
const TARGETS: [(&str, [&str; 2]); 2] = [
    (
        "worker",
        ["crds/worker.yaml", "charts/isolane/crds/worker.yaml"],
    ),
    (
        "tenantpolicy",
        [
            "crds/tenantpolicy.yaml",
            "charts/isolane/crds/tenantpolicy.yaml",
        ],
    ),
];

fn main() -> anyhow::Result<()> {
    let worker = isolane_crds::worker_crd_yaml()?;
    let policy = isolane_crds::tenant_policy_crd_yaml()?;
    if std::env::args().nth(1).as_deref() == Some("--write") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        for (kind, targets) in TARGETS {
            let yaml = if kind == "worker" { &worker } else { &policy };
            for target in targets {
                let path = root.join(target);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(&path, yaml)?;
                eprintln!("wrote {}", path.display());
            }
        }
    } else {
        print!("{worker}---\n{policy}");
    }
    Ok(())
}
