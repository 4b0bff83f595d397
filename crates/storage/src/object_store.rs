//! [`Store`]'s Durable Object operations, on either backend (beside
//! `durable`, which only names what they take, so that `durable` and the
//! store's error type do not import each other).

use crate::durable::{ObjectList, ObjectScope, ObjectWrite, WriteQuota, limits};
use crate::{Backend, Store, StoreData, StoreError, StoreOp, blocking};

impl Store {
    /// The values of `keys` (`None` where there is none), in order.
    pub async fn object_get(
        &self,
        scope: ObjectScope,
        keys: Vec<String>,
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        limits::check_count(keys.len())?;
        for key in &keys {
            limits::check_key(key)?;
        }
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Object)?;
        let values = match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.object_get(&scope, &keys)).await
            }
            Backend::Postgres(db) => db.object_get(scope, keys).await,
        }?;
        let bytes = values.iter().flatten().map(Vec::len).sum();
        self.observer
            .tell(&namespace, StoreData::Object, StoreOp::Read, bytes);
        Ok(values)
    }

    /// Applies `write` atomically (checked first: a refused write writes
    /// nothing); the namespace quota ([`Store::with_namespace_quota`])
    /// refuses a write that grows what the namespace stores past it, the
    /// object limit ([`Store::with_object_quota`]) one that grows what the
    /// object stores past it.
    pub async fn object_write(
        &self,
        scope: ObjectScope,
        write: ObjectWrite,
    ) -> Result<(), StoreError> {
        write.check()?;
        let quota = WriteQuota {
            namespace: self.quota,
            object: self.object_quota,
        };
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Object)?;
        let bytes = write
            .entries
            .iter()
            .map(|(key, value)| key.len() + value.as_ref().map_or(0, Vec::len))
            .sum();
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.object_write(&scope, &write, quota)).await
            }
            Backend::Postgres(db) => db.object_write(scope, write, quota).await,
        }
        .inspect_err(|e| self.observer.refused_by(&namespace, StoreData::Object, e))?;
        self.observer
            .tell(&namespace, StoreData::Object, StoreOp::Write, bytes);
        Ok(())
    }

    /// Takes object `scope` for a new instance of it, run by `owner` (a
    /// name for logs): increments its owner epoch and returns it. From then
    /// on a write fenced with an older epoch is refused, so an instance
    /// that another has replaced cannot write.
    pub async fn take_object(&self, scope: ObjectScope, owner: String) -> Result<i64, StoreError> {
        self.admit_op(&scope.namespace, StoreData::Object)?;
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.object_take(&scope, &owner)).await
            }
            Backend::Postgres(db) => db.object_take(scope, owner).await,
        }
    }

    /// The entries `options` asks for, in key order (descending when
    /// `reverse`).
    pub async fn object_list(
        &self,
        scope: ObjectScope,
        options: ObjectList,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Object)?;
        let entries = match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.object_list(&scope, &options)).await
            }
            Backend::Postgres(db) => db.object_list(scope, options).await,
        }?;
        let bytes = entries.iter().map(|(k, v)| k.len() + v.len()).sum();
        self.observer
            .tell(&namespace, StoreData::Object, StoreOp::List, bytes);
        Ok(entries)
    }
}

