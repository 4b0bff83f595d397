//! D1 databases (`isolane-bindings`' d1 unit): one SQLite database per
//! Kubernetes namespace and database name, run by
//! [`crate::sql::ObjectDatabase`] (the SQL engine, limits and authorizer of
//! SQLite-backed Durable Objects) and kept in the same log, under the
//! object scope `(namespace, "d1", name)`.
//!
//! A process opens each database once ([`Store::d1_open`]): it takes the
//! scope's owner epoch, then rebuilds the file from the log; every Worker
//! thread of the process shares that copy. Statements run on the calling
//! thread with the copy locked; [`Store::d1_flush`] then appends what they
//! committed to the log, fenced by the epoch, one flush at a time so the
//! log keeps the commits' order. A flush that fails (fenced by another
//! process that opened the database since, or past the quota) drops the
//! copy: the next call opens it again from the log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::durable::{ObjectScope, SqlAppend};
use crate::sql::{ObjectDatabase, SqlError};
use crate::{Store, StoreError};

mod migrations;

pub use migrations::{
    MIGRATION_TIME, Migration, MigrationError, is_file_name, is_table_name, leading_number,
    migration_order,
};

/// The class part of a D1 database's object scope: no Durable Object class
/// is named so (theirs are `<worker>/<class>`).
const D1_CLASS: &str = "d1";

/// One open database of this process.
pub struct D1Database {
    scope: ObjectScope,
    epoch: i64,
    db: Mutex<ObjectDatabase>,
    /// Held by the one flush under way.
    flush: tokio::sync::Mutex<()>,
    /// A flush failed: this copy holds commits the log does not.
    broken: AtomicBool,
}

