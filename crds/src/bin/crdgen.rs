//! Writes the Worker CustomResourceDefinition as YAML.
//!
//! `crdgen` prints it; `crdgen --write` writes it to every committed location
//! (`crds/worker.yaml` and the Helm chart's `crds/`), relative to the workspace root.

use std::path::{Path, PathBuf};

/// Where the generated CRD is committed, relative to the workspace root.
const TARGETS: [&str; 2] = ["crds/worker.yaml", "charts/isolane/crds/worker.yaml"];

fn main() -> anyhow::Result<()> {
    let yaml = isolane_crds::worker_crd_yaml()?;
    if std::env::args().nth(1).as_deref() == Some("--write") {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        for target in TARGETS {
            let path = root.join(target);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&path, &yaml)?;
            eprintln!("wrote {}", path.display());
        }
    } else {
        print!("{yaml}");
    }
    Ok(())
}
