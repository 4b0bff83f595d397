use super::*;

const NOW: u64 = 1_800_000_000;

fn open(dir: &Path) -> Sqlite {
    Sqlite::open(&dir.join("db.sqlite3")).unwrap()
}

fn write(key: &str, value: &str) -> KvWrite {
    KvWrite {
        key: key.into(),
        value: value.as_bytes().to_vec(),
        metadata: None,
        expiration: None,
        expiration_ttl: None,
    }
}

fn names(list: &KvList) -> Vec<&str> {
    list.keys.iter().map(|k| k.name.as_str()).collect()
}

#[test]
fn put_get_delete_with_metadata_and_expiration() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let scope = KvScope::new("team-a", "cache");
    let mut w = write("k", "v");
    w.metadata = Some(r#"{"n":1}"#.into());
    w.expiration_ttl = Some(120.0);
    db.put(&scope, &w, NOW, None).unwrap();
    let entry = db.get(&scope, "k", NOW, |_| true).unwrap().unwrap();
    assert_eq!(entry.value, b"v");
    assert_eq!(entry.metadata.as_deref(), Some(r#"{"n":1}"#));
    assert_eq!(entry.expiration, Some(NOW + 120));
    // Expired: invisible to reads and lists.
    assert_eq!(db.get(&scope, "k", NOW + 120, |_| true).unwrap(), None);
    db.put(&scope, &write("k2", "v"), NOW, None).unwrap();
    let mut w3 = write("k3", "v");
    w3.expiration = Some((NOW + 60) as f64);
    db.put(&scope, &w3, NOW, None).unwrap();
    let list = db
        .list(&scope, &KvListOptions::default(), NOW + 60)
        .unwrap();
    assert_eq!(names(&list), ["k2"]);
    db.delete(&scope, "k2").unwrap();
    assert_eq!(db.get(&scope, "k2", NOW, |_| true).unwrap(), None);
    // Refused by the caller's budget: nothing read.
    let refused = db.get(&scope, "k3", NOW, |len| len < 1).unwrap_err();
    assert!(
        matches!(refused, StoreError::Refused { len: 1 }),
        "{refused}"
    );
}

#[test]
fn one_kubernetes_namespace_never_sees_anothers_data() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let a = KvScope::new("team-a", "shared");
    let b = KvScope::new("team-b", "shared");
    // Names that would collide if scope and key were simply joined.
    let c = KvScope::new("team-a/shared", "x");
    db.put(&a, &write("k", "a"), NOW, None).unwrap();
    db.put(&b, &write("k", "b"), NOW, None).unwrap();
    assert_eq!(db.get(&a, "k", NOW, |_| true).unwrap().unwrap().value, b"a");
    assert_eq!(db.get(&b, "k", NOW, |_| true).unwrap().unwrap().value, b"b");
    assert_eq!(db.get(&c, "k", NOW, |_| true).unwrap(), None);
    db.delete(&b, "k").unwrap();
    assert_eq!(db.get(&a, "k", NOW, |_| true).unwrap().unwrap().value, b"a");
    assert_eq!(
        names(&db.list(&b, &KvListOptions::default(), NOW).unwrap()),
        Vec::<&str>::new()
    );
    assert_eq!(
        names(&db.list(&c, &KvListOptions::default(), NOW).unwrap()),
        Vec::<&str>::new()
    );
    // A cursor made in one scope lists only the other scope's own keys.
    for key in ["a1", "a2", "a3"] {
        db.put(&a, &write(key, "v"), NOW, None).unwrap();
    }
    let page = db
        .list(
            &a,
            &KvListOptions {
                limit: Some(1),
                ..Default::default()
            },
            NOW,
        )
        .unwrap();
    let other = db
        .list(
            &b,
            &KvListOptions {
                cursor: page.cursor,
                ..Default::default()
            },
            NOW,
        )
        .unwrap();
    assert!(other.keys.is_empty());
}

#[test]
fn lists_page_in_byte_order_within_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let scope = KvScope::new("ns", "kv");
    for key in [
        "user:2", "user:10", "user:1", "users", "user;", "a", "\u{e9}",
    ] {
        db.put(&scope, &write(key, "v"), NOW, None).unwrap();
    }
    let all = db.list(&scope, &KvListOptions::default(), NOW).unwrap();
    assert_eq!(
        names(&all),
        [
            "a", "user:1", "user:10", "user:2", "user;", "users", "\u{e9}"
        ]
    );
    assert!(all.list_complete && all.cursor.is_none());
    let mut options = KvListOptions {
        prefix: "user:".into(),
        limit: Some(2),
        cursor: None,
    };
    let first = db.list(&scope, &options, NOW).unwrap();
    assert_eq!(names(&first), ["user:1", "user:10"]);
    assert!(!first.list_complete);
    options.cursor = first.cursor.clone();
    let second = db.list(&scope, &options, NOW).unwrap();
    assert_eq!(names(&second), ["user:2"]);
    assert!(second.list_complete && second.cursor.is_none());
    options.cursor = Some("not a cursor!".into());
    assert!(matches!(
        db.list(&scope, &options, NOW),
        Err(StoreError::Kv(kv::KvError::InvalidCursor))
    ));
}

