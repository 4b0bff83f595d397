//! D1 (`js/36_d1.js`): a Worker's D1 bindings, each a database of its
//! Kubernetes namespace (`isolane_storage::d1`), shared by every thread of
//! the process and kept in the node's store as SQL objects' logs are.
//!
//! - `d1Open` opens the binding's database (its log read off this thread
//!   the first time this process uses it) and keeps it in the isolate.
//! - `d1Query` runs a call's queries on this thread as one transaction,
//!   each row made a JS value as SQLite steps it (so a huge result is held
//!   to the Worker's memory limit), SQLite stopped every thousand steps if
//!   the request's CPU time is spent or the isolate is ending.
//! - `d1Flush` resolves once what the database committed before it is in
//!   the store's log, fenced by the owner epoch this process took.
//!
//! JavaScript names a binding, never a database: the host finds the
//! database in the Worker's bundle and the namespace in its id.
//!
//! On a cluster a database is owned on the ring as a Durable Object is
//! ([`D1Ring`], the engine's `RingClass`): `js/36_d1.js` sends a call to
//! the owner node with `internal.forwardToOwner`, which runs it there.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use isolane_engine::api::spawn_op;
use isolane_engine::api::{ErrorClass, HostError, HostState, RingClass, Settle, Stop, Unit};
use isolane_engine::{WorkerBundle, namespace_of};
use isolane_storage::sql::{ObjectDatabase, SqlError, SqlParam};
use isolane_storage::{D1Database, Store, StoreError};

use crate::sql::convert;

/// `env.NAME` for a D1 binding.
pub(crate) fn unit() -> Unit {
    Unit::new("d1")
        .js(&["36_d1.js"])
        .function("d1Open", d1_open)
        .function("d1Query", d1_query)
        .function("d1Flush", d1_flush)
        .state::<D1State>()
        .ring_class(&D1Ring)
}

/// The class of a D1 database's calls on the ring: a database is an
/// object of this class, its id the database's name. No JavaScript class
/// can be named so.
pub const D1_CLASS: &str = isolane_worker::d1::RING_CLASS;

/// D1 databases on the ring: keyed `<namespace>/#d1/<database>` (every
/// Worker of the namespace reaches the same owner); JavaScript names the
/// binding, sent as its database; a copy owned by another node is closed
/// here; a failed call rejects with the owner node's words (`36_d1.js`
/// adds `D1_ERROR`).
struct D1Ring;

impl RingClass for D1Ring {
    fn class(&self) -> &'static str {
        D1_CLASS
    }

    fn key(&self, worker_id: &str, id: &str) -> String {
        isolane_worker::d1::placement_key(namespace_of(worker_id), id)
    }

    fn resolve<'w>(
        &self,
        worker: Option<&'w Arc<WorkerBundle>>,
        name: &str,
    ) -> Result<(&'w Arc<WorkerBundle>, String), String> {
        database_of(worker, name)
    }

    fn owned_elsewhere(&self, store: &Store, worker: &WorkerBundle, id: &str) {
        store.d1_close(worker.namespace(), id);
    }

    fn failure(&self, error: String) -> String {
        error
    }
}

/// The calling Worker (`None`: none is loaded) and the database of its D1
/// binding `binding`; a `TypeError`'s message when there is none.
fn database_of<'w>(
    worker: Option<&'w Arc<WorkerBundle>>,
    binding: &str,
) -> Result<(&'w Arc<WorkerBundle>, String), String> {
    let worker = worker.ok_or("D1: no Worker is loaded")?;
    let database = worker
        .d1
        .get(binding)
        .ok_or_else(|| format!("D1: no D1 binding {binding}"))?;
    Ok((worker, database.clone()))
}

/// Each isolate's open databases, by binding.
#[derive(Default)]
pub(crate) struct D1State {
    open: RefCell<HashMap<String, Arc<D1Database>>>,
}

