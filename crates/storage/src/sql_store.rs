//! [`Store`]'s operations on SQLite-backed Durable Objects' logs
//! (`sql`): each object's records in order, and an append fenced by the
//! owner epoch and held to the namespace's and the object's bounds as the
//! key-value writes are (a record's bytes count as stored bytes).

use crate::durable::{ObjectScope, SqlAppend, WriteQuota};
use crate::{Backend, Store, StoreData, StoreError, StoreOp, blocking};

impl Store {
    /// The bytes one object may store ([`Store::with_object_quota`]).
    pub fn object_quota(&self) -> Option<u64> {
        self.object_quota
    }

    /// Object `scope`'s SQL log, its records in order.
    pub async fn sql_log(&self, scope: ObjectScope) -> Result<Vec<Vec<u8>>, StoreError> {
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Object)?;
        let records = match &self.backend {
            Backend::Sqlite(folder) => blocking(folder, move |db, _| db.sql_log(&scope)).await,
            Backend::Postgres(db) => db.sql_log(scope).await,
        }?;
        let bytes = records.iter().map(Vec::len).sum();
        self.observer
            .tell(&namespace, StoreData::Object, StoreOp::Read, bytes);
        Ok(records)
    }

    /// Appends `append` to object `scope`'s SQL log, atomically: refused
    /// (and nothing written) when the instance is fenced, or when the
    /// record grows what the namespace or the object stores past its bound.
    pub async fn sql_append(
        &self,
        scope: ObjectScope,
        append: SqlAppend,
    ) -> Result<(), StoreError> {
        let quota = WriteQuota {
            namespace: self.quota,
            object: self.object_quota,
        };
        let namespace = scope.namespace.clone();
        self.admit_op(&namespace, StoreData::Object)?;
        let bytes = append.record.len();
        match &self.backend {
            Backend::Sqlite(folder) => {
                blocking(folder, move |db, _| db.sql_append(&scope, &append, quota)).await
            }
            Backend::Postgres(db) => db.sql_append(scope, append, quota).await,
        }
        .inspect_err(|e| self.observer.refused_by(&namespace, StoreData::Object, e))?;
        self.observer
            .tell(&namespace, StoreData::Object, StoreOp::Write, bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(record: &[u8], snapshot: bool, fence: Option<i64>) -> SqlAppend {
        SqlAppend {
            record: record.to_vec(),
            snapshot,
            fence,
        }
    }

    #[tokio::test]
    async fn a_log_keeps_its_order_drops_what_a_snapshot_replaces_and_is_fenced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path()).with_object_quota(100);
        let scope = ObjectScope::new("ns", "w/Chat", "1");
        let other = ObjectScope::new("ns", "w/Chat", "2");
        let epoch = store.take_object(scope.clone(), "a".into()).await.unwrap();
        for record in [b"one", b"two"] {
            let next = append(record, false, Some(epoch));
            store.sql_append(scope.clone(), next).await.unwrap();
        }
        assert_eq!(
            store.sql_log(scope.clone()).await.unwrap(),
            [b"one", b"two"]
        );
        assert!(store.sql_log(other).await.unwrap().is_empty());
        let snapshot = append(b"whole", true, Some(epoch));
        store.sql_append(scope.clone(), snapshot).await.unwrap();
        assert_eq!(store.sql_log(scope.clone()).await.unwrap(), [b"whole"]);
        let error = store
            .sql_append(scope.clone(), append(&[0; 101], false, Some(epoch)))
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("storage limit of 100 bytes"),
            "{error}"
        );
        let newer = store.take_object(scope.clone(), "b".into()).await.unwrap();
        let error = store
            .sql_append(scope.clone(), append(b"stale", false, Some(epoch)))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no longer its owner"), "{error}");
        let next = append(b"three", false, Some(newer));
        store.sql_append(scope.clone(), next).await.unwrap();
        assert_eq!(
            store.sql_log(scope).await.unwrap(),
            [&b"whole"[..], b"three"]
        );
    }
}
