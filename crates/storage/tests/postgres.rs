//! The PostgreSQL backend against a real PostgreSQL (Debian's, started by
//! `isolane_testenv::Postgres`): the same entries, lists, limits and
//! isolation between Kubernetes namespaces as the SQLite backend, data kept
//! across connections, and operations pipelined over one connection.
#![allow(clippy::unwrap_used)]

use isolane_storage::{KvListOptions, KvScope, KvWrite, Store, StoreError};
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
        .kv_get(scope.clone(), key.into(), |_| true)
        .await
        .unwrap()
        .map(|entry| String::from_utf8(entry.value).unwrap())
}

async fn names(store: &Store, scope: &KvScope, options: KvListOptions) -> Vec<String> {
    let list = store.kv_list(scope.clone(), options).await.unwrap();
    list.keys.into_iter().map(|key| key.name).collect()
}

#[tokio::test]
async fn kv_on_a_real_postgresql() {
    let server = Postgres::start().unwrap();
    let store = Store::connect_postgres(&server.connection_string())
        .await
        .unwrap();
    let a = KvScope::new("team-a", "shared");
    let b = KvScope::new("team-b", "shared");

    // Entries with metadata and expiration.
    let mut w = write("k", "v1");
    w.metadata = Some(r#"{"n":1}"#.into());
    w.expiration_ttl = Some(3600.0);
    store.kv_put(a.clone(), w).await.unwrap();
    let entry = store
        .kv_get(a.clone(), "k".into(), |_| true)
        .await
        .unwrap()
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
    let refused = store.kv_get(a.clone(), "k".into(), |len| len < 2).await;
    assert!(matches!(refused, Err(StoreError::Refused { len: 2 })));

    // Many operations at once over the one connection.
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

    // Another connection (a restarted process) sees it all.
    let again = Store::connect_postgres(&server.connection_string())
        .await
        .unwrap();
    assert_eq!(value(&again, &a, "k").await.as_deref(), Some("v1"));
    assert_eq!(value(&again, &b, "k").await, None);
}