fn open_of(host: &HostState, binding: &str) -> Result<Arc<D1Database>, HostError> {
    let state = host
        .state::<D1State>()
        .ok_or_else(|| HostError::type_error("D1 is not set up in this isolate"))?;
    state.open.borrow().get(binding).cloned().ok_or_else(reset)
}

fn reset() -> HostError {
    HostError::new(ErrorClass::Error, SqlError::Reset.to_string())
}

/// The store, namespace and database of `binding` for the calling Worker.
fn target(host: &HostState, binding: &str) -> Result<(Store, String, String), HostError> {
    let (worker, database) = database_of(host.worker(), binding).map_err(HostError::type_error)?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(ErrorClass::Error, "D1: this node has no store configured")
    })?;
    Ok((store, worker.namespace().to_owned(), database))
}

/// The store's failure as the query's message (`36_d1.js` adds `D1_ERROR`).
fn store_error(error: StoreError) -> HostError {
    match error {
        StoreError::Sql(error) => HostError::new(ErrorClass::Error, error.to_string()),
        error @ (StoreError::Object(_) | StoreError::Throttled { .. }) => {
            HostError::new(ErrorClass::Error, error.to_string())
        }
        other => {
            tracing::warn!(error = %other, kind = other.kind(), "D1 storage failed");
            HostError::new(ErrorClass::Error, format!("D1 storage failed: {other}"))
        }
    }
}

fn sql_error(error: SqlError) -> HostError {
    let message = match error {
        SqlError::Full { limit } => {
            format!("Exceeded maximum DB size ({limit} bytes): SQLITE_FULL")
        }
        other => other.to_string(),
    };
    HostError::new(ErrorClass::Error, message)
}

/// What an op settles with.
enum Settled {
    /// `d1Open`: the database, kept in the isolate as it settles.
    Opened(String, Arc<D1Database>),
    Done,
    Failed(HostError),
}

impl Settle for Settled {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
        match *self {
            Settled::Done => Ok(undefined),
            Settled::Failed(error) => Err(error.to_js(scope).ok_or(undefined)?),
            Settled::Opened(binding, db) => {
                let host = HostState::get(scope).ok_or(undefined)?;
                let state = host.state::<D1State>().ok_or(undefined)?;
                state.open.borrow_mut().insert(binding, db);
                Ok(undefined)
            }
        }
    }
}

host_fn! {
/// `d1Open(binding)` → Promise: the binding's database open in this
/// isolate (from the store's log the first time this process uses it).
fn d1_open<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(&host, &binding).map(|(store, namespace, database)| async move {
        match store.d1_open(&namespace, &database).await {
            Ok(db) => Settled::Opened(binding, db),
            Err(error) => Settled::Failed(store_error(error)),
        }
    });
    spawn_op(scope, &host, early, false)
}
}

host_fn! {
/// `d1Flush(binding)` → Promise, resolved once every commit of the
/// database before the call is in the store's log.
fn d1_flush<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(&host, &binding).and_then(|(store, _, _)| {
        let db = open_of(&host, &binding)?;
        Ok(async move {
            match store.d1_flush(&db).await {
                Ok(()) => Settled::Done,
                Err(error) => Settled::Failed(store_error(error)),
            }
        })
    });
    spawn_op(scope, &host, early, false)
}
}

