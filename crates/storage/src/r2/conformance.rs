//! What every backend of [`R2Bucket`] must do alike, as checks each
//! backend's tests run on buckets of its own (the disk's, the S3 store's).

use std::collections::BTreeMap;

use super::{
    R2Bucket, R2Conditional, R2Error, R2Etag, R2ListOptions, R2Object, R2PutOptions, R2Upload,
    limits,
};

pub(crate) fn body(bucket: &dyn R2Bucket, bytes: &[u8], digests: &[&str]) -> R2Upload {
    let digests: Vec<String> = digests.iter().map(|d| (*d).to_owned()).collect();
    let mut upload = bucket.new_body(&digests).unwrap();
    upload.write(bytes).unwrap();
    upload
}

/// `k` put in `a` is read back whole and by range, with its metadata; `b`
/// (another namespace's bucket of the same name) does not have it.
pub(crate) fn read_back_and_apart(a: &dyn R2Bucket, b: &dyn R2Bucket) -> R2Object {
    let mut options = R2PutOptions::default();
    options
        .http_metadata
        .insert("contentType".into(), "text/plain".into());
    options
        .custom_metadata
        .insert("Mixed-Case Key".into(), "välue".into());
    let stored = a
        .put("k", body(a, b"hello world", &[]), &options)
        .unwrap()
        .unwrap();
    assert_eq!(stored.etag, "5eb63bbbe01eeed093cb22bb8f5acdc3");
    assert_eq!(stored.size, 11);
    assert_eq!(stored.custom_metadata["Mixed-Case Key"], "välue");
    assert_eq!(stored.http_metadata["contentType"], "text/plain");
    let (object, read) = a.get("k", None).unwrap().unwrap();
    assert_eq!(object, stored);
    let mut read = read.unwrap();
    assert_eq!(read.read_at(6, 100).unwrap(), b"world");
    assert_eq!(read.read_at(0, 5).unwrap(), b"hello");
    assert_eq!(read.read_at(5, 3).unwrap(), b" wo");
    assert_eq!(read.read_at(11, 3).unwrap(), b"");
    assert_eq!(b.head("k").unwrap(), None, "another namespace's bucket");
    assert_eq!(a.head("missing").unwrap(), None);
    assert!(a.get("missing", None).unwrap().is_none());
    a.delete(&["missing".into()]).unwrap();
    stored
}

/// Keys that look like paths (or are not) are keys of `a`, never reach
/// `b` (another namespace's bucket named alike), and list as given;
/// `longest`: the longest key of `a` (R2's, or less where the store's keys
/// are shorter).
pub(crate) fn odd_keys_stay_apart(a: &dyn R2Bucket, b: &dyn R2Bucket, longest: usize) {
    let long = "x".repeat(longest);
    let keys = [
        "..",
        ".",
        "../team-b/files/k",
        "../../team-b/files/k",
        "/leading",
        "a//b",
        "nul\u{0}byte",
        "ünïcødé/🙂",
        "%2e%2e/enc",
        "q?x=1#frag",
        "back\\slash",
        "!0",
        " lead and trail ",
        long.as_str(),
    ];
    for key in keys {
        let stored = a.put(key, body(a, key.as_bytes(), &[]), &R2PutOptions::default());
        assert!(matches!(stored, Ok(Some(_))), "{key:?}: {stored:?}");
    }
    for key in keys {
        let (object, read) = a.get(key, None).unwrap().unwrap();
        assert_eq!(object.key, key);
        let bytes = read.unwrap().read_at(0, 2048).unwrap();
        assert_eq!(bytes, key.as_bytes(), "{key:?}");
    }
    assert_eq!(b.head("k").unwrap(), None);
    let listed = b.list(&R2ListOptions::default()).unwrap();
    assert!(listed.objects.is_empty(), "{listed:?}");
    let listed = a.list(&R2ListOptions::default()).unwrap();
    let mut expected: Vec<&str> = keys.to_vec();
    expected.sort_unstable();
    let got: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(got, expected);
    let too_long = "y".repeat(limits::MAX_KEY + 1);
    assert_eq!(a.head(&too_long), Err(R2Error::InvalidObjectName));
    a.delete(&keys.map(str::to_owned)).unwrap();
    assert!(
        a.list(&R2ListOptions::default())
            .unwrap()
            .objects
            .is_empty()
    );
}

