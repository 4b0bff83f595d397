//! The workspace's members and their files, as `cargo metadata` lists them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::Error;

/// The workspace: its root and its member packages.
#[derive(Debug)]
pub struct Workspace {
    pub root: PathBuf,
    pub members: Vec<Member>,
}

/// One package of the workspace.
#[derive(Debug)]
pub struct Member {
    pub name: String,
    /// The folder holding its `Cargo.toml`.
    pub dir: PathBuf,
    /// The packages it depends on to build its library and binaries (not
    /// its tests' or build script's).
    pub dependencies: Vec<String>,
}

#[derive(Deserialize)]
struct Metadata {
    workspace_root: PathBuf,
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    dependencies: Vec<Dependency>,
}

#[derive(Deserialize)]
struct Dependency {
    name: String,
    /// `null` for a normal dependency, `"dev"` or `"build"` otherwise.
    kind: Option<String>,
}

impl Workspace {
    /// Reads the workspace around `manifest_dir` with `cargo` (the one
    /// running the tests: `$CARGO`, else `cargo` on the path).
    pub fn read(manifest_dir: &Path) -> Result<Self, Error> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(manifest_dir)
            .output()
            .map_err(|e| Error::Metadata(e.to_string()))?;
        if !output.status.success() {
            return Err(Error::Metadata(
                String::from_utf8_lossy(&output.stderr).into_owned(),
            ));
        }
        let metadata: Metadata =
            serde_json::from_slice(&output.stdout).map_err(|e| Error::Metadata(e.to_string()))?;
        let mut members: Vec<Member> = metadata
            .packages
            .into_iter()
            .filter_map(|p| {
                let dir = p.manifest_path.parent()?.to_path_buf();
                let dependencies = p
                    .dependencies
                    .into_iter()
                    .filter(|d| d.kind.is_none())
                    .map(|d| d.name)
                    .collect();
                Some(Member {
                    name: p.name,
                    dir,
                    dependencies,
                })
            })
            .collect();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            root: metadata.workspace_root,
            members,
        })
    }

    /// The path of `file` relative to the workspace root, for messages.
    pub fn relative<'a>(&self, file: &'a Path) -> &'a Path {
        file.strip_prefix(&self.root).unwrap_or(file)
    }
}

/// Every `.rs` file below `dir`, sorted; none when `dir` does not exist.
pub fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    files_with(dir, &|path| path.extension().is_some_and(|e| e == "rs"))
}

/// Every file below `dir` that `keep` accepts, sorted, skipping `target` and
/// `node_modules` folders.
pub fn files_with(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    if !dir.is_dir() {
        return Ok(files);
    }
    let read = |path: &Path, source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(|e| read(dir, e))? {
        let path = entry.map_err(|e| read(dir, e))?.path();
        let name = path.file_name().unwrap_or_default();
        if path.is_dir() {
            if name != "target" && name != "node_modules" {
                files.extend(files_with(&path, keep)?);
            }
        } else if keep(&path) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}