/// `d1Query`'s queries: `[sql, values]` pairs, values as `sqlExec` takes
/// them.
fn queries(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Result<Vec<(String, Vec<SqlParam>)>, HostError> {
    let bad = || HostError::type_error("d1Query: queries must be [sql, values] pairs");
    let array = v8::Local::<v8::Array>::try_from(value).map_err(|_| bad())?;
    let mut out = Vec::with_capacity(array.length() as usize);
    for i in 0..array.length() {
        let pair = array
            .get_index(scope, i)
            .and_then(|p| v8::Local::<v8::Array>::try_from(p).ok())
            .ok_or_else(bad)?;
        let sql = pair.get_index(scope, 0).ok_or_else(bad)?;
        let sql = sql.to_rust_string_lossy(scope);
        let values = pair.get_index(scope, 1).ok_or_else(bad)?;
        out.push((sql, convert::params(scope, values)?));
    }
    Ok(out)
}

/// One query's answer: `[columns, rows, duration, changes, lastRowId,
/// changedDb, sizeAfter, rowsRead, rowsWritten]`.
#[allow(clippy::cast_precision_loss)]
fn one<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    db: &mut ObjectDatabase,
    (sql, params): &(String, Vec<SqlParam>),
) -> Result<v8::Local<'s, v8::Value>, SqlError> {
    let (size_before, (changes_before, row_before)) = (db.size()?, db.counters()?);
    let stop = Stop::on_thread(host.tripwire(), host.cpu_remaining(host.current()));
    let start = Instant::now();
    let mut sink = convert::Rows::new(scope);
    let done = db.exec(
        (sql.as_str(), params.as_slice()),
        move || stop.now(),
        &mut sink,
    )?;
    let duration = start.elapsed().as_secs_f64() * 1000.0;
    let (columns, rows) = sink.into_arrays();
    let (size_after, (changes_after, row_after)) = (db.size()?, db.counters()?);
    let changes = changes_after - changes_before;
    let changed = changes != 0 || row_after != row_before || size_after != size_before;
    let mut all = vec![columns, rows];
    for n in [duration, changes as f64, row_after as f64] {
        all.push(v8::Number::new(scope, n).into());
    }
    all.push(v8::Boolean::new(scope, changed).into());
    for n in [size_after, done.rows_read, done.rows_written] {
        all.push(v8::Number::new(scope, n as f64).into());
    }
    Ok(v8::Array::new_with_elements(scope, &all).into())
}

host_fn! {
/// `d1Query(binding, queries)` → the answers of `queries` (`[sql,
/// values]` pairs), run now on this thread as one transaction: all of
/// them kept, or none when one fails (its error thrown).
fn d1_query<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    queries_value: v8::Local<'s, v8::Value>,
) -> Result<v8::Local<'s, v8::Value>, HostError> {
    let work = queries(scope, queries_value)?;
    let db = open_of(&host, &binding)?;
    let mut locked = db.lock().ok_or_else(reset)?;
    locked.begin().map_err(sql_error)?;
    let mut answers = Vec::with_capacity(work.len());
    for query in &work {
        match one(scope, &host, &mut locked, query) {
            Ok(answer) => answers.push(answer),
            Err(error) => {
                if let Err(rollback) = locked.end(false) {
                    tracing::warn!(error = %rollback, "D1: a failed call's transaction did not roll back");
                }
                return Err(sql_error(error));
            }
        }
    }
    locked.end(true).map_err(sql_error)?;
    Ok(v8::Array::new_with_elements(scope, &answers).into())
}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_keyed_by_namespace_not_worker() {
        assert_eq!(D1Ring.key("team-a/shop", "orders"), "team-a/#d1/orders");
        assert_eq!(
            D1Ring.key("team-a/shop", "orders"),
            D1Ring.key("team-a/admin", "orders")
        );
        assert_ne!(
            D1Ring.key("team-a/shop", "orders"),
            D1Ring.key("team-b/shop", "orders")
        );
    }

    #[test]
    fn a_binding_resolves_to_its_database_or_says_why_not() {
        let mut bundle = WorkerBundle::new("team-a/shop", "1", "");
        bundle.d1.insert("DB".to_owned(), "orders".to_owned());
        let worker = Arc::new(bundle);
        let (found, database) = D1Ring.resolve(Some(&worker), "DB").expect("bound");
        assert!(Arc::ptr_eq(found, &worker));
        assert_eq!(database, "orders");
        let missing = D1Ring.resolve(Some(&worker), "OTHER").map(|(_, db)| db);
        assert_eq!(missing, Err("D1: no D1 binding OTHER".to_owned()));
        let none = D1Ring.resolve(None, "DB").map(|(_, db)| db);
        assert_eq!(none, Err("D1: no Worker is loaded".to_owned()));
    }
}