/// A put whose condition fails stores nothing; a wrong digest is refused.
pub(crate) fn conditions_and_digests(bucket: &dyn R2Bucket) {
    let only_if = R2Conditional {
        etag_matches: Some(vec![R2Etag {
            kind: "strong".into(),
            value: "nope".into(),
        }]),
        ..R2Conditional::default()
    };
    let options = R2PutOptions {
        only_if: Some(only_if),
        ..R2PutOptions::default()
    };
    assert_eq!(bucket.put("k", body(bucket, b"x", &[]), &options), Ok(None));
    assert_eq!(bucket.head("k").unwrap(), None);
    let mut checksums = BTreeMap::new();
    checksums.insert("sha256".to_owned(), "00".repeat(32));
    let options = R2PutOptions {
        checksums,
        ..R2PutOptions::default()
    };
    let refused = bucket.put("k", body(bucket, b"x", &["sha256"]), &options);
    assert!(matches!(
        refused,
        Err(R2Error::BadDigest {
            algorithm: "SHA-256",
            ..
        })
    ));
    assert_eq!(bucket.head("k").unwrap(), None);
    let stored = bucket
        .put("k", body(bucket, b"x", &[]), &R2PutOptions::default())
        .unwrap()
        .unwrap();
    let matching = R2Conditional {
        etag_does_not_match: Some(vec![R2Etag {
            kind: "strong".into(),
            value: stored.etag.clone(),
        }]),
        ..R2Conditional::default()
    };
    let (object, read) = bucket.get("k", Some(&matching)).unwrap().unwrap();
    assert_eq!((object, read.is_none()), (stored, true), "a failed onlyIf");
}

/// A multipart upload is completed by R2's part size rules.
pub(crate) fn multipart_size_rules(bucket: &dyn R2Bucket) {
    let mut options = R2PutOptions::default();
    options.custom_metadata.insert("part".into(), "y".into());
    let id = bucket.create_upload("big", &options).unwrap();
    let five = vec![7u8; limits::MIN_PART as usize];
    let p1 = bucket
        .upload_part("big", &id, 1, body(bucket, &five, &[]))
        .unwrap();
    let p2 = bucket
        .upload_part("big", &id, 2, body(bucket, b"end", &[]))
        .unwrap();
    let small = bucket
        .upload_part("big", &id, 3, body(bucket, b"s", &[]))
        .unwrap();
    assert_eq!(
        bucket.complete_upload("big", &id, &[(2, p2.clone()), (3, small)]),
        Err(R2Error::EntityTooSmall)
    );
    assert_eq!(
        bucket.complete_upload("big", &id, &[(1, "wrong".into())]),
        Err(R2Error::InvalidPart)
    );
    let object = bucket
        .complete_upload("big", &id, &[(1, p1), (2, p2)])
        .unwrap();
    assert_eq!(object.size, limits::MIN_PART + 3);
    assert!(object.etag.ends_with("-2"), "{}", object.etag);
    assert_eq!(object.custom_metadata["part"], "y");
    let (_, read) = bucket.get("big", None).unwrap().unwrap();
    let tail = read.unwrap().read_at(limits::MIN_PART - 1, 10).unwrap();
    assert_eq!(tail, b"\x07end");
    assert_eq!(
        bucket.upload_part("big", &id, 4, body(bucket, b"x", &[])),
        Err(R2Error::NoSuchUpload)
    );
    let aborted = bucket.create_upload("gone", &options).unwrap();
    bucket.abort_upload("gone", &aborted).unwrap();
    assert_eq!(
        bucket.upload_part("gone", &aborted, 1, body(bucket, b"x", &[])),
        Err(R2Error::NoSuchUpload)
    );
}

/// `list` pages by cursor and groups by delimiter.
pub(crate) fn list_pages(bucket: &dyn R2Bucket) {
    for key in ["a/1", "a/2", "b", "c/x/y", "d"] {
        bucket
            .put(key, body(bucket, b"v", &[]), &R2PutOptions::default())
            .unwrap();
    }
    let page = |options: R2ListOptions| bucket.list(&options).unwrap();
    let first = page(R2ListOptions {
        limit: Some(2.0),
        ..R2ListOptions::default()
    });
    let keys: Vec<_> = first.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!((keys, first.truncated), (vec!["a/1", "a/2"], true));
    let second = page(R2ListOptions {
        cursor: first.cursor,
        ..R2ListOptions::default()
    });
    let keys: Vec<_> = second.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!((keys, second.truncated), (vec!["b", "c/x/y", "d"], false));
    let grouped = page(R2ListOptions {
        delimiter: Some("/".into()),
        ..R2ListOptions::default()
    });
    assert_eq!(grouped.delimited_prefixes, ["a/", "c/"]);
    let keys: Vec<_> = grouped.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["b", "d"]);
    let paged = page(R2ListOptions {
        delimiter: Some("/".into()),
        limit: Some(1.0),
        ..R2ListOptions::default()
    });
    assert_eq!(
        (paged.delimited_prefixes, paged.truncated),
        (vec!["a/".to_owned()], true)
    );
    let after_group = page(R2ListOptions {
        delimiter: Some("/".into()),
        cursor: paged.cursor,
        ..R2ListOptions::default()
    });
    let keys: Vec<_> = after_group.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(
        (keys, after_group.delimited_prefixes),
        (vec!["b", "d"], vec!["c/".to_owned()])
    );
    let under = page(R2ListOptions {
        prefix: Some("c/".into()),
        start_after: Some("a".into()),
        include: vec!["customMetadata".into()],
        ..R2ListOptions::default()
    });
    let keys: Vec<_> = under.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["c/x/y"]);
    let too_many = R2ListOptions {
        limit: Some(1001.0),
        ..R2ListOptions::default()
    };
    assert_eq!(bucket.list(&too_many).unwrap_err(), R2Error::InvalidMaxKeys);
}
