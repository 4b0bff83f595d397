//! The container images as `make images` builds them (`hack/build-images.sh`),
//! from the binaries the other e2e tests run, and what is inside an archive.
//!
//! [`build`] links the operator, node and router binaries (named by
//! `ISOLANE_*_BIN`, see [`crate::process::binary`]) into a directory
//! under their own names and runs the script on it, so a test gets the same
//! OCI archives a release gets, from debug binaries. [`Archive`] unpacks one
//! and follows `index.json` → manifest → config and layer, as a runtime does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::cluster::{NODE_BIN_ENV, ROUTER_BIN_ENV};
use crate::operator::OPERATOR_BIN_ENV;
use crate::process::{self, workspace_root};

/// The three images of the project, by binary name.
pub const APP_IMAGES: [&str; 3] = ["isolane-operator", "isolane-node", "isolane-router"];
/// The pod sandbox image the tests' node runs (`hack/pause/pause.c`).
pub const PAUSE_IMAGE: &str = "isolane-pause";
/// The registry prefix and tag the tests' images are named with.
pub const REGISTRY: &str = "isolane.test";
pub const TAG: &str = "e2e";

/// `REGISTRY/<image>:TAG`, the name `build` gives an image.
pub fn reference(image: &str) -> String {
    format!("{REGISTRY}/{image}:{TAG}")
}

/// Builds all four images into `out` and returns the archives' paths by image.
///
/// # Panics
/// When a binary cannot be built or the script fails.
pub fn build(out: &Path) -> Vec<(String, PathBuf)> {
    let bin_dir = out.join("bin");
    std::fs::create_dir_all(&bin_dir).expect("create the binaries' directory");
    for (image, env) in APP_IMAGES
        .iter()
        .zip([OPERATOR_BIN_ENV, NODE_BIN_ENV, ROUTER_BIN_ENV])
    {
        let binary = process::binary(image, env);
        let link = bin_dir.join(image);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&binary, &link).expect("link the binary");
    }
    let output = Command::new(workspace_root().join("hack/build-images.sh"))
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(out)
        .args(["--registry", REGISTRY, "--tag", TAG])
        .output()
        .expect("run hack/build-images.sh");
    assert!(
        output.status.success(),
        "hack/build-images.sh failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    APP_IMAGES
        .iter()
        .chain([&PAUSE_IMAGE])
        .map(|image| (image.to_string(), out.join(format!("{image}.oci.tar"))))
        .collect()
}

/// An unpacked OCI image archive with one image of one layer.
#[derive(Debug)]
pub struct Archive {
    /// Where the archive was unpacked (an OCI image layout).
    pub layout: PathBuf,
    /// `index.json`.
    pub index: Value,
    /// The image manifest the index names.
    pub manifest: Value,
    /// The image config the manifest names.
    pub config: Value,
}

impl Archive {
    /// Unpacks `archive` into `into` (which must exist).
    ///
    /// # Panics
    /// When the archive is not a well-formed OCI image layout.
    pub fn open(archive: &Path, into: &Path) -> Self {
        run(Command::new("tar")
            .arg("-xf")
            .arg(archive)
            .arg("-C")
            .arg(into));
        let read = |path: PathBuf| -> Value {
            let text = std::fs::read(&path)
                .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
            serde_json::from_slice(&text)
                .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
        };
        let index = read(into.join("index.json"));
        let manifest = read(blob_path(into, &index["manifests"][0]["digest"]));
        let config = read(blob_path(into, &manifest["config"]["digest"]));
        Self {
            layout: into.to_owned(),
            index,
            manifest,
            config,
        }
    }

    /// The path of the (only) layer's blob.
    pub fn layer(&self) -> PathBuf {
        blob_path(&self.layout, &self.manifest["layers"][0]["digest"])
    }

    /// Every entry of the layer, as `tar -t` lists it (directories end in `/`).
    pub fn layer_entries(&self) -> Vec<String> {
        let output = run(Command::new("tar").arg("-tzf").arg(self.layer()));
        String::from_utf8_lossy(&output)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Unpacks the layer into `rootfs` (which must exist).
    pub fn unpack_layer(&self, rootfs: &Path) {
        run(Command::new("tar")
            .arg("-xzf")
            .arg(self.layer())
            .arg("-C")
            .arg(rootfs));
    }
}

fn blob_path(layout: &Path, digest: &Value) -> PathBuf {
    let digest = digest.as_str().expect("a digest string");
    let hex = digest
        .strip_prefix("sha256:")
        .unwrap_or_else(|| panic!("{digest} is not a sha256 digest"));
    layout.join("blobs/sha256").join(hex)
}

/// Runs a command that must succeed and returns its stdout.
fn run(command: &mut Command) -> Vec<u8> {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}
