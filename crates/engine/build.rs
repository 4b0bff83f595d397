//! Collects the runtime's JavaScript (`js/NN_*.js`, in file-name order) into
//! `$OUT_DIR/runtime_js.rs` so the engine embeds it. The snapshot itself is
//! built at `Engine::start` (see `src/snapshot.rs` for why not here).

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
    if !files.iter().any(|f| f.ends_with("99_finalize.js")) {
        panic!(
            "{} has no 99_finalize.js: the runtime's JavaScript is incomplete",
            js.display()
        );
    }
    let mut out =
        String::from("/// The runtime's JavaScript, in evaluation order: (file name, source).\n");
    out.push_str("pub(crate) static RUNTIME_JS: &[(&str, &str)] = &[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        out.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(env::var("OUT_DIR").unwrap_or_default()).join("runtime_js.rs");
    if let Err(error) = fs::write(&dest, out) {
        panic!("writing {}: {error}", dest.display());
    }
}

/// `NN_name.js` files directly in `dir`, sorted by name.
fn runtime_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let bytes = name.as_bytes();
            name.ends_with(".js")
                && bytes.len() > 3
                && bytes[0].is_ascii_digit()
                && bytes[1].is_ascii_digit()
                && bytes[2] == b'_'
        })
        .collect();
    files.sort();
    files
}