impl std::fmt::Debug for D1Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("D1Database")
            .field("scope", &self.scope)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl D1Database {
    /// The database, for statements run now on this thread; `None` once a
    /// flush failed (the caller opens it again).
    pub fn lock(&self) -> Option<MutexGuard<'_, ObjectDatabase>> {
        if self.broken.load(Ordering::Acquire) {
            return None;
        }
        // A panic while locked left SQLite's state as it was: go on.
        Some(
            self.db
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

type Opening = Arc<tokio::sync::OnceCell<Arc<D1Database>>>;

/// The databases this process has open, by (namespace, name).
#[derive(Debug, Default)]
pub(crate) struct D1Databases {
    open: Mutex<HashMap<(String, String), Opening>>,
}

impl D1Databases {
    fn entry(&self, key: (String, String)) -> Opening {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        open.entry(key).or_default().clone()
    }

    /// Forgets `db`, if it is still the open copy of its database.
    fn forget(&self, db: &Arc<D1Database>) {
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (db.scope.namespace.clone(), db.scope.id.clone());
        let current = open.get(&key).and_then(|cell| cell.get().cloned());
        if current.is_some_and(|current| Arc::ptr_eq(&current, db)) {
            open.remove(&key);
        }
    }
}

impl Store {
    /// Database `name` of Kubernetes namespace `namespace`, opened from its
    /// log on first use in this process (made empty when it has none).
    pub async fn d1_open(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<D1Database>, StoreError> {
        let cell = self.d1.entry((namespace.to_owned(), name.to_owned()));
        let scope = ObjectScope::new(namespace, D1_CLASS, name);
        let db = cell
            .get_or_try_init(|| async {
                let owner = format!("d1 process {}", std::process::id());
                let epoch = self.take_object(scope.clone(), owner).await?;
                let records = self.sql_log(scope.clone()).await?;
                let limit = self.object_quota();
                let opened =
                    tokio::task::spawn_blocking(move || ObjectDatabase::open(&records, limit))
                        .await
                        .map_err(|_| StoreError::Gone)??;
                Ok::<_, StoreError>(Arc::new(D1Database {
                    scope,
                    epoch,
                    db: Mutex::new(opened),
                    flush: tokio::sync::Mutex::new(()),
                    broken: AtomicBool::new(false),
                }))
            })
            .await?;
        if db.broken.load(Ordering::Acquire) {
            self.d1.forget(db);
            return Box::pin(self.d1_open(namespace, name)).await;
        }
        Ok(db.clone())
    }

    /// Drops this process's copy of database `name` of `namespace`, if it
    /// has one: on a cluster, a node that sees the database owned by
    /// another node forgets its copy, so that owning it again later opens
    /// it afresh from the log (the other owner's writes included).
    pub fn d1_close(&self, namespace: &str, name: &str) {
        let mut open = self
            .d1
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        open.remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Drops every copy of this process's: the cluster's ring changed, so
    /// the databases this node owns now are opened afresh from their logs
    /// (a copy kept across the change may miss another owner's writes).
    /// Calls under way keep theirs until they end.
    pub fn d1_close_all(&self) {
        let mut open = self
            .d1
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        open.clear();
    }

    /// Appends what `db` committed since the last flush to its log; once
    /// this returns `Ok`, every commit made before the call is durable.
    pub async fn d1_flush(&self, db: &Arc<D1Database>) -> Result<(), StoreError> {
        let _turn = db.flush.lock().await;
        let taken = match db.lock() {
            Some(mut locked) => locked.take()?,
            None => return Err(StoreError::Sql(SqlError::Reset)),
        };
        let Some((record, snapshot)) = taken else {
            return Ok(());
        };
        let fence = Some(db.epoch);
        let append = SqlAppend {
            record,
            snapshot,
            fence,
        };
        let appended = self.sql_append(db.scope.clone(), append).await;
        if appended.is_err() {
            db.broken.store(true, Ordering::Release);
            self.d1.forget(db);
        }
        appended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{RowSink, SqlValue};

    struct Count(Vec<i64>);

    impl RowSink for Count {
        fn statement(&mut self, _: &[&str]) {
            self.0.clear();
        }
        fn row(&mut self, values: &[SqlValue<'_>]) -> bool {
            if let Some(SqlValue::Integer(n)) = values.first() {
                self.0.push(*n);
            }
            true
        }
    }

    fn run(db: &D1Database, sql: &str) -> Vec<i64> {
        let mut sink = Count(Vec::new());
        let mut locked = db.lock().unwrap();
        locked.exec((sql, &[]), || false, &mut sink).unwrap();
        sink.0
    }

    #[tokio::test]
    async fn a_database_outlives_its_process_is_per_namespace_and_fenced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::sqlite(dir.path());
        let db = store.d1_open("a", "probe").await.unwrap();
        run(&db, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7)");
        store.d1_flush(&db).await.unwrap();
        let same = store.d1_open("a", "probe").await.unwrap();
        assert!(Arc::ptr_eq(&db, &same));
        // Another process (a new store on the same folder) reads the log.
        let other = Store::sqlite(dir.path());
        let reopened = other.d1_open("a", "probe").await.unwrap();
        assert_eq!(run(&reopened, "SELECT x FROM t"), [7]);
        let apart = other.d1_open("b", "probe").await.unwrap();
        let mut sink = Count(Vec::new());
        let error = apart
            .lock()
            .unwrap()
            .exec(("SELECT x FROM t", &[]), || false, &mut sink)
            .unwrap_err();
        assert!(error.to_string().contains("no such table"), "{error}");
        // The first process was fenced by the second's open: its write is
        // refused and its copy dropped.
        run(&db, "INSERT INTO t VALUES (8)");
        let error = store.d1_flush(&db).await.unwrap_err();
        assert!(error.to_string().contains("no longer its owner"), "{error}");
        assert!(db.lock().is_none());
        let fresh = store.d1_open("a", "probe").await.unwrap();
        assert_eq!(run(&fresh, "SELECT x FROM t"), [7]);
        // A closed copy is opened afresh: a third process's write is in.
        let third = Store::sqlite(dir.path());
        let newest = third.d1_open("a", "probe").await.unwrap();
        run(&newest, "INSERT INTO t VALUES (9)");
        third.d1_flush(&newest).await.unwrap();
        assert_eq!(run(&fresh, "SELECT x FROM t ORDER BY x"), [7]);
        store.d1_close("a", "probe");
        let again = store.d1_open("a", "probe").await.unwrap();
        assert!(!Arc::ptr_eq(&fresh, &again));
        assert_eq!(run(&again, "SELECT x FROM t ORDER BY x"), [7, 9]);
        store.d1_close_all();
        let after = store.d1_open("a", "probe").await.unwrap();
        assert!(!Arc::ptr_eq(&again, &after));
    }
}
