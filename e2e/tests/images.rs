//! The images `make images` builds (`hack/build-images.sh`), with no container
//! daemon: each archive is a well-formed OCI image whose config runs the binary
//! as the non-root user the chart requires, whose one layer holds the binary,
//! its shared libraries, the CA bundle and /etc/passwd and nothing else, and
//! whose node image actually runs under `runc` (Debian's, as a kubelet's
//! containerd would run it) with the chart's user and a read-only root.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use isolane_e2e::images::{self, APP_IMAGES, Archive, PAUSE_IMAGE};
use serde_json::{Value, json};

const NONROOT: &str = "65532:65532";

/// One build of the four images per test process (it takes a while).
fn built() -> &'static (tempfile::TempDir, Vec<(String, std::path::PathBuf)>) {
    static BUILT: std::sync::OnceLock<(tempfile::TempDir, Vec<(String, std::path::PathBuf)>)> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let archives = images::build(dir.path());
        (dir, archives)
    })
}

fn archive(image: &str) -> (tempfile::TempDir, Archive) {
    let (_, archives) = built();
    let path = &archives
        .iter()
        .find(|(name, _)| name == image)
        .unwrap_or_else(|| panic!("{image} was not built"))
        .1;
    let dir = tempfile::tempdir().expect("tempdir");
    let archive = Archive::open(path, dir.path());
    (dir, archive)
}

#[test]
fn app_images_hold_the_binary_its_libraries_and_a_nonroot_user() {
    for image in APP_IMAGES {
        let (_dir, archive) = archive(image);
        let annotations = &archive.index["manifests"][0]["annotations"];
        assert_eq!(
            annotations["io.containerd.image.name"],
            json!(images::reference(image))
        );
        assert_eq!(
            annotations["org.opencontainers.image.ref.name"],
            json!(images::TAG)
        );
        let config = &archive.config["config"];
        assert_eq!(config["User"], json!(NONROOT), "{image}");
        assert_eq!(
            config["Entrypoint"],
            json!([format!("/usr/local/bin/{image}")]),
            "{image}"
        );
        assert_eq!(archive.config["os"], json!("linux"));
        assert_eq!(archive.manifest["layers"].as_array().map(Vec::len), Some(1));

        let files: BTreeSet<String> = archive
            .layer_entries()
            .into_iter()
            .filter(|entry| !entry.ends_with('/'))
            .collect();
        let binary = format!("usr/local/bin/{image}");
        for required in [
            binary.as_str(),
            "etc/passwd",
            "etc/group",
            "etc/ssl/certs/ca-certificates.crt",
            "lib64/ld-linux-x86-64.so.2",
            "lib/x86_64-linux-gnu/libc.so.6",
        ] {
            assert!(
                files.contains(required),
                "{image} lacks {required}: {files:?}"
            );
        }
        let extra: Vec<&String> = files
            .iter()
            .filter(|file| {
                *file != &binary
                    && ![
                        "etc/passwd",
                        "etc/group",
                        "etc/ssl/certs/ca-certificates.crt",
                    ]
                    .contains(&file.as_str())
                    && !(file.starts_with("lib") && file.contains(".so"))
            })
            .collect();
        assert!(
            extra.is_empty(),
            "{image} holds more than it needs: {extra:?}"
        );
        assert!(!files.contains("bin/sh"), "{image} has a shell");
    }
}

#[test]
fn pause_image_is_one_static_file() {
    let (_dir, archive) = archive(PAUSE_IMAGE);
    assert_eq!(archive.config["config"]["Entrypoint"], json!(["/pause"]));
    assert_eq!(archive.config["config"]["User"], json!("65535:65535"));
    let files: Vec<String> = archive
        .layer_entries()
        .into_iter()
        .filter(|entry| !entry.ends_with('/'))
        .collect();
    assert_eq!(files, ["pause"]);
}

/// The node image's entrypoint runs `--help` under runc, as 65532 on a
/// read-only root with every capability dropped: the loader and libraries are
/// where the binary looks for them.
#[test]
fn node_image_runs_under_runc() {
    let (dir, archive) = archive("isolane-node");
    let bundle = dir.path().join("bundle");
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(&rootfs).expect("create rootfs");
    archive.unpack_layer(&rootfs);

    let status = Command::new("runc")
        .arg("spec")
        .arg("--bundle")
        .arg(&bundle)
        .status()
        .expect("runc is installed (hack/install-deps.sh)");
    assert!(status.success(), "runc spec failed");
    let spec_path = bundle.join("config.json");
    let mut spec: Value =
        serde_json::from_slice(&std::fs::read(&spec_path).expect("read config.json"))
            .expect("runc spec writes JSON");
    let mut args: Vec<Value> = archive.config["config"]["Entrypoint"]
        .as_array()
        .expect("an entrypoint")
        .clone();
    args.push(json!("--help"));
    spec["process"]["args"] = Value::Array(args);
    spec["process"]["terminal"] = json!(false);
    spec["process"]["user"] = json!({"uid": 65532, "gid": 65532});
    spec["process"]["capabilities"] =
        json!({"bounding": [], "effective": [], "permitted": [], "ambient": []});
    spec["root"]["readonly"] = json!(true);
    std::fs::write(&spec_path, spec.to_string()).expect("write config.json");

    let state = dir.path().join("runc-state");
    let id = format!("isolane-e2e-{}", std::process::id());
    let output = Command::new("runc")
        .arg("--root")
        .arg(&state)
        .args(["run", "--bundle"])
        .arg(&bundle)
        .arg(&id)
        .output()
        .expect("run runc");
    let _ = Command::new("runc")
        .arg("--root")
        .arg(&state)
        .args(["delete", "--force", &id])
        .output();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "runc run failed ({}): {stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Usage: isolane-node"), "{stdout}");
    assert!(!Path::new(&state).join(&id).exists(), "runc left its state");
}
