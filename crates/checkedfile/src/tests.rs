use super::*;

const KIND: Kind = Kind {
    magic: b"ISOLTEST",
    prefix: "test-",
    what: "test file",
};

fn key(fingerprint: &str) -> Key {
    Key::of([fingerprint.as_bytes(), &b"13.0"[..]])
}

fn stored(blob: &[u8]) -> (tempfile::TempDir, Key, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let key = key("build-a");
    store(dir.path(), &KIND, &key, blob).unwrap();
    let path = dir.path().join(key.file_name(&KIND));
    (dir, key, path)
}

fn rejected(dir: &Path, key: &Key) -> &'static str {
    match load(dir, &KIND, key) {
        Err(CacheError::Invalid { reason, .. }) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_stored_blob_loads_back() {
    let (dir, key, _) = stored(b"blob bytes");
    assert_eq!(
        load(dir.path(), &KIND, &key).unwrap().as_deref(),
        Some(&b"blob bytes"[..])
    );
}

#[test]
fn no_file_is_no_blob() {
    let dir = tempfile::tempdir().unwrap();
    assert!(load(dir.path(), &KIND, &key("x")).unwrap().is_none());
}

#[test]
fn bytes_moved_between_fields_are_another_key() {
    assert_ne!(
        Key::of([&b"ab"[..], &b"c"[..]]),
        Key::of([&b"a"[..], &b"bc"[..]])
    );
    assert_eq!(
        Key::of([&b"ab"[..], &b"c"[..]]),
        Key::of([&b"ab"[..], &b"c"[..]])
    );
}

#[test]
fn a_file_from_another_build_is_not_used() {
    let (dir, _, path) = stored(b"blob bytes");
    // Another build's file under this build's name (copied, or a
    // collision of the name's half of the key).
    let other = key("build-b");
    fs::rename(&path, dir.path().join(other.file_name(&KIND))).unwrap();
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
    assert_eq!(rejected(dir.path(), &key), "another magic");
    let mut other = bytes;
    other[8] ^= 1;
    fs::write(&path, &other).unwrap();
    assert_eq!(rejected(dir.path(), &key), "another file format");
}

#[test]
fn remove_others_keeps_one_key_and_other_kinds_and_leaves_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let old = key("old");
    store(dir.path(), &KIND, &old, b"old").unwrap();
    fs::write(dir.path().join("unrelated.txt"), b"kept").unwrap();
    let new = key("new");
    store(dir.path(), &KIND, &new, b"new").unwrap();
    remove_others(dir.path(), &KIND, &new);
    assert_eq!(
        names(dir.path()),
        vec![new.file_name(&KIND), "unrelated.txt".to_owned()]
    );
}

#[test]
fn trim_removes_the_oldest_files_beyond_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<Key> = (0..3).map(|i| key(&i.to_string())).collect();
    for (i, key) in keys.iter().enumerate() {
        store(dir.path(), &KIND, key, &[0; 100]).unwrap();
        let path = dir.path().join(key.file_name(&KIND));
        let written = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + i as u64);
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(written)
            .unwrap();
    }
    fs::write(dir.path().join("sha256-other"), [0; 1000]).unwrap();
    // Each file is 100 bytes and its header: room for two.
    trim(dir.path(), &KIND, 2 * (100 + HEADER as u64));
    let mut left = vec![
        keys[1].file_name(&KIND),
        keys[2].file_name(&KIND),
        "sha256-other".to_owned(),
    ];
    left.sort();
    assert_eq!(names(dir.path()), left);
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
