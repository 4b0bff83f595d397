//! Collects the runtime's JavaScript (`js/NN_*.js`, in file-name order) into
//! `$OUT_DIR/runtime_js.rs` so the engine embeds it. A folder `js/NN_name/`
//! is one runtime file, `NN_name.js`: its `*.js` parts joined in name order
//! (one script, one scope; `js/08_streams/` is the streams standard split at
//! its sections). The snapshot itself is built at `Engine::start` (see
//! `src/snapshot.rs` for why not here).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let js = manifest.join("js");
    println!("cargo:rerun-if-changed={}", js.display());
    let files = runtime_files(&js);
    // The set is complete when its last file, 99_finalize.js, is there: it
    // hides the host object from worker code.
    if !files.iter().any(|(name, _)| name == "99_finalize.js") {
        panic!(
            "{} has no 99_finalize.js: the runtime's JavaScript is incomplete",
            js.display()
        );
    }
    let mut out =
        String::from("/// The runtime's JavaScript, in evaluation order: (file name, source).\n");
    out.push_str("pub(crate) static RUNTIME_JS: &[(&str, &str)] = &[\n");
    for (name, parts) in &files {
        let mut sources = Vec::new();
        for part in parts {
            println!("cargo:rerun-if-changed={}", part.display());
            sources.push(format!("include_str!({:?})", part.display().to_string()));
        }
        out.push_str(&format!(
            "    ({name:?}, concat!({})),\n",
            sources.join(", ")
        ));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(env::var("OUT_DIR").unwrap_or_default()).join("runtime_js.rs");
    if let Err(error) = fs::write(&dest, out) {
        panic!("writing {}: {error}", dest.display());
    }
}

/// The runtime files directly in `dir`, sorted by name: each `NN_name.js`
/// file (one part) and each `NN_name/` folder (its `*.js` parts, sorted).
fn runtime_files(dir: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let mut files: Vec<(String, Vec<PathBuf>)> = entries(dir)
        .into_iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            let bytes = name.as_bytes();
            let numbered = bytes.len() > 3
                && bytes[0].is_ascii_digit()
                && bytes[1].is_ascii_digit()
                && bytes[2] == b'_';
            if !numbered {
                return None;
            }
            if path.is_dir() {
                let mut parts: Vec<PathBuf> = entries(&path)
                    .into_iter()
                    .filter(|p| p.extension().is_some_and(|e| e == "js"))
                    .collect();
                parts.sort();
                println!("cargo:rerun-if-changed={}", path.display());
                Some((format!("{name}.js"), parts))
            } else if name.ends_with(".js") {
                Some((name, vec![path]))
            } else {
                None
            }
        })
        .collect();
    files.sort();
    files
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect()
}
