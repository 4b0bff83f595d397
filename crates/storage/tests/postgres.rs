//! The PostgreSQL backend against a real PostgreSQL (Debian's, started by
//! `isolane_testenv::Postgres`): the same entries, lists, limits and
//! isolation between Kubernetes namespaces as the SQLite backend, data kept
//! across connections, and operations pipelined over one connection.
#![allow(clippy::unwrap_used)]

use isolane_storage::{
    KvListOptions, KvScope, KvWrite, PostgresSettings, SCHEMA_VERSION, Store, StoreError,
};
use isolane_testenv::Postgres;

fn write(key: &str, value: &str) -> KvWrite {
    KvWrite {
        key: key.into(),
        value: value.as_bytes().to_vec(),
        metadata: None,
        expiration: None,
        expiration_ttl: None,
    }
}

async fn value(store: &Store, scope: &KvScope, key: &str) -> Option<String> {
    store
        .kv_get(scope.clone(), key.into(), None, |_| true)
        .await
        .unwrap()
        .entry
        .map(|entry| String::from_utf8(entry.value).unwrap())
}

async fn names(store: &Store, scope: &KvScope, options: KvListOptions) -> Vec<String> {
    let list = store.kv_list(scope.clone(), options).await.unwrap();
    list.keys.into_iter().map(|key| key.name).collect()
}

