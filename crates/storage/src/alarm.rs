//! [`Store`]'s Durable Object alarms (`storage.setAlarm` and the `alarm()`
//! handler's deliveries), on either backend.
//!
//! One alarm per object: a row (`do_alarm`) with its time, how many times
//! its handler has failed, and a claim. A process delivering alarms claims
//! the due ones ([`Store::claim_due_alarms`]): a claimed alarm is not handed
//! to another process until the claim runs out, so one process at a time
//! delivers a given alarm, and a process that dies holding a claim only
//! delays the alarm by the claim's length. After a delivery the process
//! settles the alarm ([`Store::alarm_done`], [`Store::alarm_failed`]), or
//! gives it back when it does not deliver it ([`Store::release_alarm`]);
//! setting the alarm again (even from the handler) clears the claim and
//! the failure count, and a settle for the old time then changes nothing.

use crate::durable::ObjectScope;
use crate::{Backend, Store, StoreError, blocking};

/// How many times a failing `alarm()` is retried before the alarm is
/// dropped (workerd's number).
pub const MAX_ALARM_RETRIES: u32 = 6;

/// What one look at the store may claim ([`Store::claim_due_alarms`]).
///
/// Alarms are shared between Kubernetes namespaces: a look takes at most
/// `per_namespace` alarms of one namespace, none of a namespace in `skip`
/// (the caller's namespaces that already have their share under way), and
/// takes each namespace's soonest alarm before any namespace's second. So a
/// namespace with thousands of overdue alarms holds at most its share of
/// the deliveries, and another namespace's alarm is claimed at the next
/// look that has room, whatever the backlog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlarmClaim {
    /// Alarms claimed at most.
    pub limit: u32,
    /// Alarms of one namespace claimed at most.
    pub per_namespace: u32,
    /// Namespaces none of whose alarms are claimed.
    pub skip: Vec<String>,
}

/// Up to `limit` alarms, with no share per namespace.
impl From<u32> for AlarmClaim {
    fn from(limit: u32) -> Self {
        Self {
            limit,
            per_namespace: limit,
            skip: Vec::new(),
        }
    }
}

/// A due alarm this process claimed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueAlarm {
    pub scope: ObjectScope,
    /// When it was set for, in milliseconds since the Unix epoch.
    pub at: i64,
    /// How many deliveries of it failed so far (`alarmInfo.retryCount`).
    pub retries: u32,
}

