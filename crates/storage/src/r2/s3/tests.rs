//! The S3 backend against a real SeaweedFS (the testenv's), by the checks
//! every backend passes (`conformance`) and the S3 store's own.

use std::sync::Arc;

use isolane_testenv::SeaweedFs;

use super::super::conformance;
use super::super::{R2Bucket, R2PutOptions};
use super::{S3Bucket, S3Settings, S3Store};

fn store(weed: &SeaweedFs, temp: &std::path::Path, prefix: &str) -> Arc<S3Store> {
    let settings = S3Settings {
        endpoint: weed.s3_endpoint(),
        region: isolane_testenv::S3_REGION.into(),
        bucket: "isolane-r2".into(),
        prefix: prefix.into(),
        access_key: isolane_testenv::S3_ACCESS_KEY.into(),
        secret_key: isolane_testenv::S3_SECRET_KEY.into(),
        temp_dir: temp.to_owned(),
    };
    Arc::new(S3Store::new(settings).unwrap())
}

/// One SeaweedFS for every check (each on buckets of its own namespaces).
#[test]
fn the_s3_backend_does_what_the_disk_backend_does() {
    let weed = SeaweedFs::start().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let store = store(&weed, temp.path(), "r2/");
    let bucket = |ns: &str| S3Bucket::new(store.clone(), ns, "files").unwrap();
    conformance::read_back_and_apart(&bucket("team-a"), &bucket("team-b"));
    // S3's keys are 1024 bytes: the prefix (`r2/odd-a/files/`) comes off.
    conformance::odd_keys_stay_apart(&bucket("odd-a"), &bucket("odd-b"), 990);
    let too_long = "x".repeat(1024);
    let refused = bucket("odd-a").put(
        &too_long,
        conformance::body(&bucket("odd-a"), b"x", &[]),
        &R2PutOptions::default(),
    );
    assert_eq!(refused, Err(super::R2Error::InvalidObjectName));
    conformance::conditions_and_digests(&bucket("conditions"));
    conformance::multipart_size_rules(&bucket("multipart"));
    conformance::list_pages(&bucket("list"));
    assert!(S3Bucket::new(store.clone(), "..", "files").is_err());
    assert!(S3Bucket::new(store.clone(), "a/b", "files").is_err());
    let left = std::fs::read_dir(temp.path()).unwrap().count();
    assert_eq!(left, 0, "bodies sent or refused are removed");
    // Another store with a wrong secret is refused, with S3's reason.
    let mut wrong = store.settings.clone();
    wrong.secret_key = "wrong".into();
    let wrong = Arc::new(S3Store::new(wrong).unwrap());
    let _ = wrong.bucket_ready.set(());
    let refused = S3Bucket::new(wrong, "team-a", "files").unwrap().head("k");
    assert!(
        matches!(&refused, Err(super::R2Error::Internal(why)) if why.contains("403")),
        "{refused:?}"
    );
}

/// A body larger than a read's chunk streams up from its file and down a
/// chunk at a time, in order and after a jump back.
#[test]
fn a_big_body_streams_both_ways() {
    let weed = SeaweedFs::start().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let store = store(&weed, temp.path(), "");
    let bucket = S3Bucket::new(store, "ns", "big").unwrap();
    let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
    let mut upload = bucket.new_body(&["sha256".into()]).unwrap();
    for _ in 0..24 {
        upload.write(&chunk).unwrap();
    }
    let stored = bucket
        .put("big", upload, &R2PutOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(stored.size, 24 << 20);
    let (_, read) = bucket.get("big", None).unwrap().unwrap();
    let mut read = read.unwrap();
    let mut offset = 0;
    while offset < stored.size {
        let got = read.read_at(offset, 1 << 20).unwrap();
        assert_eq!(got, chunk, "at {offset}");
        offset += got.len() as u64;
    }
    assert_eq!(read.read_at(3, 4).unwrap(), [3, 4, 5, 6]);
    // Replaced (by a body of the same size) while read: the read ends
    // rather than mixing two objects.
    let mut other = bucket.new_body(&[]).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..24 {
        other.write(&zeros).unwrap();
    }
    bucket.put("big", other, &R2PutOptions::default()).unwrap();
    assert!(read.read_at(1 << 20, 10).is_err());
}

#[test]
fn escaped_keys_keep_order_and_prefixes() {
    use super::{escape, unescape};
    let mut keys = vec![
        "", "!", "a", "a.", "a/", "a/b", "a0", "a-", "a\u{0}", "ü", "z~", "A", "a[", "a\\", "a]",
        "aZ",
    ];
    keys.sort_unstable();
    let escaped: Vec<String> = keys.iter().map(|k| escape(k)).collect();
    let mut sorted = escaped.clone();
    sorted.sort_unstable();
    assert_eq!(escaped, sorted, "order kept");
    for (key, stored) in keys.iter().zip(&escaped) {
        assert!(!stored.contains(['.', '\\', '/']), "{stored}");
        assert_eq!(unescape(stored).as_deref(), Some(*key));
        assert!(escape(&format!("{key}/more")).starts_with(stored.as_str()));
    }
    assert_eq!(unescape("!"), None);
    // Long keys are cut into short segments, in order still.
    let long: Vec<String> = [
        "y".repeat(450),
        format!("{}/", "y".repeat(199)),
        "y".repeat(200),
    ]
    .into_iter()
    .collect();
    for key in &long {
        let stored = escape(key);
        assert!(
            stored.split('/').all(|s| !s.is_empty() && s.len() <= 204),
            "{stored}"
        );
        assert_eq!(unescape(&stored).as_deref(), Some(key.as_str()));
    }
    let mut sorted = long.clone();
    sorted.sort_unstable();
    let stored: Vec<String> = sorted.iter().map(|k| escape(k)).collect();
    let mut again = stored.clone();
    again.sort_unstable();
    assert_eq!(stored, again);
}