#[tokio::test]
async fn kv_on_a_real_postgresql() {
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    let store = Store::postgres(&settings).unwrap();

    // Before the operator's migrations, operations fail with a clear error.
    let early = store
        .kv_get(KvScope::new("team-a", "shared"), "k".into(), None, |_| true)
        .await;
    assert!(
        matches!(
            early,
            Err(StoreError::Schema {
                found: 0,
                want: SCHEMA_VERSION
            })
        ),
        "{early:?}"
    );
    // Two operators migrating at once apply each migration once.
    let (one, two) = tokio::join!(
        isolane_storage::migrate(&settings),
        isolane_storage::migrate(&settings)
    );
    assert_eq!(
        (one.unwrap(), two.unwrap()),
        (SCHEMA_VERSION, SCHEMA_VERSION)
    );
    let a = KvScope::new("team-a", "shared");
    let b = KvScope::new("team-b", "shared");

    // Entries with metadata and expiration.
    let mut w = write("k", "v1");
    w.metadata = Some(r#"{"n":1}"#.into());
    w.expiration_ttl = Some(3600.0);
    store.kv_put(a.clone(), w).await.unwrap();
    let entry = store
        .kv_get(a.clone(), "k".into(), None, |_| true)
        .await
        .unwrap()
        .entry
        .unwrap();
    assert_eq!(entry.value, b"v1");
    assert_eq!(entry.metadata.as_deref(), Some(r#"{"n":1}"#));
    assert!(entry.expiration.is_some());

    // One namespace never sees another's data under the same names.
    assert_eq!(value(&store, &b, "k").await, None);
    store.kv_put(b.clone(), write("k", "of b")).await.unwrap();
    assert_eq!(value(&store, &a, "k").await.as_deref(), Some("v1"));
    store.kv_delete(b.clone(), "k".into()).await.unwrap();
    assert_eq!(value(&store, &a, "k").await.as_deref(), Some("v1"));
    assert!(names(&store, &b, KvListOptions::default()).await.is_empty());

    // Lists in byte order, by prefix, in pages.
    for key in ["user:2", "user:10", "user:1", "users", "\u{e9}"] {
        store.kv_put(a.clone(), write(key, "x")).await.unwrap();
    }
    assert_eq!(
        names(&store, &a, KvListOptions::default()).await,
        ["k", "user:1", "user:10", "user:2", "users", "\u{e9}"]
    );
    let first = store
        .kv_list(
            a.clone(),
            KvListOptions {
                prefix: "user:".into(),
                limit: Some(2),
                cursor: None,
            },
        )
        .await
        .unwrap();
    assert!(!first.list_complete);
    let second = names(
        &store,
        &a,
        KvListOptions {
            prefix: "user:".into(),
            limit: Some(2),
            cursor: first.cursor,
        },
    )
    .await;
    assert_eq!(second, ["user:2"]);

    // Refused writes lose nothing; a refused read reads nothing.
    let mut bad = write("k", "new");
    bad.metadata = Some("m".repeat(1025));
    assert!(matches!(
        store.kv_put(a.clone(), bad).await,
        Err(StoreError::Kv(_))
    ));
    assert_eq!(value(&store, &a, "k").await.as_deref(), Some("v1"));
    let refused = store
        .kv_get(a.clone(), "k".into(), None, |len| len < 2)
        .await;
    assert!(matches!(refused, Err(StoreError::Refused { len: 2 })));

    // Many operations at once over the pool.
    let puts = (0..50).map(|i| store.kv_put(a.clone(), write(&format!("p{i:02}"), "v")));
    for put in futures::future::join_all(puts).await {
        put.unwrap();
    }
    let listed = names(
        &store,
        &a,
        KvListOptions {
            prefix: "p".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(listed.len(), 50);

    // Another store (a restarted process) sees it all.
    let again = Store::postgres(&settings).unwrap();
    assert_eq!(value(&again, &a, "k").await.as_deref(), Some("v1"));
    assert_eq!(value(&again, &b, "k").await, None);

    // The server ends every connection (a failover, an admin): the pool
    // makes new ones and the next operation works.
    let (admin, connection) =
        tokio_postgres::connect(&server.connection_string(), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(connection);
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE pid <> pg_backend_pid() AND datname = current_database()",
            &[],
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let read = store.kv_get(a.clone(), "k".into(), None, |_| true).await;
        match read {
            Ok(read) => {
                assert_eq!(read.entry.map(|e| e.value), Some(b"v1".to_vec()));
                break;
            }
            // An operation already holding a dying connection may fail once.
            Err(error) if std::time::Instant::now() < deadline => {
                eprintln!("after the terminate: {error}");
            }
            Err(error) => panic!("the store did not reconnect: {error}"),
        }
    }
}

/// Two nodes, each with its hot-key cache, on one database: Cloudflare's
/// consistency. The node that wrote reads its write at once; the other
/// answers from its cache until the read's TTL passes, then sees it.
#[tokio::test]
async fn hot_keys_read_your_writes_here_and_within_the_ttl_elsewhere() {
    use std::time::{Duration, Instant};
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let here = Store::postgres(&settings).unwrap().with_kv_cache(1 << 20);
    let there = Store::postgres(&settings).unwrap().with_kv_cache(1 << 20);
    let scope = KvScope::new("team-a", "kv");
    let read = |store: &Store, ttl: Duration| {
        let (store, scope) = (store.clone(), scope.clone());
        async move {
            let read = store
                .kv_get(scope, "k".into(), Some(ttl), |_| true)
                .await
                .unwrap();
            let value = read.entry.map(|e| String::from_utf8(e.value).unwrap());
            (value, read.cached)
        }
    };
    let long = Duration::from_secs(60);
    here.kv_put(scope.clone(), write("k", "v1")).await.unwrap();
    assert_eq!(read(&there, long).await, (Some("v1".into()), false));
    assert_eq!(read(&there, long).await, (Some("v1".into()), true));
    assert_eq!(read(&here, long).await, (Some("v1".into()), false));

    here.kv_put(scope.clone(), write("k", "v2")).await.unwrap();
    // Read-your-writes where the write happened.
    assert_eq!(read(&here, long).await, (Some("v2".into()), false));
    // Elsewhere: the cached value within the TTL ...
    assert_eq!(read(&there, long).await, (Some("v1".into()), true));
    // ... and the new one once a read's TTL has passed.
    let short = Duration::from_millis(200);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (value, _) = read(&there, short).await;
        if value.as_deref() == Some("v2") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the other node never saw the write"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A delete here is seen here at once; absence is cached too.
    here.kv_delete(scope.clone(), "k".into()).await.unwrap();
    assert_eq!(read(&here, long).await, (None, false));
    assert_eq!(read(&here, long).await, (None, true));
}

/// A quota per Kubernetes namespace under concurrent writes: exactly what
/// fits is stored, growth past it is refused, shrinking and deleting still
/// work, and another namespace keeps its own room.
#[tokio::test]
async fn a_namespace_quota_holds_under_concurrent_writes() {
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings)
        .unwrap()
        .with_namespace_quota(100);
    let (a, b) = (KvScope::new("team-a", "kv"), KvScope::new("team-b", "kv"));
    // 30 writes of 10 bytes each (3-byte key, 7-byte value) at once.
    let puts = (0..30).map(|i| store.kv_put(a.clone(), write(&format!("k{i:02}"), "xxxxxxx")));
    let results = futures::future::join_all(puts).await;
    let stored = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(stored, 10, "{results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            refused
                .to_string()
                .contains("quota of 100 bytes is used up"),
            "{refused}"
        );
    }
    let listed = names(&store, &a, KvListOptions::default()).await;
    assert_eq!(listed.len(), 10);
    // Full: growth refused; shrinking, then growth within the room freed.
    let first = listed[0].clone();
    assert!(store.kv_put(a.clone(), write("new", "")).await.is_err());
    store.kv_put(a.clone(), write(&first, "x")).await.unwrap();
    store.kv_put(a.clone(), write("new", "123")).await.unwrap();
    store.kv_delete(a.clone(), first).await.unwrap();
    store.kv_put(a.clone(), write("more", "")).await.unwrap();
    // Another namespace has its own 100 bytes.
    store
        .kv_put(b.clone(), write("k", &"z".repeat(99)))
        .await
        .unwrap();
    assert!(store.kv_put(b, write("j", "")).await.is_err());
}

fn object_write(entries: &[(&str, Option<&str>)]) -> isolane_storage::ObjectWrite {
    isolane_storage::ObjectWrite {
        delete_all: false,
        fence: None,
        entries: entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(|v| v.as_bytes().to_vec())))
            .collect(),
    }
}

/// Durable Objects' storage (migration 3): atomic writes, lists in byte
/// order both ways, deleteAll, alarms, objects of another namespace apart,
/// and the namespace quota exact under 30 concurrent writes.
#[tokio::test]
async fn durable_object_storage_on_a_real_postgresql() {
    use isolane_storage::{ObjectList, ObjectScope, ObjectWrite};
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap();
    let a = ObjectScope::new("team-a", "Counter", "1");
    let b = ObjectScope::new("team-b", "Counter", "1");
    let puts = object_write(&[("b", Some("2")), ("a", Some("1")), ("c", Some("3"))]);
    store.object_write(a.clone(), puts).await.unwrap();
    let got = store.object_get(b.clone(), vec!["a".into()]).await.unwrap();
    assert_eq!(got, vec![None], "another namespace sees nothing");
    let got = store
        .object_get(a.clone(), vec!["a".into(), "z".into()])
        .await
        .unwrap();
    assert_eq!(got, vec![Some(b"1".to_vec()), None]);
    let options = ObjectList {
        reverse: true,
        limit: Some(2),
        ..ObjectList::default()
    };
    let keys: Vec<String> = store
        .object_list(a.clone(), options)
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, ["c", "b"]);
    let clear = ObjectWrite {
        delete_all: true,
        fence: None,
        entries: vec![("d".into(), Some(b"4".to_vec()))],
    };
    store.object_write(a.clone(), clear).await.unwrap();
    let listed = store
        .object_list(a.clone(), ObjectList::default())
        .await
        .unwrap();
    assert_eq!(listed, vec![("d".to_string(), b"4".to_vec())]);
    store.set_object_alarm(a.clone(), Some(7)).await.unwrap();
    assert_eq!(store.object_alarm(a.clone()).await.unwrap(), Some(7));
    assert_eq!(store.object_alarm(b).await.unwrap(), None);

    let quota = Store::postgres(&settings)
        .unwrap()
        .with_namespace_quota(100);
    let scope = ObjectScope::new("team-q", "C", "1");
    // 30 writes of 10 bytes each (3-byte key, 7-byte value) at once.
    let writes = (0..30).map(|i| {
        let key = format!("k{i:02}");
        quota.object_write(scope.clone(), object_write(&[(&key, Some("xxxxxxx"))]))
    });
    let results = futures::future::join_all(writes).await;
    let stored = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(stored, 10, "{results:?}");
    let listed = quota
        .object_list(scope, ObjectList::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 10);
}

