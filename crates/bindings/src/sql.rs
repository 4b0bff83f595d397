//! SQLite-backed Durable Objects' `ctx.storage.sql` (`js/34_durable_sql.js`):
//! each live object's database (`isolane_storage::sql::ObjectDatabase`),
//! held by the isolate on the object's thread and run there synchronously,
//! and its log in the node's store.
//!
//! - `sqlOpen` rebuilds an object's database from its log (off this
//!   thread) before the instance's constructor runs; the database belongs
//!   to that instance alone and goes with it (`sqlClose`: evicted or
//!   broken) or with the isolate.
//! - `sqlExec` runs a query's statements on this thread, each row made a
//!   JS value as SQLite steps it (so a huge result is held to the Worker's
//!   memory limit), SQLite stopped every thousand steps if the request's
//!   CPU time is spent or the isolate is ending.
//! - `sqlFlush` hands what was committed since the last flush to the store
//!   as one record, fenced by the instance's owner epoch: the object's
//!   output gate waits for it as for its key-value writes.

pub(crate) mod convert;

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use isolane_engine::api::spawn_op;
use isolane_engine::api::{
    ErrorClass, HostError, HostState, IdMap, Reservation, Settle, Stop, Unit,
};

use crate::object::{store_error as object_store_error, target as object_target};
use isolane_storage::SqlAppend;
use isolane_storage::sql::{ObjectDatabase, SqlError};

/// `ctx.storage.sql`.
pub(crate) fn unit() -> Unit {
    Unit::new("durable_sql")
        .js(&["34_durable_sql.js"])
        .function("sqlOpen", sql_open)
        .function("sqlExec", sql_exec)
        .function("sqlTransaction", sql_transaction)
        .function("sqlSize", sql_size)
        .function("sqlFlush", sql_flush)
        .function("sqlClose", sql_close)
        .state::<SqlState>()
}

/// Each isolate's open databases, by the handle JavaScript holds.
#[derive(Default)]
pub(crate) struct SqlState {
    databases: RefCell<IdMap<ObjectDatabase>>,
    next: Cell<u32>,
}

impl SqlState {
    fn insert(&self, database: ObjectDatabase) -> u32 {
        let handle = self.next.get().wrapping_add(1);
        self.next.set(handle);
        self.databases.borrow_mut().insert(handle, database);
        handle
    }

    /// Runs `work` on database `handle`.
    fn with<T>(
        &self,
        handle: u32,
        work: impl FnOnce(&mut ObjectDatabase) -> Result<T, SqlError>,
    ) -> Result<T, HostError> {
        let mut databases = self.databases.borrow_mut();
        let database = databases.get_mut(&handle).ok_or_else(closed)?;
        work(database).map_err(sql_error)
    }
}

fn state(host: &HostState) -> Result<&SqlState, HostError> {
    host.state::<SqlState>()
        .ok_or_else(|| HostError::type_error("SQL storage is not set up in this isolate"))
}

fn closed() -> HostError {
    HostError::new(
        ErrorClass::Error,
        "This Durable Object's SQL database is closed: its instance was evicted or broken; the next call makes a new one.",
    )
}

fn sql_error(error: SqlError) -> HostError {
    HostError::new(ErrorClass::Error, error.to_string())
}

/// What an op settles with.
enum Settled {
    /// `sqlOpen`: the database, registered in the isolate as it settles.
    Opened(Box<ObjectDatabase>),
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
            Settled::Opened(database) => {
                let host = HostState::get(scope).ok_or(undefined)?;
                let Ok(state) = state(&host) else {
                    return Err(undefined);
                };
                let handle = state.insert(*database);
                Ok(v8::Number::new(scope, f64::from(handle)).into())
            }
        }
    }
}