/// Stored rows as listed entries; a key that is not UTF-8 means the store
/// holds what this crate did not write.
pub(crate) fn entries(rows: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    rows.into_iter()
        .map(|(key, value)| {
            String::from_utf8(key)
                .map(|key| (key, value))
                .map_err(|_| StoreError::Corrupt)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(entries: &[(&str, Option<&str>)]) -> ObjectWrite {
        ObjectWrite {
            delete_all: false,
            fence: None,
            entries: entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.map(|v| v.as_bytes().to_vec())))
                .collect(),
        }
    }

    #[tokio::test]
    async fn objects_keep_their_keys_apart_and_list_in_byte_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let a = ObjectScope::new("team-a", "Counter", "1");
        let other_ns = ObjectScope::new("team-b", "Counter", "1");
        let puts = write(&[("b", Some("2")), ("a", Some("1")), ("c", Some("3"))]);
        store.object_write(a.clone(), puts).await.unwrap();
        let got = store
            .object_get(other_ns.clone(), vec!["a".into()])
            .await
            .unwrap();
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
        let listed = store.object_list(a.clone(), options).await.unwrap();
        let keys: Vec<_> = listed.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c", "b"]);
        let clear = ObjectWrite {
            delete_all: true,
            fence: None,
            entries: vec![("d".into(), Some(b"4".to_vec()))],
        };
        store.object_write(a.clone(), clear).await.unwrap();
        let listed = store.object_list(a, ObjectList::default()).await.unwrap();
        assert_eq!(listed, vec![("d".to_string(), b"4".to_vec())]);
    }

    #[tokio::test]
    async fn a_stale_owners_write_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let scope = ObjectScope::new("ns", "w/C", "1");
        let fenced = |value: &str, epoch: i64| ObjectWrite {
            fence: Some(epoch),
            ..write(&[("n", Some(value))])
        };
        let old = store.take_object(scope.clone(), "a".into()).await.unwrap();
        store
            .object_write(scope.clone(), fenced("1", old))
            .await
            .unwrap();
        let new = store.take_object(scope.clone(), "b".into()).await.unwrap();
        assert_eq!((old, new), (1, 2));
        let error = store
            .object_write(scope.clone(), fenced("stale", old))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no longer its owner"), "{error}");
        let got = store.object_get(scope.clone(), vec!["n".into()]).await;
        assert_eq!(got.unwrap(), vec![Some(b"1".to_vec())]);
        store
            .object_write(scope.clone(), fenced("2", new))
            .await
            .unwrap();
        // Unfenced writes (no owner in play) still go through.
        store
            .object_write(scope, write(&[("m", Some("x"))]))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_quota_refuses_growth_and_lets_shrinking_through() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path()).with_namespace_quota(10);
        let scope = ObjectScope::new("ns", "C", "1");
        store
            .object_write(scope.clone(), write(&[("k", Some("12345678"))]))
            .await
            .unwrap();
        let error = store
            .object_write(scope.clone(), write(&[("k2", Some("1")), ("k", None)]))
            .await;
        assert!(error.is_ok(), "shrinks overall: {error:?}");
        let error = store
            .object_write(scope.clone(), write(&[("big", Some("123456789"))]))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("quota of 10 bytes"), "{error}");
        let got = store.object_get(scope, vec!["big".into()]).await.unwrap();
        assert_eq!(got, vec![None], "a refused write writes nothing");
    }

    #[tokio::test]
    async fn one_object_is_held_to_its_limit_and_its_neighbours_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path()).with_object_quota(20);
        let (full, other) = (
            ObjectScope::new("ns", "w/C", "1"),
            ObjectScope::new("ns", "w/C", "2"),
        );
        let fill = write(&[("a", Some("123456789")), ("b", Some("123456789"))]);
        store.object_write(full.clone(), fill).await.unwrap();
        let error = store
            .object_write(full.clone(), write(&[("c", Some("12"))]))
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("this object's storage limit of 20 bytes"),
            "{error}"
        );
        let got = store.object_get(full.clone(), vec!["c".into()]).await;
        assert_eq!(got.unwrap(), vec![None], "a refused write writes nothing");
        // Another object of the same class and namespace has its own room.
        let room = write(&[("a", Some("123456789")), ("b", Some("123456789"))]);
        store.object_write(other.clone(), room).await.unwrap();
        // Shrinking, then growing within what was freed; deleteAll frees all.
        store
            .object_write(full.clone(), write(&[("a", None), ("c", Some("1234567"))]))
            .await
            .unwrap();
        let clear = ObjectWrite {
            delete_all: true,
            ..write(&[("d", Some(&"x".repeat(19)))])
        };
        store.object_write(full.clone(), clear).await.unwrap();
        let listed = store
            .object_list(full, ObjectList::default())
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
    }

    #[tokio::test]
    async fn a_stale_owner_cannot_set_or_delete_the_alarm() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let scope = ObjectScope::new("ns", "w/C", "1");
        let old = store.take_object(scope.clone(), "a".into()).await.unwrap();
        store
            .set_object_alarm_fenced(scope.clone(), Some(10), Some(old))
            .await
            .unwrap();
        let new = store.take_object(scope.clone(), "b".into()).await.unwrap();
        for at in [Some(20), None] {
            let error = store
                .set_object_alarm_fenced(scope.clone(), at, Some(old))
                .await
                .unwrap_err();
            assert!(error.to_string().contains("no longer its owner"), "{error}");
            assert_eq!(store.object_alarm(scope.clone()).await.unwrap(), Some(10));
        }
        store
            .set_object_alarm_fenced(scope.clone(), None, Some(new))
            .await
            .unwrap();
        assert_eq!(store.object_alarm(scope).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_namespace_past_its_operations_is_refused_and_another_is_not() {
        const RATE: u32 = 20;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path()).with_namespace_ops(RATE);
        let (noisy, calm) = (
            ObjectScope::new("noisy", "w/C", "1"),
            ObjectScope::new("calm", "w/C", "1"),
        );
        let started = std::time::Instant::now();
        let mut through = 0;
        let mut refused = 0;
        for _ in 0..100 {
            match store.object_get(noisy.clone(), vec!["k".into()]).await {
                Ok(_) => through += 1,
                Err(error) => {
                    assert!(
                        matches!(error, StoreError::Throttled { per_second: RATE }),
                        "{error}"
                    );
                    refused += 1;
                }
            }
        }
        let refilled = (started.elapsed().as_secs_f64() * f64::from(RATE)).ceil() as u32;
        assert!(
            through <= RATE + refilled,
            "{through} in {:?}",
            started.elapsed()
        );
        assert!(refused > 0, "{through} in {:?}", started.elapsed());
        // The other namespace's bucket is whole.
        for _ in 0..RATE {
            store
                .object_get(calm.clone(), vec!["k".into()])
                .await
                .unwrap();
        }
    }
}