/// Alarms (migration 4): two processes claiming the same 40 due alarms at
/// once take each exactly once; a failed delivery comes back at its retry
/// time with its count, a successful one deletes it.
#[tokio::test]
async fn alarm_claims_on_a_real_postgresql_hand_each_alarm_to_one_claimer() {
    use isolane_storage::ObjectScope;
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let one = Store::postgres(&settings).unwrap();
    let two = Store::postgres(&settings).unwrap();
    for i in 0..40 {
        let scope = ObjectScope::new("ns", "w/C", format!("{i:02}"));
        one.set_object_alarm(scope, Some(100 + i)).await.unwrap();
    }
    assert_eq!(two.next_alarm_at().await.unwrap(), Some(100));
    let mut claimed = Vec::new();
    for _ in 0..8 {
        let (a, b) = tokio::join!(
            one.claim_due_alarms(1_000, 60_000, 5),
            two.claim_due_alarms(1_000, 60_000, 5)
        );
        claimed.extend(a.unwrap());
        claimed.extend(b.unwrap());
    }
    let mut ids: Vec<_> = claimed.iter().map(|a| a.scope.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        (claimed.len(), ids.len()),
        (40, 40),
        "each alarm claimed once"
    );
    assert!(
        one.claim_due_alarms(2_000, 60_000, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let first = claimed.remove(0);
    // Every alarm is claimed until 60,000: none can be taken before then.
    assert_eq!(one.next_alarm_at().await.unwrap(), Some(60_000));
    assert!(!two.alarm_failed(first.clone(), 70_000).await.unwrap());
    let again = one.claim_due_alarms(70_000, 80_000, 100).await.unwrap();
    let retried: Vec<_> = again.iter().filter(|a| a.scope == first.scope).collect();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].retries, 1);
    one.alarm_done(retried[0].clone()).await.unwrap();
    assert_eq!(one.object_alarm(first.scope).await.unwrap(), None);
}

