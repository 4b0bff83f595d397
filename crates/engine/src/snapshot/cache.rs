//! The snapshot's disk cache: one file per build, so a process after the
//! first deserialises the blob rather than evaluating the runtime again.
//!
//! A checked file (`isolane-checkedfile`: magic `ISOLSNAP`, named
//! `snapshot-<key>.bin`). The key is a SHA-256 of everything the blob
//! depends on: the runtime's JavaScript (the core's and the families'), the engine's Rust sources
//! (`ISOLANE_ENGINE_FINGERPRINT`, from `build.rs`: the host functions'
//! order, the host object), those of `isolane-events`, `isolane-streams` and `isolane-fetch-api` (files below the core) and those of the API crates' families it was
//! made with (`Family::fingerprint`), V8's version and the V8 flags. A file that does
//! not check out is rebuilt and rewritten, never handed to V8, which aborts
//! the process on a blob it cannot read. Files of other builds are removed
//! when this build's is written.

use std::path::Path;

use crate::checked_file::{self, CacheError, Key, Kind};

const KIND: Kind = Kind {
    magic: b"ISOLSNAP",
    prefix: "snapshot-",
    what: "snapshot",
};

/// This build's key.
pub(crate) fn current_key() -> Key {
    let fingerprint = [
        env!("ISOLANE_ENGINE_FINGERPRINT"),
        isolane_events::FINGERPRINT,
        isolane_fetch_api::FINGERPRINT,
        isolane_streams::FINGERPRINT,
    ]
    .into_iter()
    .chain(crate::host::families().iter().map(|f| f.fingerprint))
    .collect::<Vec<_>>()
    .join(",");
    key_of(
        &fingerprint,
        v8::V8::get_version(),
        crate::platform::FLAGS,
        &super::sources()
            .map(|(name, source)| (name, source.as_str()))
            .collect::<Vec<_>>(),
    )
}

fn key_of(fingerprint: &str, v8_version: &str, flags: &str, runtime: &[(&str, &str)]) -> Key {
    let fields = [fingerprint, v8_version, flags]
        .into_iter()
        .chain(runtime.iter().flat_map(|(name, source)| [*name, *source]));
    Key::of(fields.map(str::as_bytes))
}

/// The blob cached under `key` in `dir` (see `checked_file::load`).
pub(crate) fn load(dir: &Path, key: &Key) -> Result<Option<Vec<u8>>, CacheError> {
    checked_file::load(dir, &KIND, key)
}

/// Writes `blob` under `key` in `dir`, then removes other builds' files.
pub(crate) fn store(dir: &Path, key: &Key, blob: &[u8]) -> Result<(), CacheError> {
    checked_file::store(dir, &KIND, key, blob)?;
    checked_file::remove_others(dir, &KIND, key);
    Ok(())
}

#[cfg(test)]
pub(crate) fn file_name(key: &Key) -> String {
    key.file_name(&KIND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_covers_every_input() {
        let base = key_of("f", "v", "flags", &[("a.js", "1")]);
        assert_ne!(base, key_of("g", "v", "flags", &[("a.js", "1")]));
        assert_ne!(base, key_of("f", "w", "flags", &[("a.js", "1")]));
        assert_ne!(base, key_of("f", "v", "other", &[("a.js", "1")]));
        assert_ne!(base, key_of("f", "v", "flags", &[("a.js", "2")]));
        assert_ne!(base, key_of("f", "v", "flags", &[("b.js", "1")]));
        // Bytes moved between fields are another key.
        assert_ne!(base, key_of("f", "v", "flag", &[("sa.js", "1")]));
        assert_eq!(base, key_of("f", "v", "flags", &[("a.js", "1")]));
    }

    #[test]
    fn a_store_replaces_other_builds_files() {
        let dir = tempfile::tempdir().unwrap();
        let old = key_of("old", "v", "flags", &[]);
        store(dir.path(), &old, b"old").unwrap();
        let new = key_of("new", "v", "flags", &[]);
        store(dir.path(), &new, b"new").unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![file_name(&new)]);
    }
}
