use super::*;

fn key(fingerprint: &str) -> Key {
    Key::of(fingerprint, "13.0", "--flag", &[("00_a.js", "1;")])
}

fn stored(blob: &[u8]) -> (tempfile::TempDir, Key, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let key = key("build-a");
    store(dir.path(), &key, blob).unwrap();
    let path = dir.path().join(key.file_name());
    (dir, key, path)
}

fn rejected(dir: &Path, key: &Key) -> &'static str {
    match load(dir, key) {
        Err(CacheError::Invalid { reason, .. }) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_stored_blob_loads_back() {
    let (dir, key, _) = stored(b"blob bytes");
    assert_eq!(
        load(dir.path(), &key).unwrap().as_deref(),
        Some(&b"blob bytes"[..])
    );
}

#[test]
fn no_file_is_no_blob() {
    let dir = tempfile::tempdir().unwrap();
    assert!(load(dir.path(), &key("x")).unwrap().is_none());
}

#[test]
fn the_key_covers_every_input() {
    let base = Key::of("f", "v", "flags", &[("a.js", "1")]);
    assert_ne!(base, Key::of("g", "v", "flags", &[("a.js", "1")]));
    assert_ne!(base, Key::of("f", "w", "flags", &[("a.js", "1")]));
    assert_ne!(base, Key::of("f", "v", "other", &[("a.js", "1")]));
    assert_ne!(base, Key::of("f", "v", "flags", &[("a.js", "2")]));
    assert_ne!(base, Key::of("f", "v", "flags", &[("b.js", "1")]));
    // Bytes moved between fields are another key.
    assert_ne!(base, Key::of("f", "v", "flag", &[("sa.js", "1")]));
    assert_eq!(base, Key::of("f", "v", "flags", &[("a.js", "1")]));
}

#[test]
fn a_file_from_another_build_is_not_used() {
    let (dir, _, path) = stored(b"blob bytes");
    // Another build's file under this build's name (copied, or a
    // collision of the name's half of the key).
    let other = key("build-b");
    fs::rename(&path, dir.path().join(other.file_name())).unwrap();
    assert_eq!(rejected(dir.path(), &other), "made by another build");
}

#[test]
fn a_flipped_byte_in_the_blob_is_caught() {
    let (dir, key, path) = stored(b"blob bytes");
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    fs::write(&path, bytes).unwrap();
    assert_eq!(rejected(dir.path(), &key), "digest mismatch");
}

#[test]
fn truncated_and_extended_files_are_caught() {
    let (dir, key, path) = stored(b"blob bytes");
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert_eq!(rejected(dir.path(), &key), "truncated or extended");
    fs::write(&path, [&bytes[..], b"x"].concat()).unwrap();
    assert_eq!(rejected(dir.path(), &key), "truncated or extended");
    fs::write(&path, &bytes[..10]).unwrap();
    assert_eq!(rejected(dir.path(), &key), "shorter than its header");
    fs::write(&path, b"").unwrap();
    assert_eq!(rejected(dir.path(), &key), "shorter than its header");
}

#[test]
fn a_wrong_magic_or_format_is_caught() {
    let (dir, key, path) = stored(b"blob bytes");
    let bytes = fs::read(&path).unwrap();
    let mut other = bytes.clone();
    other[0] = b'X';
    fs::write(&path, &other).unwrap();
    assert_eq!(rejected(dir.path(), &key), "no snapshot magic");
    let mut other = bytes;
    other[8] ^= 1;
    fs::write(&path, &other).unwrap();
    assert_eq!(rejected(dir.path(), &key), "another file format");
}

#[test]
fn a_store_replaces_other_builds_files_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let old = key("old");
    store(dir.path(), &old, b"old").unwrap();
    fs::write(dir.path().join("unrelated.txt"), b"kept").unwrap();
    let new = key("new");
    store(dir.path(), &new, b"new").unwrap();
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec![new.file_name(), "unrelated.txt".to_owned()]);
}