/// A look at the store shares alarms between namespaces (a backlog of 30
/// overdue alarms in one leaves room for another's), and a deleted
/// Worker's alarms leave the store while another Worker's (of the same
/// namespace, its name a prefix of the first's; or of another namespace,
/// with the same name) stay.
#[tokio::test]
async fn alarms_are_shared_between_namespaces_and_leave_with_their_worker() {
    use isolane_storage::{AlarmClaim, ObjectScope};
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap();
    for i in 0..30 {
        let scope = ObjectScope::new("evil", "w/C", format!("{i:02}"));
        store.set_object_alarm(scope, Some(i)).await.unwrap();
    }
    let good = ObjectScope::new("good", "shop/Cart", "a");
    store
        .set_object_alarm(good.clone(), Some(500))
        .await
        .unwrap();
    let claim = AlarmClaim {
        limit: 8,
        per_namespace: 4,
        skip: Vec::new(),
    };
    let claimed = store.claim_due_alarms(1_000, 60_000, claim).await.unwrap();
    let count = |ns: &str| claimed.iter().filter(|a| a.scope.namespace == ns).count();
    assert_eq!((count("evil"), count("good")), (4, 1));
    let skip = AlarmClaim {
        limit: 8,
        per_namespace: 4,
        skip: vec!["evil".to_owned()],
    };
    assert!(
        store
            .claim_due_alarms(1_000, 60_000, skip)
            .await
            .unwrap()
            .is_empty()
    );

    for scope in [
        ObjectScope::new("good", "shop/Order", "b"),
        ObjectScope::new("good", "shop-2/Cart", "a"),
        ObjectScope::new("good", "sho/Cart", "a"),
        ObjectScope::new("evil", "shop/Cart", "a"),
    ] {
        store.set_object_alarm(scope, Some(700)).await.unwrap();
    }
    assert_eq!(store.delete_worker_alarms("good", "shop").await.unwrap(), 2);
    assert_eq!(store.object_alarm(good).await.unwrap(), None);
    for (ns, class) in [
        ("good", "shop-2/Cart"),
        ("good", "sho/Cart"),
        ("evil", "shop/Cart"),
    ] {
        let scope = ObjectScope::new(ns, class, "a");
        assert_eq!(
            store.object_alarm(scope).await.unwrap(),
            Some(700),
            "{ns} {class}"
        );
    }
}

