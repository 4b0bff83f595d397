//! Queues' backlog on both backends (SQLite in a temporary folder, and a
//! real PostgreSQL started by `isolane_testenv::Postgres`), the same
//! scenario on each: sends in batches (atomic: a refused batch writes
//! nothing), delays, leases that hide a message until they run out (a
//! crashed delivery is delivered again), acks, retries with their delay,
//! dead letters moved or dropped, namespaces apart, the quota, and the
//! retention period.
#![allow(clippy::unwrap_used)]

use isolane_storage::{
    PostgresSettings, QueueQuota, QueueScope, QueueSend, QueueSettle, Store, StoreError,
};
use isolane_testenv::Postgres;

fn send(body: &str, delay_seconds: u32) -> QueueSend {
    QueueSend {
        body: body.as_bytes().to_vec(),
        content_type: "text".into(),
        delay_seconds,
    }
}

fn now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// The bodies, sorted (messages sent in one batch have one timestamp, and
/// no order between them).
fn bodies(messages: &[isolane_storage::QueueMessage]) -> Vec<String> {
    let mut bodies: Vec<String> = messages
        .iter()
        .map(|m| String::from_utf8(m.body.clone()).unwrap())
        .collect();
    bodies.sort();
    bodies
}

async fn scenario(store: Store) {
    let jobs = QueueScope::new("team-a", "jobs");
    let other = QueueScope::new("team-b", "jobs");
    let dlq = QueueScope::new("team-a", "dlq");

    let ids = store
        .queue_send(
            jobs.clone(),
            vec![send("a", 0), send("b", 0), send("later", 3600)],
            true,
        )
        .await
        .unwrap();
    assert_eq!(ids.len(), 3);
    assert_ne!(ids[0], ids[1]);
    store
        .queue_send(other.clone(), vec![send("theirs", 0)], false)
        .await
        .unwrap();
    let t = now();
    let ready = store.queue_ready(jobs.clone(), t, 10).await.unwrap();
    assert_eq!(ready.ready, 2, "the delayed one is not ready");
    assert!(ready.oldest_ready_ms.is_some());

    // A lease takes the visible ones, oldest first, and counts the delivery.
    let leased = store
        .queue_lease(jobs.clone(), None, t, t + 60_000, 10)
        .await
        .unwrap();
    assert_eq!(bodies(&leased), ["a", "b"]);
    assert!(
        leased
            .iter()
            .all(|m| m.attempts == 1 && m.content_type == "text")
    );
    assert!(
        store
            .queue_lease(jobs.clone(), None, t, t + 60_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "leased ones are hidden"
    );
    // A lease that ran out (its process died): delivered again.
    let expired = store
        .queue_lease(jobs.clone(), None, t + 60_001, t + 120_000, 10)
        .await
        .unwrap();
    assert_eq!(bodies(&expired), ["a", "b"]);
    assert!(expired.iter().all(|m| m.attempts == 2));
    let (a, b) = if expired[0].body == b"a" {
        (&expired[0], &expired[1])
    } else {
        (&expired[1], &expired[0])
    };

    // Settle: a acked, b retried in 1 s.
    store
        .queue_settle(
            jobs.clone(),
            QueueSettle {
                acked: vec![a.id.clone()],
                retried: vec![(b.id.clone(), t + 1000)],
                ..QueueSettle::default()
            },
        )
        .await
        .unwrap();
    assert!(
        store
            .queue_lease(jobs.clone(), None, t + 500, t + 60_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let retried = store
        .queue_lease(jobs.clone(), None, t + 1000, t + 60_000, 10)
        .await
        .unwrap();
    assert_eq!(bodies(&retried), ["b"]);
    assert_eq!(retried[0].attempts, 3);

    // Out of retries: moved to the dead-letter queue, whole, as a new
    // message there.
    store
        .queue_settle(
            jobs.clone(),
            QueueSettle {
                dead: vec![retried[0].id.clone()],
                dead_letter: Some("dlq".into()),
                ..QueueSettle::default()
            },
        )
        .await
        .unwrap();
    let dead = store
        .queue_lease(dlq.clone(), None, now(), now() + 1000, 10)
        .await
        .unwrap();
    assert_eq!(bodies(&dead), ["b"]);
    assert_eq!((dead[0].attempts, &dead[0].id), (1, &retried[0].id));
    // Dropped without one.
    store
        .queue_settle(
            dlq.clone(),
            QueueSettle {
                dead: vec![dead[0].id.clone()],
                ..QueueSettle::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(store.queue_depth(dlq.clone()).await.unwrap().messages, 0);
    // The delayed message is still there; the other namespace's is its own.
    let depth = store.queue_depth(jobs.clone()).await.unwrap();
    assert_eq!(depth.messages, 1);
    let theirs = store
        .queue_lease(other.clone(), None, now(), now() + 1000, 10)
        .await
        .unwrap();
    assert_eq!(bodies(&theirs), ["theirs"]);

    // The owner epoch: a lease fenced with the epoch a node took passes;
    // once another node took the queue, the first one's leases are refused
    // and take nothing.
    let fenced = QueueScope::new("team-f", "fenced");
    store
        .queue_send(fenced.clone(), vec![send("f1", 0), send("f2", 0)], true)
        .await
        .unwrap();
    let first = store
        .queue_take(fenced.clone(), "node-a".into())
        .await
        .unwrap();
    let leased = store
        .queue_lease(fenced.clone(), Some(first), now(), now() + 60_000, 1)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let second = store
        .queue_take(fenced.clone(), "node-b".into())
        .await
        .unwrap();
    assert!(second > first);
    let error = store
        .queue_lease(fenced.clone(), Some(first), now(), now() + 60_000, 1)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            StoreError::Queue(isolane_storage::QueueError::Fenced { .. })
        ),
        "{error:?}"
    );
    // The message the first owner leased was released as the second took
    // the queue: it is leased again at once, not after its lease.
    let leased = store
        .queue_lease(fenced.clone(), Some(second), now(), now() + 60_000, 10)
        .await
        .unwrap();
    let mut got = bodies(&leased);
    got.sort();
    assert_eq!(got, ["f1", "f2"]);
    let f1 = leased.iter().find(|m| m.body == b"f1").unwrap().clone();
    assert_eq!(f1.attempts, 2, "f1 delivered again");
    // The first owner's late settle cannot make the message the second
    // holds visible again (its retry is not applied); the second's own
    // retry is.
    let retry_under = |fence: i64| {
        let (store, scope, id) = (store.clone(), fenced.clone(), f1.id.clone());
        async move {
            let retried = QueueSettle {
                retried: vec![(id, now())],
                fence: Some(fence),
                ..QueueSettle::default()
            };
            store.queue_settle(scope.clone(), retried).await.unwrap();
            let again = store
                .queue_lease(scope, Some(second), now(), now() + 60_000, 10)
                .await
                .unwrap();
            bodies(&again)
        }
    };
    assert!(retry_under(first).await.is_empty());
    assert_eq!(retry_under(second).await, ["f1"]);

    // Refused batches write nothing.
    let too_many: Vec<_> = (0..101).map(|_| send("x", 0)).collect();
    let error = store
        .queue_send(jobs.clone(), too_many, true)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "batch message count of 101 exceeds limit of 100"
    );
    assert_eq!(store.queue_depth(jobs.clone()).await.unwrap().messages, 1);

    // The quota: 1 more message fits in team-a (it holds 1 of 2).
    let bounded = store.with_queue_quota(QueueQuota {
        messages: 2,
        bytes: 1_000_000,
    });
    bounded
        .queue_send(jobs.clone(), vec![send("fits", 0)], false)
        .await
        .unwrap();
    let error = bounded
        .queue_send(jobs.clone(), vec![send("over", 0)], false)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            StoreError::Queue(isolane_storage::QueueError::QuotaExceeded { messages: 2, .. })
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with("Storage Limit Exceeded"),
        "{error}"
    );
    // Another namespace has its own.
    bounded
        .queue_send(QueueScope::new("team-c", "jobs"), vec![send("c", 0)], false)
        .await
        .unwrap();
}

/// Messages kept past the retention go, whatever their state (ready,
/// delayed, leased); a store without a retention keeps them.
async fn retention(store: Store) {
    let scope = QueueScope::new("team-r", "old");
    let two = vec![send("a", 0), send("b", 0)];
    store.queue_send(scope.clone(), two, true).await.unwrap();
    store
        .queue_send(scope.clone(), vec![send("c", 60)], false)
        .await
        .unwrap();
    let t = now();
    let leased = store
        .queue_lease(scope.clone(), None, t, t + 60_000, 1)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(
        store
            .queue_expire(scope.clone(), t + 120_000)
            .await
            .unwrap(),
        0
    );
    let kept = store.with_queue_retention(std::time::Duration::from_secs(10));
    // Within the retention: kept.
    assert_eq!(
        kept.queue_expire(scope.clone(), t + 1_000).await.unwrap(),
        0
    );
    assert_eq!(kept.queue_depth(scope.clone()).await.unwrap().messages, 3);
    // Past it: all three, the leased and the delayed one too.
    assert_eq!(
        kept.queue_expire(scope.clone(), t + 20_000).await.unwrap(),
        3
    );
    assert_eq!(kept.queue_depth(scope.clone()).await.unwrap().messages, 0);
    // The namespace's usage went down with them.
    let quota = QueueQuota {
        messages: 1,
        bytes: 1 << 20,
    };
    let bounded = kept.with_queue_quota(quota);
    bounded
        .queue_send(scope, vec![send("d", 0)], false)
        .await
        .unwrap();
}

#[tokio::test]
async fn queues_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    scenario(Store::sqlite(dir.path())).await;
    retention(Store::sqlite(dir.path())).await;
    // Kept across opens (a restart of `isolane dev`).
    let store = Store::sqlite(dir.path());
    let depth = store
        .queue_depth(QueueScope::new("team-a", "jobs"))
        .await
        .unwrap();
    assert_eq!(depth.messages, 2);
}