impl Store {
    /// The object's alarm, in milliseconds since the Unix epoch.
    pub async fn object_alarm(&self, scope: ObjectScope) -> Result<Option<i64>, StoreError> {
        self.admit_op(&scope.namespace, crate::StoreData::Object)?;
        match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, move |db, _| db.object_alarm(&scope)).await,
            Backend::Postgres(db) => db.object_alarm(scope).await,
        }
    }

    /// Sets the object's alarm to `at` (ms since the epoch), unclaimed and
    /// with no failures, or deletes it; unfenced (see
    /// [`Store::set_object_alarm_fenced`]).
    pub async fn set_object_alarm(
        &self,
        scope: ObjectScope,
        at: Option<i64>,
    ) -> Result<(), StoreError> {
        self.set_object_alarm_fenced(scope, at, None).await
    }

    /// [`Store::set_object_alarm`] by the instance that took the object
    /// with epoch `fence` ([`Store::take_object`]): refused
    /// ([`crate::ObjectError::Fenced`]), changing nothing, once another
    /// instance has taken it.
    pub async fn set_object_alarm_fenced(
        &self,
        scope: ObjectScope,
        at: Option<i64>,
        fence: Option<i64>,
    ) -> Result<(), StoreError> {
        self.admit_op(&scope.namespace, crate::StoreData::Object)?;
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.set_object_alarm(&scope, at, fence)).await
            }
            Backend::Postgres(db) => db.set_object_alarm(scope, at, fence).await,
        }
    }

    /// Resolves when this process next fails or gives back an alarm (or
    /// at once, if it did since the last call). Setting one does not wake
    /// the loop: an alarm set for now would then be delivered while the
    /// request that set it still runs (e2e durable_objects saw `getAlarm()`
    /// answer null right after `setAlarm(now)`); it is seen at the next look.
    pub async fn alarm_changed(&self) {
        self.alarms_changed.notified().await;
    }

    /// The earliest time (ms) at which some alarm can be claimed: its time,
    /// or the end of the claim that holds it. `None`: no alarm at all.
    pub async fn next_alarm_at(&self) -> Result<Option<i64>, StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, |db, _| db.next_alarm_at()).await,
            Backend::Postgres(db) => db.next_alarm_at().await,
        }
    }

    /// Claims alarms due at `now` (ms) that no live claim holds, until
    /// `until` (ms): as many as `claim` lets (a number: that many), each
    /// namespace's soonest first.
    pub async fn claim_due_alarms(
        &self,
        now: i64,
        until: i64,
        claim: impl Into<AlarmClaim>,
    ) -> Result<Vec<DueAlarm>, StoreError> {
        let claim = claim.into();
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.claim_due_alarms(now, until, &claim)).await
            }
            Backend::Postgres(db) => db.claim_due_alarms(now, until, claim).await,
        }
    }

    /// Deletes every alarm of the objects of Worker `worker` of Kubernetes
    /// namespace `namespace` (the Worker was deleted: nothing would deliver
    /// them); answers how many there were. Their storage stays.
    pub async fn delete_worker_alarms(
        &self,
        namespace: &str,
        worker: &str,
    ) -> Result<u64, StoreError> {
        // Classes are stored as `<worker>/<class>` (`ObjectScope::class`).
        let prefix = format!("{worker}/");
        let namespace = namespace.to_owned();
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| {
                    db.delete_class_prefix_alarms(&namespace, &prefix)
                })
                .await
            }
            Backend::Postgres(db) => db.delete_class_prefix_alarms(namespace, prefix).await,
        }
    }

    /// The delivery of `alarm` succeeded: the alarm is deleted, unless it
    /// was set again meanwhile.
    pub async fn alarm_done(&self, alarm: DueAlarm) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, move |db, _| db.alarm_done(&alarm)).await,
            Backend::Postgres(db) => db.alarm_done(alarm).await,
        }
    }

    /// `alarm` was claimed by a process that does not deliver it (its
    /// Worker runs elsewhere): the claim is given up at once, so the
    /// process that does takes it at its next look.
    pub async fn release_alarm(&self, alarm: DueAlarm) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.release_alarm(&alarm)).await
            }
            Backend::Postgres(db) => db.release_alarm(alarm).await,
        }?;
        self.alarms_changed.notify_one();
        Ok(())
    }

    /// The delivery of `alarm` failed: it is retried from `retry_at` (ms),
    /// or dropped after [`MAX_ALARM_RETRIES`] retries (`true`); nothing
    /// changes when it was set again meanwhile.
    pub async fn alarm_failed(&self, alarm: DueAlarm, retry_at: i64) -> Result<bool, StoreError> {
        let dropped = match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.alarm_failed(&alarm, retry_at)).await
            }
            Backend::Postgres(db) => db.alarm_failed(alarm, retry_at).await,
        }?;
        // Its retry may come before the loop's next look.
        self.alarms_changed.notify_one();
        Ok(dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_next_alarm_is_the_earliest_claimable() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        assert_eq!(store.next_alarm_at().await.unwrap(), None);
        let (a, b) = (
            ObjectScope::new("ns", "w/C", "a"),
            ObjectScope::new("ns", "w/C", "b"),
        );
        store.set_object_alarm(a.clone(), Some(30)).await.unwrap();
        store.set_object_alarm(b.clone(), Some(10)).await.unwrap();
        assert_eq!(store.next_alarm_at().await.unwrap(), Some(10));
        // Claimed until 50: b is claimable again from then, a from 30.
        assert_eq!(store.claim_due_alarms(10, 50, 1).await.unwrap().len(), 1);
        assert_eq!(store.next_alarm_at().await.unwrap(), Some(30));
        store.set_object_alarm(a, None).await.unwrap();
        assert_eq!(store.next_alarm_at().await.unwrap(), Some(50));
    }

    #[tokio::test]
    async fn an_alarm_is_claimed_once_retried_then_dropped_or_kept_when_set_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let scope = ObjectScope::new("ns", "w/C", "1");
        store
            .set_object_alarm(scope.clone(), Some(5))
            .await
            .unwrap();
        assert_eq!(store.object_alarm(scope.clone()).await.unwrap(), Some(5));
        assert!(store.claim_due_alarms(4, 100, 10).await.unwrap().is_empty());
        let due = store.claim_due_alarms(5, 100, 10).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!((due[0].at, due[0].retries), (5, 0));
        assert!(
            store
                .claim_due_alarms(50, 150, 10)
                .await
                .unwrap()
                .is_empty(),
            "a live claim keeps it from another process"
        );
        // A failure puts it off until its retry time, counting.
        let mut alarm = due[0].clone();
        for retry in 1..=MAX_ALARM_RETRIES {
            assert!(!store.alarm_failed(alarm.clone(), 200).await.unwrap());
            assert!(
                store
                    .claim_due_alarms(199, 300, 10)
                    .await
                    .unwrap()
                    .is_empty()
            );
            alarm = store
                .claim_due_alarms(200, 300, 10)
                .await
                .unwrap()
                .remove(0);
            assert_eq!(alarm.retries, retry);
        }
        assert!(store.alarm_failed(alarm, 400).await.unwrap(), "dropped");
        assert_eq!(store.object_alarm(scope.clone()).await.unwrap(), None);
        // Set again during a delivery: the old delivery's end keeps it.
        store
            .set_object_alarm(scope.clone(), Some(7))
            .await
            .unwrap();
        let alarm = store.claim_due_alarms(10, 100, 10).await.unwrap().remove(0);
        store
            .set_object_alarm(scope.clone(), Some(9))
            .await
            .unwrap();
        store.alarm_done(alarm).await.unwrap();
        assert_eq!(store.object_alarm(scope.clone()).await.unwrap(), Some(9));
        let alarm = store.claim_due_alarms(10, 100, 10).await.unwrap().remove(0);
        store.alarm_done(alarm).await.unwrap();
        assert_eq!(store.object_alarm(scope).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_claim_shares_alarms_between_namespaces() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        // A backlog of 20 overdue alarms in one namespace, then one due
        // later in another.
        for i in 0..20 {
            let scope = ObjectScope::new("evil", "w/C", format!("{i:02}"));
            store.set_object_alarm(scope, Some(i)).await.unwrap();
        }
        let good = ObjectScope::new("good", "w/C", "a");
        store
            .set_object_alarm(good.clone(), Some(50))
            .await
            .unwrap();
        // Soonest first alone would take the backlog only.
        let share = |skip: &[&str]| AlarmClaim {
            limit: 5,
            per_namespace: 3,
            skip: skip.iter().map(|ns| (*ns).to_owned()).collect(),
        };
        let claimed = store
            .claim_due_alarms(100, 1_000, share(&[]))
            .await
            .unwrap();
        let count = |ns: &str| claimed.iter().filter(|a| a.scope.namespace == ns).count();
        // Each namespace's soonest alarm first, three of one at most.
        assert_eq!((count("evil"), count("good")), (3, 1));
        // A namespace with its share under way is skipped.
        assert!(
            store
                .claim_due_alarms(100, 1_000, share(&["evil"]))
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .claim_due_alarms(100, 1_000, share(&["good"]))
                .await
                .unwrap()
                .len(),
            3
        );
    }

    #[tokio::test]
    async fn a_deleted_workers_alarms_leave_and_its_neighbours_stay() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let scopes = [
            ObjectScope::new("ns", "shop/Cart", "1"),
            ObjectScope::new("ns", "shop/Order", "2"),
            ObjectScope::new("ns", "shop2/Cart", "1"),
            ObjectScope::new("other", "shop/Cart", "1"),
        ];
        for scope in &scopes {
            store
                .set_object_alarm(scope.clone(), Some(5))
                .await
                .unwrap();
        }
        assert_eq!(store.delete_worker_alarms("ns", "shop").await.unwrap(), 2);
        let left: Vec<_> = store
            .claim_due_alarms(10, 100, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.scope)
            .collect();
        assert_eq!(left.len(), 2);
        assert!(
            left.contains(&scopes[2]) && left.contains(&scopes[3]),
            "{left:?}"
        );
    }
}
