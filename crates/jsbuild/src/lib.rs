//! The build step every engine crate shares (`isolane-engine`, and each API
//! crate: `isolane-nodejs`, …): a crate's runtime JavaScript (`js/NN_*.js`,
//! in file-name order; a folder `js/NN_name/` is one runtime file
//! `NN_name.js`, its `*.js` parts joined in name order) wrapped, stripped of
//! comments and embedded as `$OUT_DIR/runtime_js.rs`, and a fingerprint of
//! the crate's Rust sources, `build.rs` and `Cargo.toml` for the snapshot's
//! disk cache key (`snapshot/cache.rs` in the engine): the host functions'
//! order and the host object the snapshot holds are made by that code, so
//! a blob cached by another build of any of these crates is never used.
//!
//! One implementation, called from each crate's `build.rs` as
//! `isolane_jsbuild::build("ISOLANE_<CRATE>_FINGERPRINT", …)`; the snapshot
//! itself is built at `Engine::start` (see the engine's `src/snapshot.rs`).
#![forbid(unsafe_code)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

/// Each file is a function `[function (host, internal) { … }][0]` (HOST.md),
/// which the engine calls at snapshot time (or, in a lazy unit, on first
/// use). The start shares the file's first line, so line numbers in stack
/// traces stay the lines in `js/`, and is as long as `(function (host,
/// internal) { `, so columns stay too. Not in parentheses: V8 compiles a
/// parenthesised function eagerly, and the snapshot (code kept) then held
/// each lazy unit's compiled top level in every isolate, ~21 KiB of heap
/// for the three lazy units (docs/benchmark-history.md, section 5); this
/// one compiles when it is first called.
const WRAP_START: &str = "[function (host, internal) { ";
const WRAP_END: &str = "\n}][0]";