#[tokio::test]
async fn queues_on_a_real_postgresql() {
    let server = Postgres::start().unwrap();
    let settings = PostgresSettings::new(server.connection_string());
    isolane_storage::migrate(&settings).await.unwrap();
    scenario(Store::postgres(&settings).unwrap()).await;
    retention(Store::postgres(&settings).unwrap()).await;
    // Two processes leasing at once never take the same message.
    let store = Store::postgres(&settings).unwrap();
    let scope = QueueScope::new("team-z", "race");
    let batch: Vec<_> = (0..100).map(|i| send(&i.to_string(), 0)).collect();
    store.queue_send(scope.clone(), batch, true).await.unwrap();
    let other = Store::postgres(&settings).unwrap();
    let t = now();
    let (one, two) = tokio::join!(
        store.queue_lease(scope.clone(), None, t, t + 60_000, 60),
        other.queue_lease(scope.clone(), None, t, t + 60_000, 60)
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one.len() + two.len(), 100);
    let mut ids: Vec<_> = one.iter().chain(&two).map(|m| m.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 100);
    another_process_s_send_wakes_the_owner(&settings).await;
}

/// The owner waits on its queue's wake-ups; another process's send wakes
/// it (PostgreSQL's `NOTIFY`). That its own sends and other queues' do not
/// is `listen.rs`'s unit test.
async fn another_process_s_send_wakes_the_owner(settings: &PostgresSettings) {
    let (owner, sender) = (
        Store::postgres(settings).unwrap(),
        Store::postgres(settings).unwrap(),
    );
    let scope = QueueScope::new("team-w", "woken");
    let mut woken = owner.queue_wakes(&scope).expect("PostgreSQL tells sends");
    let within = std::time::Duration::from_secs(30);
    // Listening: once the connection is up, every queue waited on is woken
    // once (it says what was sent before it listened).
    tokio::time::timeout(within, woken.changed())
        .await
        .expect("the listening connection is made")
        .unwrap();
    woken.mark_unchanged();
    let sends = [
        (&owner, scope.clone(), "own"),
        (&sender, QueueScope::new("team-w", "other"), "x"),
        (&sender, QueueScope::new("team-v", "woken"), "x"),
        (&sender, scope.clone(), "theirs"),
    ];
    for (by, to, body) in sends {
        by.queue_send(to, vec![send(body, 0)], false).await.unwrap();
    }
    tokio::time::timeout(within, woken.changed())
        .await
        .expect("another process's send wakes the owner")
        .unwrap();
    // A hint only: the owner finds both messages by looking.
    let depth = owner.queue_depth(scope.clone()).await.unwrap();
    assert_eq!(depth.messages, 2);
}
