//! Workers KV: `env.NAME.get/getWithMetadata/put/delete/list` for a
//! Worker's KV namespace bindings (`js/27_kv.js`), on the node's store
//! (`EngineConfig::store`, `HostState::store`; `isolane-storage`).
//!
//! JavaScript names a binding, never a namespace: the host finds the KV
//! namespace in the Worker's bundle and the Kubernetes namespace in its id,
//! so a Worker reaches only its own namespace's data whatever it passes.
//!
//! Each operation is an op of the calling request (it ends with it) that
//! waits for one of the isolate's [`KV_SLOTS`] and runs on the store's
//! blocking pool, never on this thread. Values count against the Worker's
//! memory while they are outside V8: a value being written from the moment
//! it is copied out until the write is done, a value read from before it is
//! read (the store asks the budget with the value's size first) until it is
//! handed to JavaScript, where its ArrayBuffer is charged instead.

use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use isolane_storage::kv::limits;
use isolane_storage::{KvEntry, KvError, KvList, KvListOptions, KvScope, KvWrite, StoreError};

use isolane_engine::api::{ErrorClass, HostError, KvOp, KvResult, Reservation, Unit};
use isolane_engine::api::{HostState, Settle, Settlement, begin_op, js_string, u8_array};
use isolane_engine::api::{holder, set};

/// KV operations of one isolate in flight at once; more wait their turn
/// (Cloudflare lets a Worker have six connections open at once).
const KV_SLOTS: usize = 6;

/// `env.NAME` for a KV namespace binding.
pub(crate) fn unit() -> Unit {
    Unit::new("kv")
        .js(&["27_kv.js"])
        .function("kvGet", kv_get)
        .function("kvPut", kv_put)
        .function("kvDelete", kv_delete)
        .function("kvList", kv_list)
        .function("kvCheckValue", kv_check_value)
        .state::<KvState>()
}

/// Each isolate's slots for KV operations.
pub(crate) struct KvState {
    slots: Arc<tokio::sync::Semaphore>,
}

impl Default for KvState {
    fn default() -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(KV_SLOTS)),
        }
    }
}

/// What a KV op settles with.
pub(crate) enum Settled {
    /// `kvGet`: the entry (or none), its value still charged to the
    /// budget, and whether the node's cache answered.
    Entry(Option<KvEntry>, Option<Reservation>, bool),
    /// `kvPut`, `kvDelete`.
    Done,
    List(KvList),
    Failed(HostError, KvResult),
}

impl Settled {
    /// How the operation ended, for the observer.
    fn result(&self) -> KvResult {
        match self {
            Settled::Entry(_, _, true) => KvResult::Cached,
            Settled::Entry(..) | Settled::Done | Settled::List(_) => KvResult::Ok,
            Settled::Failed(_, result) => *result,
        }
    }
}

/// A refused operation's error, of the class workerd throws it as.
fn kv_error(error: KvError) -> HostError {
    let class = if error.is_type_error() {
        ErrorClass::Type
    } else {
        ErrorClass::Error
    };
    HostError::new(class, error.to_string())
}

/// The operation as Cloudflare's errors name it (`KV LIST failed: …`).
fn method(op: KvOp) -> &'static str {
    match op {
        KvOp::Get => "GET",
        KvOp::Put => "PUT",
        KvOp::Delete => "DELETE",
        KvOp::List => "LIST",
    }
}

/// What the store's refusal or failure of operation `op` settles with;
/// its message names the operation, as Cloudflare's do.
fn failed(op: KvOp, error: StoreError) -> Settled {
    let op = method(op);
    match error {
        StoreError::Kv(error) => Settled::Failed(kv_error(error), KvResult::Invalid),
        StoreError::Refused { .. } => Settled::Failed(
            HostError::range_error(format!(
                "KV {op} failed: the value does not fit the Worker's memory limit"
            )),
            KvResult::Invalid,
        ),
        // The namespace's own doing (its operations per second): not logged.
        error @ StoreError::Throttled { .. } => Settled::Failed(
            HostError::new(
                ErrorClass::Error,
                format!("KV {op} failed: 429 Too Many Requests ({error})"),
            ),
            KvResult::Invalid,
        ),
        other => {
            tracing::warn!(error = %other, kind = other.kind(), "KV {op} failed");
            let error = HostError::new(ErrorClass::Error, format!("KV {op} failed: {other}"));
            Settled::Failed(error, KvResult::Failed)
        }
    }
}

