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

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use isolane_engine::api::spawn_op;
use isolane_engine::api::{ErrorClass, HostError, HostState, Settle, Stop, Unit};
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
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("D1: no Worker is loaded"))?;
    let database = worker
        .d1
        .get(binding)
        .ok_or_else(|| HostError::type_error(format!("D1: no D1 binding {binding}")))?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(ErrorClass::Error, "D1: this node has no store configured")
    })?;
    Ok((store, worker.namespace().to_owned(), database.clone()))
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