/// Fencing (migration 6): an instance's writes carry the owner epoch it
/// took; once another process takes the object, the stale epoch's writes
/// are refused and write nothing, also when the take races them.
#[tokio::test]
async fn a_stale_owners_write_is_refused_on_a_real_postgresql() {
    use isolane_storage::{ObjectError, ObjectScope};
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let node_a = Store::postgres(&settings).unwrap();
    let node_b = Store::postgres(&settings).unwrap();
    let scope = ObjectScope::new("team-a", "counter/Counter", "1");
    let fenced = |value: &str, epoch: i64| isolane_storage::ObjectWrite {
        fence: Some(epoch),
        ..object_write(&[("n", Some(value))])
    };
    let a = node_a
        .take_object(scope.clone(), "node-a".into())
        .await
        .unwrap();
    assert_eq!(a, 1);
    node_a
        .object_write(scope.clone(), fenced("1", a))
        .await
        .unwrap();
    let b = node_b
        .take_object(scope.clone(), "node-b".into())
        .await
        .unwrap();
    assert_eq!(b, 2);
    let refused = node_a.object_write(scope.clone(), fenced("stale", a)).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Object(ObjectError::Fenced {
                mine: 1,
                current: 2
            }))
        ),
        "{refused:?}"
    );
    let got = node_b
        .object_get(scope.clone(), vec!["n".into()])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec![Some(b"1".to_vec())],
        "a refused write writes nothing"
    );
    node_b
        .object_write(scope.clone(), fenced("2", b))
        .await
        .unwrap();
    // Writes under epoch 2 racing a take: each lands before it or is
    // refused, never anything else; after the take, every one is refused.
    let writes: Vec<_> = (0..30)
        .map(|i| {
            let store = node_b.clone();
            let write = fenced(&format!("w{i}"), b);
            let scope = scope.clone();
            tokio::spawn(async move { store.object_write(scope, write).await })
        })
        .collect();
    let c = node_a
        .take_object(scope.clone(), "node-a".into())
        .await
        .unwrap();
    assert_eq!(c, 3);
    for write in writes {
        match write.await.unwrap() {
            Ok(())
            | Err(StoreError::Object(ObjectError::Fenced {
                mine: 2,
                current: 3,
            })) => {}
            Err(other) => panic!("a fenced write failed otherwise: {other}"),
        }
    }
    let late = node_b.object_write(scope.clone(), fenced("late", b)).await;
    assert!(late.is_err(), "{late:?}");
    node_a
        .object_write(scope.clone(), fenced("3", c))
        .await
        .unwrap();
    let got = node_a.object_get(scope, vec!["n".into()]).await.unwrap();
    assert_eq!(got, vec![Some(b"3".to_vec())]);
}

/// The store speaks TLS to a server whose certificate a private CA signed
/// (as CloudNativePG's is): with `sslmode=require` it connects when the CA
/// is given (`ca_file`, `--storage-postgres-ca-file`) and fails, naming
/// TLS, when it is not.
#[tokio::test]
async fn the_store_reaches_a_tls_server_through_a_private_ca() {
    let server = Postgres::start().unwrap();
    let mut settings = PostgresSettings::new(server.tls_connection_string());
    let refused = isolane_storage::migrate(&settings).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| format!("{e:?}").contains("Tls")),
        "{refused:?}"
    );
    settings.ca_file = Some(server.ca_file());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap();
    let scope = KvScope::new("team-a", "shared");
    let got = store
        .kv_get(scope, "k".into(), None, |_| true)
        .await
        .unwrap();
    assert!(got.entry.is_none());
}