/// The store and the scope of `binding` for the calling Worker.
fn target(host: &HostState, binding: &str) -> Result<(isolane_storage::Store, KvScope), HostError> {
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("KV: no Worker is loaded"))?;
    let kv = worker
        .kv
        .get(binding)
        .ok_or_else(|| HostError::type_error(format!("KV: no KV namespace binding {binding}")))?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            "KV: this node has no store configured for KV namespaces",
        )
    })?;
    Ok((store, KvScope::new(worker.namespace(), kv.as_str())))
}

/// `null`/`undefined` as `None`, anything else as a number.
fn number(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Option<f64> {
    if value.is_null_or_undefined() {
        return None;
    }
    Some(value.number_value(scope).unwrap_or(f64::NAN))
}

/// Returns a promise for `work`: rejected at once with `early`'s error, or
/// settled when `work` (which waits for one of the isolate's KV slots
/// first) is done.
fn spawn<'s, F>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    kind: KvOp,
    early: Result<F, HostError>,
) -> Option<v8::Local<'s, v8::Promise>>
where
    F: Future<Output = Settled> + 'static,
{
    let (resolver, promise, work) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let slots = host.state::<KvState>()?.slots.clone();
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let observer = host.observer().clone();
    let task = tokio::task::spawn_local(async move {
        let Ok(_slot) = slots.acquire_owned().await else {
            return;
        };
        let settled = work.await;
        observer.kv_operation(kind, settled.result());
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(settled));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}

host_fn! {
/// `kvGet(binding, key, cacheTtl)` → Promise of `null` or `{value, metadata, expiration}`.
fn kv_get<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    key: String,
    cache_ttl: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let cache_ttl = number(scope, cache_ttl);
    let ttl = cache_ttl.and_then(|secs| Duration::try_from_secs_f64(secs).ok());
    let early = limits::check_key("GET", &key)
        .and_then(|()| limits::check_cache_ttl(cache_ttl))
        .map_err(kv_error)
        .and_then(|()| target(&host, &binding))
        .map(|(store, kv)| {
            let memory = host.memory().clone();
            async move {
                // The value is charged before it is read; the charge lives
                // here, so it is given back if this op is dropped.
                let held = Arc::new(Mutex::new(None));
                let admitted = held.clone();
                let admit = move |len: usize| match Reservation::new(&memory, len) {
                    Ok(reservation) => {
                        *admitted.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(reservation);
                        true
                    }
                    Err(_) => false,
                };
                match store.kv_get(kv, key, ttl, admit).await {
                    Ok(read) => {
                        let charge = held.lock().unwrap_or_else(PoisonError::into_inner).take();
                        Settled::Entry(read.entry, charge, read.cached)
                    }
                    Err(error) => failed(KvOp::Get, error),
                }
            }
        });
    spawn(scope, &host, KvOp::Get, early)
}
}

host_fn! {
/// `kvPut(binding, key, u8, metadata, expiration, expirationTtl)` → Promise.
fn kv_put<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    key: String,
    value: v8::Local<'s, v8::Value>,
    metadata: Option<String>,
    expiration: v8::Local<'s, v8::Value>,
    expiration_ttl: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let expiration = number(scope, expiration);
    let expiration_ttl = number(scope, expiration_ttl);
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(value) else {
        HostError::type_error("kvPut: the value must be a Uint8Array").throw(scope);
        return None;
    };
    let len = view.byte_length();
    let early = limits::check_key("PUT", &key)
        .and_then(|()| limits::check_value(len))
        .map_err(kv_error)
        .and_then(|()| target(&host, &binding));
    let early = match early {
        Ok(target) => {
            // The copy is charged until the write is done; over the limit
            // the isolate is being terminated and nothing is copied.
            let Ok(charge) = Reservation::new(host.memory(), len) else {
                return None;
            };
            let mut bytes = vec![0; len];
            view.copy_contents(&mut bytes);
            Ok((target, charge, bytes))
        }
        Err(error) => Err(error),
    };
    let early = early.map(|((store, kv), charge, value)| async move {
        let write = KvWrite {
            key,
            value,
            metadata,
            expiration,
            expiration_ttl,
        };
        let result = store.kv_put(kv, write).await;
        drop(charge);
        match result {
            Ok(()) => Settled::Done,
            Err(error) => failed(KvOp::Put, error),
        }
    });
    spawn(scope, &host, KvOp::Put, early)
}
}