host_fn! {
/// `sqlOpen(class, id)` → Promise of a handle: the object's database
/// rebuilt from its log (read and written off this thread).
fn sql_open<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = object_target(&host, &class, id).map(|(store, object)| async move {
        let records = match store.sql_log(object).await {
            Ok(records) => records,
            Err(error) => return Settled::Failed(object_store_error(error)),
        };
        let limit = store.object_quota();
        let opened = tokio::task::spawn_blocking(move || ObjectDatabase::open(&records, limit)).await;
        match opened {
            Ok(Ok(database)) => Settled::Opened(Box::new(database)),
            Ok(Err(error)) => Settled::Failed(sql_error(error)),
            Err(_) => Settled::Failed(HostError::new(ErrorClass::Error, "opening the SQL database failed")),
        }
    });
    // Detached, as every op of an object's storage.
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `sqlExec(handle, query, bindings)` → `[columnNames, rows, rowsRead,
/// rowsWritten, pending]`: the query run now; `pending` when a commit
/// waits for `sqlFlush`.
fn sql_exec<'s>(
    scope,
    host: Rc<HostState>,
    handle: u32,
    query: String,
    bindings: v8::Local<'s, v8::Value>,
) -> Result<v8::Local<'s, v8::Value>, HostError> {
    let params = convert::params(scope, bindings)?;
    let stop = Stop::on_thread(host.tripwire(), host.cpu_remaining(host.current()));
    let state = state(&host)?;
    let mut sink = convert::Rows::new(scope);
    let done = state.with(handle, |db| {
        let done = db.exec((&query, &params), move || stop.now(), &mut sink)?;
        Ok((done, db.has_pending()))
    });
    sink.answer(done)
}
}

host_fn! {
/// `sqlTransaction(handle, op)`: 0 opens a `transactionSync` (nested
/// ones too), 1 keeps the innermost, 2 rolls it back, 3 only asks; whether
/// a commit now waits for `sqlFlush`.
fn sql_transaction<'s>(
    scope,
    host: Rc<HostState>,
    handle: u32,
    op: u32,
) -> Result<bool, HostError> {
    let _ = scope;
    state(&host)?.with(handle, |db| {
        match op {
            0 => db.begin()?,
            1 | 2 => db.end(op == 1)?,
            _ => {}
        }
        Ok(db.has_pending())
    })
}
}

host_fn! {
/// `sqlSize(handle)`: bytes the database's pages in use hold.
fn sql_size<'s>(scope, host: Rc<HostState>, handle: u32) -> Result<f64, HostError> {
    let _ = scope;
    // Sizes stay far below 2^53.
    #[allow(clippy::cast_precision_loss)]
    state(&host)?.with(handle, |db| db.size().map(|bytes| bytes as f64))
}
}

host_fn! {
/// `sqlFlush(class, id, handle, epoch)` → Promise: what was committed
/// since the last flush appended to the object's log, refused unless the
/// object's owner epoch is still `epoch`.
fn sql_flush<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    handle: u32,
    epoch: f64,
) -> Option<v8::Local<'s, v8::Promise>> {
    let taken = state(&host).and_then(|state| state.with(handle, ObjectDatabase::take));
    // The record is charged to the Worker's memory until it is written;
    // over the limit the isolate is being terminated.
    let len = taken.as_ref().map_or(0, |t| t.as_ref().map_or(0, |(r, _)| r.len()));
    let Ok(charge) = Reservation::new(host.memory(), len) else {
        return None;
    };
    let early = taken.and_then(|taken| {
        let (store, object) = object_target(&host, &class, id)?;
        Ok(async move {
            let _charge = charge;
            let Some((record, snapshot)) = taken else {
                return Settled::Done;
            };
            // Epochs are small integers, exact in a double.
            #[allow(clippy::cast_possible_truncation)]
            let fence = Some(epoch as i64);
            let append = SqlAppend { record, snapshot, fence };
            match store.sql_append(object, append).await {
                Ok(()) => Settled::Done,
                Err(error) => Settled::Failed(object_store_error(error)),
            }
        })
    });
    // Detached, as every op of an object's storage.
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `sqlClose(handle)`: the database goes (its folder with it).
fn sql_close<'s>(scope, host: Rc<HostState>, handle: u32) {
    let _ = scope;
    if let Ok(state) = state(&host) {
        state.databases.borrow_mut().remove(&handle);
    }
}
}