#[test]
fn entries_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let scope = KvScope::new("ns", "kv");
    open(dir.path())
        .put(&scope, &write("k", "kept"), NOW, None)
        .unwrap();
    let again = open(dir.path());
    assert_eq!(
        again
            .get(&scope, "k", NOW, |_| true)
            .unwrap()
            .unwrap()
            .value,
        b"kept"
    );
}

#[test]
fn bad_writes_are_refused_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let scope = KvScope::new("ns", "kv");
    db.put(&scope, &write("k", "old"), NOW, None).unwrap();
    let mut bad = write("k", "new");
    bad.metadata = Some("x".repeat(1025));
    assert!(matches!(
        db.put(&scope, &bad, NOW, None),
        Err(StoreError::Kv(kv::KvError::MetadataTooLarge { len: 1025 }))
    ));
    let mut bad = write("k", "new");
    bad.expiration_ttl = Some(30.0);
    assert!(db.put(&scope, &bad, NOW, None).is_err());
    assert_eq!(
        db.get(&scope, "k", NOW, |_| true).unwrap().unwrap().value,
        b"old"
    );
}

#[test]
fn prefix_ends_are_the_next_byte_string() {
    use crate::kv::prefix_end;
    assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
    assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
    assert_eq!(prefix_end(b"\xff\xff"), None);
    assert_eq!(prefix_end(b""), None);
}

#[test]
fn a_namespace_quota_refuses_growth_and_keeps_shrinking_and_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let (a, b) = (KvScope::new("team-a", "kv"), KvScope::new("team-b", "kv"));
    let quota = Some(100);
    // k + 49 bytes = 50, twice: 100, at the quota.
    db.put(&a, &write("k", &"x".repeat(49)), NOW, quota)
        .unwrap();
    db.put(&a, &write("j", &"x".repeat(49)), NOW, quota)
        .unwrap();
    assert_eq!(db.usage("team-a").unwrap(), 100);
    // One byte more: refused with Cloudflare's status, and nothing written.
    let refused = db.put(&a, &write("i", ""), NOW, quota).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "KV PUT failed: 413 The namespace's KV storage quota of 100 bytes is used up; delete entries or shrink values first."
    );
    assert_eq!(db.get(&a, "i", NOW, |_| true).unwrap(), None);
    assert_eq!(db.usage("team-a").unwrap(), 100);
    // Shrinking and deleting go through; then growth fits again.
    db.put(&a, &write("k", "x"), NOW, quota).unwrap();
    assert_eq!(db.usage("team-a").unwrap(), 52);
    db.delete(&a, "j").unwrap();
    assert_eq!(db.usage("team-a").unwrap(), 2);
    db.put(&a, &write("i", &"y".repeat(90)), NOW, quota)
        .unwrap();
    // Another namespace has its own.
    db.put(&b, &write("k", &"z".repeat(99)), NOW, quota)
        .unwrap();
    assert_eq!(db.usage("team-b").unwrap(), 100);
    // An expired entry a read removes is no longer counted; metadata counts
    // in bytes.
    let mut expiring = write("e", "v");
    expiring.expiration_ttl = Some(60.0);
    expiring.metadata = Some("\"é\"".into());
    db.delete(&a, "i").unwrap();
    db.put(&a, &expiring, NOW, quota).unwrap();
    assert_eq!(db.usage("team-a").unwrap(), 2 + 2 + 4);
    assert_eq!(db.get(&a, "e", NOW + 60, |_| true).unwrap(), None);
    assert_eq!(db.usage("team-a").unwrap(), 2);
}

#[test]
fn an_older_database_gets_the_queue_lease_epoch_as_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite3");
    // The tables as made before the column was added (`queue::SCHEMA`
    // still makes them so; `queue::migrate` adds it).
    let old = Connection::open(&path).unwrap();
    old.execute_batch(queue::SCHEMA).unwrap();
    drop(old);
    let db = Sqlite::open(&path).unwrap();
    let scope = crate::QueueScope::new("team-a", "jobs");
    let rows = vec![("m1".to_owned(), b"x".to_vec(), "text".to_owned(), 0)];
    db.queue_send(&scope, &rows, 0, None).unwrap();
    let epoch = db.queue_take(&scope, "node-a").unwrap();
    assert_eq!(
        db.queue_lease(&scope, Some(epoch), 0, 60_000, 10)
            .unwrap()
            .len(),
        1
    );
    // Leased under epoch 1: released as another node takes the queue.
    let next = db.queue_take(&scope, "node-b").unwrap();
    assert_eq!(
        db.queue_lease(&scope, Some(next), 1, 60_000, 10)
            .unwrap()
            .len(),
        1
    );
}