/// Writes `$OUT_DIR/runtime_js.rs` (the crate's `RUNTIME_JS`, and
/// `WRAP_START`/`WRAP_END` for its tests) from the crate's `js/` folder,
/// and sets the environment variable `fingerprint_env` to the crate's
/// fingerprint. `last`: a file the set must hold (the engine's
/// `99_finalize.js`, which hides the host object from worker code), else
/// the build fails as incomplete.
pub fn build(fingerprint_env: &str, last: Option<&str>) {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let js = manifest.join("js");
    println!("cargo:rerun-if-changed={}", js.display());
    let files = runtime_files(&js);
    println!(
        "cargo:rustc-env={fingerprint_env}={:016x}",
        fingerprint(&manifest)
    );
    if let Some(last) = last
        && !files.iter().any(|(name, _)| name == last)
    {
        panic!(
            "{} has no {last}: the runtime's JavaScript is incomplete",
            js.display()
        );
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap_or_default());
    let mut out = String::from(
        "/// The runtime's JavaScript, in evaluation order: (file name, source\n\
         /// wrapped as HOST.md says, an external string V8 reads in place).\n",
    );
    out.push_str(&format!(
        "#[cfg(test)]\n#[allow(dead_code)]\npub(crate) const WRAP_START: &str = {WRAP_START:?};\n\
         #[cfg(test)]\n#[allow(dead_code)]\npub(crate) const WRAP_END: &str = {WRAP_END:?};\n"
    ));
    out.push_str(
        "#[allow(dead_code)]\npub(crate) static RUNTIME_JS: &[(&str, v8::OneByteConst)] = &[\n",
    );
    for (name, parts) in &files {
        let mut source = String::new();
        for part in parts {
            println!("cargo:rerun-if-changed={}", part.display());
            match fs::read_to_string(part) {
                Ok(text) => source.push_str(&text),
                Err(error) => panic!("reading {}: {error}", part.display()),
            }
        }
        let dest = out_dir.join(name);
        let text = ascii(name, &without_comments(name, &source));
        if let Err(error) = fs::write(&dest, format!("{WRAP_START}{text}{WRAP_END}")) {
            panic!("writing {}: {error}", dest.display());
        }
        out.push_str(&format!(
            "    ({name:?}, v8::String::create_external_onebyte_const(include_bytes!({:?}))),\n",
            dest.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = out_dir.join("runtime_js.rs");
    if let Err(error) = fs::write(&dest, out) {
        panic!("writing {}: {error}", dest.display());
    }
}

/// For a crate's tests: checks each embedded file `(name, source)` of its
/// `RUNTIME_JS` against its `js/` folder `js_dir`: ASCII, wrapped, no
/// comment left (and some dropped) and as many lines as the file (a
/// folder's parts joined),
/// so a stack trace's `isolane:NN_file.js:LINE` is the line in `js/`.
/// Returns the names in order, for the test to compare with the files it
/// expects; panics naming a file that fails.
pub fn check_embedded<'a>(
    js_dir: &Path,
    embedded: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<String> {
    let files = runtime_files(js_dir);
    let mut names = Vec::new();
    for (name, text) in embedded {
        assert!(text.is_ascii(), "{name} has a non-ASCII character");
        let Some(body) = text
            .strip_prefix(WRAP_START)
            .and_then(|s| s.strip_suffix(WRAP_END))
        else {
            panic!("{name} is not wrapped as HOST.md says");
        };
        let source: String = files
            .iter()
            .filter(|(file, _)| file == name)
            .flat_map(|(_, parts)| parts)
            .map(|part| fs::read_to_string(part).unwrap_or_default())
            .collect();
        assert_eq!(body.lines().count(), source.lines().count(), "{name}");
        assert!(body.len() < source.len(), "{name}: nothing dropped");
        assert!(!body.contains("// "), "{name}: a comment left");
        names.push(name.to_owned());
    }
    names
}

/// Sets the environment variable `fingerprint_env` to the crate's
/// fingerprint, for a crate without runtime JavaScript of its own (its
/// JavaScript is Node built-ins, `include_str!`ed by its units).
pub fn fingerprint_only(fingerprint_env: &str) {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!(
        "cargo:rustc-env={fingerprint_env}={:016x}",
        fingerprint(&manifest)
    );
}

/// `source` without its comments, parsed by oxc: the runtime's comments
/// were about a quarter of its bytes (see [`ascii`]). A comment becomes the line breaks it held (so line
/// numbers in stack traces stay), or a space for a block comment on one
/// line (so no two tokens join); the blanks before it go with it. A file that does not parse fails the build.
fn without_comments(name: &str, source: &str) -> String {
    // Parsed as the engine evaluates it: inside a function.
    const PREFIX: &str = "(function (host, internal) {";
    let wrapped = format!("{PREFIX}{source}\n}})");
    let allocator = oxc_allocator::Allocator::default();
    let parsed =
        oxc_parser::Parser::new(&allocator, &wrapped, oxc_span::SourceType::script()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        panic!("{name} does not parse: {:?}", parsed.diagnostics.first());
    }
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    for comment in &parsed.program.comments {
        let start = comment.span.start as usize - PREFIX.len();
        let end = comment.span.end as usize - PREFIX.len();
        // Blanks before a comment are between tokens: they go too.
        out.push_str(source[at..start].trim_end_matches([' ', '\t']));
        let breaks = source[start..end].matches('\n').count();
        if breaks > 0 {
            out.push_str(&"\n".repeat(breaks));
        } else if source[start..end].starts_with("/*") {
            out.push(' ');
        }
        at = end;
    }
    out.push_str(&source[at..]);
    out
}

/// `source` with every non-ASCII character written as a `\uXXXX` escape.
/// V8 keeps the runtime's sources (it compiles the functions that did not
/// run at snapshot time from them, lazily), as external one-byte strings
/// over these bytes (`v8::OneByteConst`, ASCII only); one non-ASCII
/// character (an em dash in a comment) would make the file a two-byte
/// string, copied into every isolate. The escape
/// means the same character in a comment, a string or template literal's
/// value, a regular expression and an identifier; only a template's raw
/// text (`String.raw`) would differ, and characters outside the BMP are
/// refused (they would need a surrogate pair).
fn ascii(name: &str, source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for (line, text) in source.lines().enumerate() {
        for c in text.chars() {
            match u16::try_from(u32::from(c)) {
                _ if c.is_ascii() => out.push(c),
                Ok(unit) => out.push_str(&format!("\\u{unit:04x}")),
                Err(_) => panic!(
                    "{name}:{}: {c:?} is outside the BMP: write it as an escape",
                    line + 1
                ),
            }
        }
        out.push('\n');
    }
    out
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

/// A hash of every file under `src/` (path and bytes, in path order), of
/// `build.rs` and of `Cargo.toml`. Cargo reruns this script when any of them
/// changes. Deterministic within one toolchain, which is all the cache key
/// needs (another toolchain makes another binary, and another key).
fn fingerprint(manifest: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let src = manifest.join("src");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let mut paths = vec![manifest.join("build.rs"), manifest.join("Cargo.toml")];
    let mut folders = vec![src];
    while let Some(folder) = folders.pop() {
        for path in entries(&folder) {
            if path.is_dir() {
                folders.push(path);
            } else {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for path in &paths {
        let relative = path.strip_prefix(manifest).unwrap_or(path);
        relative.hash(&mut hasher);
        match fs::read(path) {
            Ok(bytes) => bytes.hash(&mut hasher),
            Err(error) => panic!("reading {}: {error}", path.display()),
        }
    }
    hasher.finish()
}