host_fn! {
/// `kvDelete(binding, key)` → Promise.
fn kv_delete<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    key: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = limits::check_key("DELETE", &key)
        .map_err(kv_error)
        .and_then(|()| target(&host, &binding))
        .map(|(store, kv)| async move {
            match store.kv_delete(kv, key).await {
                Ok(()) => Settled::Done,
                Err(error) => failed(KvOp::Delete, error),
            }
        });
    spawn(scope, &host, KvOp::Delete, early)
}
}

host_fn! {
/// `kvList(binding, prefix, limit, cursor)` → Promise of
/// `{keys: [[name, expiration, metadata], …], complete, cursor}`.
fn kv_list<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    prefix: String,
    limit: v8::Local<'s, v8::Value>,
    cursor: Option<String>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let limit = number(scope, limit);
    let early = limits::list_limit(limit)
        .map_err(kv_error)
        .and_then(|limit| Ok((limit, target(&host, &binding)?)))
        .map(|(limit, (store, kv))| async move {
            let options = KvListOptions {
                prefix,
                limit: Some(limit),
                cursor,
            };
            match store.kv_list(kv, options).await {
                Ok(list) => Settled::List(list),
                Err(error) => failed(KvOp::List, error),
            }
        });
    spawn(scope, &host, KvOp::List, early)
}
}

host_fn! {
/// `kvCheckValue(len)`: throws Cloudflare's Error when a value of `len`
/// bytes is over the limit (a streamed `put` asks as it reads).
fn kv_check_value<'s>(scope, len: f64) -> Result<(), HostError> {
    let _ = scope;
    let len = if len >= usize::MAX as f64 { usize::MAX } else { len as usize };
    limits::check_value(len).map_err(kv_error)
}
}

/// The JS value of a settled op (in its settling turn).
fn settled_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    settled: Settled,
) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
    let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
    match settled {
        Settled::Done => Ok(undefined),
        Settled::Failed(error, _) => Err(error.to_js(scope).ok_or(undefined)?),
        Settled::Entry(None, ..) => Ok(v8::null(scope).into()),
        Settled::Entry(Some(entry), charge, _) => {
            // The ArrayBuffer takes over the value's charge.
            drop(charge);
            let value = u8_array(scope, entry.value).ok_or(undefined)?;
            let object = holder(scope);
            set(scope, object, "value", Some(value.into()));
            let metadata = optional_string(scope, entry.metadata.as_deref());
            set(scope, object, "metadata", Some(metadata));
            let expiration = optional_number(scope, entry.expiration);
            set(scope, object, "expiration", Some(expiration));
            Ok(object.into())
        }
        Settled::List(list) => Ok(list_js(scope, list)),
    }
}

fn optional_string<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    s: Option<&str>,
) -> v8::Local<'s, v8::Value> {
    s.and_then(|s| js_string(scope, s))
        .unwrap_or_else(|| v8::null(scope).into())
}

fn optional_number<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    n: Option<u64>,
) -> v8::Local<'s, v8::Value> {
    match n {
        Some(n) => v8::Number::new(scope, n as f64).into(),
        None => v8::null(scope).into(),
    }
}

fn list_js<'s>(scope: &mut v8::PinScope<'s, '_>, list: KvList) -> v8::Local<'s, v8::Value> {
    let keys: Vec<v8::Local<'s, v8::Value>> = list
        .keys
        .iter()
        .map(|key| {
            let name = optional_string(scope, Some(&key.name));
            let expiration = optional_number(scope, key.expiration);
            let metadata = optional_string(scope, key.metadata.as_deref());
            v8::Array::new_with_elements(scope, &[name, expiration, metadata]).into()
        })
        .collect();
    let keys = v8::Array::new_with_elements(scope, &keys).into();
    let object = holder(scope);
    set(scope, object, "keys", Some(keys));
    let complete = v8::Boolean::new(scope, list.list_complete).into();
    set(scope, object, "complete", Some(complete));
    let cursor = optional_string(scope, list.cursor.as_deref());
    set(scope, object, "cursor", Some(cursor));
    object.into()
}

impl Settle for Settled {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        settled_js(scope, *self)
    }
}