/// The per-object limit (migration 7's `do_object_usage`) under 30
/// concurrent writes to one object: exactly what fits is stored, another
/// object has its own room, shrinking goes through; and alarm writes
/// fenced by the owner epoch: a stale owner can neither set nor delete.
#[tokio::test]
async fn per_object_limits_and_fenced_alarms_on_a_real_postgresql() {
    use isolane_storage::ObjectScope;
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap().with_object_quota(100);
    let (full, other) = (
        ObjectScope::new("team-a", "w/C", "1"),
        ObjectScope::new("team-a", "w/C", "2"),
    );
    // 30 writes of 10 bytes each (3-byte key, 7-byte value) at once.
    let writes = (0..30).map(|i| {
        let key = format!("k{i:02}");
        store.object_write(full.clone(), object_write(&[(&key, Some("xxxxxxx"))]))
    });
    let results = futures::future::join_all(writes).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        10,
        "{results:?}"
    );
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        let text = refused.to_string();
        assert!(
            text.contains("this object's storage limit of 100 bytes"),
            "{text}"
        );
    }
    let listed = store
        .object_list(full.clone(), isolane_storage::ObjectList::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 10);
    store
        .object_write(
            other.clone(),
            object_write(&[("big", Some(&"x".repeat(97)))]),
        )
        .await
        .unwrap();
    let first = listed[0].0.clone();
    store
        .object_write(
            full.clone(),
            object_write(&[(&first, None), ("new", Some("1234567"))]),
        )
        .await
        .unwrap();
    assert!(
        store
            .object_write(full.clone(), object_write(&[("more", Some(""))]))
            .await
            .is_err()
    );

    let old = store.take_object(full.clone(), "a".into()).await.unwrap();
    store
        .set_object_alarm_fenced(full.clone(), Some(7), Some(old))
        .await
        .unwrap();
    let new = store.take_object(full.clone(), "b".into()).await.unwrap();
    for at in [Some(9), None] {
        let error = store
            .set_object_alarm_fenced(full.clone(), at, Some(old))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no longer its owner"), "{error}");
        assert_eq!(store.object_alarm(full.clone()).await.unwrap(), Some(7));
    }
    store
        .set_object_alarm_fenced(full.clone(), None, Some(new))
        .await
        .unwrap();
    assert_eq!(store.object_alarm(full).await.unwrap(), None);
}

/// SQLite-backed objects' logs (`do_sql_log`), their appends sent to the
/// server together: in order, a snapshot dropping what it replaces, the
/// object's bound held under concurrent appends (nothing of a refused one
/// written), a stale owner refused.
#[tokio::test]
async fn sql_logs_on_a_real_postgresql() {
    use isolane_storage::{ObjectError, ObjectScope, SqlAppend};
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    let store = Store::postgres(&settings).unwrap().with_object_quota(100);
    let (scope, other) = (
        ObjectScope::new("team-a", "w/Chat", "1"),
        ObjectScope::new("team-a", "w/Chat", "2"),
    );
    let epoch = store.take_object(scope.clone(), "a".into()).await.unwrap();
    let append = |record: &[u8], snapshot: bool, fence: i64| SqlAppend {
        record: record.to_vec(),
        snapshot,
        fence: Some(fence),
    };
    for record in [b"one", b"two"] {
        let next = append(record, false, epoch);
        store.sql_append(scope.clone(), next).await.unwrap();
    }
    assert_eq!(
        store.sql_log(scope.clone()).await.unwrap(),
        [b"one", b"two"]
    );
    assert!(store.sql_log(other).await.unwrap().is_empty());
    let snapshot = append(b"whole", true, epoch);
    store.sql_append(scope.clone(), snapshot).await.unwrap();
    assert_eq!(store.sql_log(scope.clone()).await.unwrap(), [b"whole"]);
    // 5 bytes stored; 30 appends of 10 at once: 9 fit the 100.
    let appends =
        (0..30u8).map(|i| store.sql_append(scope.clone(), append(&[i; 10], false, epoch)));
    let results = futures::future::join_all(appends).await;
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        9,
        "{results:?}"
    );
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(
            refused.to_string().contains("storage limit of 100 bytes"),
            "{refused}"
        );
    }
    let log = store.sql_log(scope.clone()).await.unwrap();
    assert_eq!(log.len(), 10, "{log:?}");
    assert_eq!(log[0], b"whole");
    let newer = store.take_object(scope.clone(), "b".into()).await.unwrap();
    let stale = store
        .sql_append(scope.clone(), append(b"stale", true, epoch))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Object(ObjectError::Fenced { .. }))),
        "{stale:?}"
    );
    assert_eq!(store.sql_log(scope.clone()).await.unwrap(), log);
    let next = append(b"three", true, newer);
    store.sql_append(scope.clone(), next).await.unwrap();
    assert_eq!(store.sql_log(scope).await.unwrap(), [b"three"]);
}
