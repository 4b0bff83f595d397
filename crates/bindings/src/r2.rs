//! R2 buckets (`{name, r2Bucket: {bucket}}`, wrangler's `[[r2_buckets]]`):
//! `env.NAME.head/get/put/delete/list` and multipart uploads
//! (`js/38_r2.js`), on the store's buckets (`isolane_storage::r2`).
//!
//! JavaScript names a binding, never a bucket: the host finds the bucket in
//! the Worker's bundle and the Kubernetes namespace in its id. Bodies
//! stream both ways a chunk at a time through a slot (a handle the request
//! owns, dropped with it): `r2Begin` opens a new body that `r2Write`
//! appends to and `r2Op`'s `put`/`part` store; `r2Open` opens a stored
//! body that `r2Read` reads a range of. A chunk being written counts
//! against the Worker's memory budget from when it is copied out of V8
//! until it is written; a chunk read (at most 1 MiB) from before it is
//! read until JavaScript has it, then as its ArrayBuffer. Every
//! file operation runs on tokio's blocking pool, never on this thread.
//! Answers are `[0, json]` or `[code, message]`; the JavaScript throws
//! R2's errors (`put: … (10020)`).

use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use isolane_storage::r2::{
    R2Bucket, R2Conditional, R2Error, R2ListOptions, R2PutOptions, R2Read, R2Upload,
};

use isolane_engine::api::{ErrorClass, HostError, HostState, Owner, Reservation, Settle};
use isolane_engine::api::{Unit, js_string, spawn_op, u8_array};

/// The most bytes one `r2Read` answers.
const MAX_READ: usize = 1 << 20;

/// `env.NAME` for an R2 binding.
pub(crate) fn unit() -> Unit {
    Unit::new("r2")
        .js(&["38_r2.js"])
        .function("r2Slot", r2_slot)
        .function("r2Op", r2_op)
        .function("r2Begin", r2_begin)
        .function("r2Write", r2_write)
        .function("r2Open", r2_open)
        .function("r2Read", r2_read)
        .state::<R2State>()
}

/// Bytes read between two collections of the isolate's garbage (see
/// `r2_read`).
const COLLECT_EVERY: usize = 16 << 20;

/// The unit's per-isolate state: bytes read since the last collection.
#[derive(Default)]
struct R2State {
    read: std::cell::Cell<usize>,
}

/// What a slot holds: nothing yet, a body being written, or one being
/// read.
#[derive(Default)]
enum Content {
    #[default]
    Empty,
    Write(R2Upload),
    Read(Box<dyn R2Read>),
}

/// A slot's content, shared with the blocking pool's work.
#[derive(Clone, Default)]
struct Slot(Arc<Mutex<Content>>);

impl Slot {
    fn take(&self) -> Content {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn put(&self, content: Content) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = content;
    }
}

/// What an op settles with: `[0, json-or-null]`, `[0, bytes]` (the read
/// chunk, its charge given to the ArrayBuffer) or `[code, message]`.
enum Answer {
    Json(Result<Option<String>, R2Error>),
    Bytes(Result<Vec<u8>, R2Error>, Option<Reservation>),
}

impl Settle for Answer {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
        let (code, value) = match *self {
            Answer::Json(Ok(json)) => {
                let value = match json {
                    Some(json) => js_string(scope, &json).ok_or(undefined)?,
                    None => v8::null(scope).into(),
                };
                (0, value)
            }
            Answer::Bytes(Ok(bytes), charge) => {
                drop(charge);
                // Over the memory limit: the isolate is being terminated.
                (0, u8_array(scope, bytes).ok_or(undefined)?.into())
            }
            Answer::Json(Err(error)) | Answer::Bytes(Err(error), _) => {
                if let R2Error::Internal(why) = &error {
                    tracing::warn!(error = %why, "R2 storage failed");
                }
                (
                    error.code(),
                    js_string(scope, &error.to_string()).ok_or(undefined)?,
                )
            }
        };
        let code = v8::Integer::new_from_unsigned(scope, code).into();
        Ok(v8::Array::new_with_elements(scope, &[code, value]).into())
    }
}

/// The store, namespace and bucket of `binding` for the calling Worker.
fn target(
    host: &HostState,
    binding: &str,
) -> Result<(isolane_storage::Store, String, String), HostError> {
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("R2: no Worker is loaded"))?;
    let bucket = worker
        .r2
        .get(binding)
        .ok_or_else(|| HostError::type_error(format!("R2: no R2 binding {binding}")))?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(ErrorClass::Error, "R2: this node has no store configured")
    })?;
    Ok((store, worker.namespace().to_owned(), bucket.clone()))
}

/// Runs `work` on `binding`'s bucket on the blocking pool; a promise of
/// its answer.
fn on_bucket<'s, T: Send + 'static>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    binding: &str,
    work: impl FnOnce(&dyn R2Bucket) -> Result<T, R2Error> + Send + 'static,
    answer: impl FnOnce(Result<T, R2Error>) -> Answer + 'static,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(host, binding).map(|(store, namespace, bucket)| async move {
        let done = tokio::task::spawn_blocking(move || {
            let bucket = store.r2_bucket(&namespace, &bucket)?;
            work(bucket.as_ref())
        })
        .await
        .unwrap_or_else(|e| Err(R2Error::Internal(e.to_string())));
        answer(done)
    });
    spawn_op(scope, host, early, false)
}

/// Collects the isolate's garbage when `len` more bytes would not fit:
/// what is in the way is most often the chunks of the same body, read
/// and already sent, which V8 has no reason to collect while its heap is
/// small (as the engine's `array_buffer` does before it refuses).
fn collect_if_full(scope: &mut v8::PinScope<'_, '_>, host: &HostState, len: usize) {
    if !host.memory().would_fit(len) {
        scope.low_memory_notification();
    }
}

/// `len` bytes charged to the Worker's memory (refused: the isolate is
/// being terminated at its limit).
fn reserve(host: &HostState, len: usize) -> Result<Reservation, HostError> {
    Reservation::new(host.memory(), len)
        .map_err(|_| HostError::range_error("R2: the chunk does not fit the Worker's memory limit"))
}

/// Runs `work` on a slot's content on the blocking pool.
async fn on_slot<T: Send + 'static>(
    slot: Slot,
    work: impl FnOnce(&mut Content) -> Result<T, R2Error> + Send + 'static,
) -> Result<T, R2Error> {
    tokio::task::spawn_blocking(move || {
        work(&mut slot.0.lock().unwrap_or_else(PoisonError::into_inner))
    })
    .await
    .unwrap_or_else(|e| Err(R2Error::Internal(e.to_string())))
}

/// The slot a handle object names, or `None` with a `TypeError` thrown.
fn slot_or_throw(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    handle: v8::Local<'_, v8::Value>,
) -> Option<Slot> {
    match slot(scope, host, handle) {
        Ok(slot) => Some(slot),
        Err(error) => {
            error.throw(scope);
            None
        }
    }
}

/// JSON from JavaScript, or R2's invalid-argument error.
fn parse<T: for<'de> serde::Deserialize<'de>>(json: &str) -> Result<T, R2Error> {
    serde_json::from_str(json).map_err(|_| R2Error::InvalidArgument)
}

fn to_json(value: &impl serde::Serialize) -> Result<Option<String>, R2Error> {
    serde_json::to_string(value)
        .map(Some)
        .map_err(|e| R2Error::Internal(e.to_string()))
}

/// The slot a handle object names.
fn slot(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    handle: v8::Local<'_, v8::Value>,
) -> Result<Slot, HostError> {
    host.handles()
        .with_handle(scope, handle, |slot: &mut Slot| slot.clone())
        .ok_or_else(|| HostError::type_error("R2: the body is no longer available"))
}

host_fn! {
/// `r2Slot()` → a handle for a body (owned by the calling request).
fn r2_slot<'s>(scope, host: Rc<HostState>) -> Option<v8::Local<'s, v8::Object>> {
    let owner = Owner::request(host.current());
    host.handles().insert_object(scope, Slot::default(), 0, owner)
}
}

host_fn! {
/// `r2Op(binding, op, key, json, handle)` → Promise of `[0, json|null]`
/// or `[code, message]`: `head`, `delete` (json: the keys), `list` (json:
/// the options), `create` (json: the options; answers the upload id),
/// `complete` (json: `{uploadId, parts: [[number, etag]]}`), `abort`
/// (json: the upload id), `put` (json: the options) and `part` (json:
/// `{uploadId, partNumber}`), which store the body in `handle`'s slot
/// (`r2Begin`, `r2Write`); `handle` is null for the others.
fn r2_op<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    op: String,
    key: String,
    json: String,
    handle: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let body = if handle.is_null_or_undefined() {
        None
    } else {
        Some(slot_or_throw(scope, &host, handle)?)
    };
    let work = move |bucket: &dyn R2Bucket| run(bucket, &op, &key, &json, body);
    on_bucket(scope, &host, &binding, work, Answer::Json)
}
}

/// The body a slot holds for writing.
fn upload(body: Option<Slot>) -> Result<R2Upload, R2Error> {
    match body.map(|slot| slot.take()) {
        Some(Content::Write(upload)) => Ok(upload),
        _ => Err(R2Error::Internal("no body was written".into())),
    }
}

/// One of `r2Op`'s operations, on the blocking pool.
fn run(
    bucket: &dyn R2Bucket,
    op: &str,
    key: &str,
    json: &str,
    body: Option<Slot>,
) -> Result<Option<String>, R2Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Complete {
        upload_id: String,
        parts: Vec<(u32, String)>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Part {
        upload_id: String,
        part_number: u32,
    }
    match op {
        "head" => bucket
            .head(key)
            .and_then(|o| o.map_or(Ok(None), |o| to_json(&o))),
        "delete" => bucket.delete(&parse::<Vec<String>>(json)?).map(|()| None),
        "list" => to_json(&bucket.list(&parse::<R2ListOptions>(json)?)?),
        "create" => to_json(&bucket.create_upload(key, &parse::<R2PutOptions>(json)?)?),
        "abort" => bucket
            .abort_upload(key, &parse::<String>(json)?)
            .map(|()| None),
        "complete" => {
            let complete: Complete = parse(json)?;
            to_json(&bucket.complete_upload(key, &complete.upload_id, &complete.parts)?)
        }
        "put" => {
            let options: R2PutOptions = parse(json)?;
            match bucket.put(key, upload(body)?, &options)? {
                Some(object) => to_json(&object),
                None => Ok(None),
            }
        }
        "part" => {
            let part: Part = parse(json)?;
            let etag = bucket.upload_part(key, &part.upload_id, part.part_number, upload(body)?)?;
            to_json(&etag)
        }
        _ => Err(R2Error::Internal(format!("no R2 operation {op}"))),
    }
}

host_fn! {
/// `r2Begin(binding, digestsJson, handle)` → Promise of `[0, null]`: a new
/// body in the slot, digested with `md5` and the fields named.
fn r2_begin<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    digests: String,
    handle: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let slot = slot_or_throw(scope, &host, handle)?;
    let work = move |bucket: &dyn R2Bucket| {
        let upload = bucket.new_body(&parse::<Vec<String>>(&digests)?)?;
        slot.put(Content::Write(upload));
        Ok(None)
    };
    on_bucket(scope, &host, &binding, work, Answer::Json)
}
}

host_fn! {
/// `r2Write(handle, u8)` → Promise of `[0, size]` or `[code, message]`:
/// the bytes appended to the slot's body (100100 past R2's size limit).
fn r2_write<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    chunk: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(chunk) else {
        HostError::type_error("r2Write: the chunk must be a Uint8Array").throw(scope);
        return None;
    };
    let len = view.byte_length();
    collect_if_full(scope, &host, len);
    let early = slot(scope, &host, handle).and_then(|slot| {
        // Over the limit the isolate is being terminated: nothing copied.
        let charge = reserve(&host, len)?;
        let mut bytes = vec![0; len];
        view.copy_contents(&mut bytes);
        let work = move |content: &mut Content| {
            let Content::Write(upload) = content else {
                return Err(R2Error::Internal("no body is being written".into()));
            };
            let written = upload.write(&bytes);
            drop(charge);
            let size = upload.size();
            if written.is_err() {
                // Past the limit: the body is dropped, its file removed.
                *content = Content::Empty;
            }
            written.map(|()| Some(size.to_string()))
        };
        Ok(async move { Answer::Json(on_slot(slot, work).await) })
    });
    spawn_op(scope, &host, early, false)
}
}

host_fn! {
/// `r2Open(binding, key, onlyIfJson, handle)` → Promise of `[0, null]`
/// (none) or `[0, json]` (the object; its body in the slot unless the
/// condition failed, then `{..., "body": false}`).
fn r2_open<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    key: String,
    only_if: Option<String>,
    handle: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let slot = slot_or_throw(scope, &host, handle)?;
    let work = move |bucket: &dyn R2Bucket| {
        let only_if = only_if.as_deref().map(parse::<R2Conditional>).transpose()?;
        let Some((object, body)) = bucket.get(&key, only_if.as_ref())? else {
            return Ok(None);
        };
        let mut json = serde_json::to_value(&object).map_err(|e| R2Error::Internal(e.to_string()))?;
        json["body"] = serde_json::Value::Bool(body.is_some());
        if let Some(body) = body {
            slot.put(Content::Read(body));
        }
        to_json(&json)
    };
    on_bucket(scope, &host, &binding, work, Answer::Json)
}
}

host_fn! {
/// `r2Read(handle, offset, len)` → Promise of `[0, Uint8Array]` (at most
/// 1 MiB; shorter only at the end) or `[code, message]`.
fn r2_read<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    offset: f64,
    len: f64,
) -> Option<v8::Local<'s, v8::Promise>> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (offset, len) = (offset.max(0.0) as u64, (len.max(0.0) as usize).min(MAX_READ));
    // The chunks of a body already sent are garbage V8 sees no reason to
    // collect while its heap is small: left to it, a large object read
    // through a Worker grew the process by the Worker's whole memory
    // limit. Collected every 16 MiB read, they stay a few chunks.
    if let Some(state) = host.state::<R2State>() {
        let read = state.read.get().saturating_add(len);
        if read >= COLLECT_EVERY {
            scope.low_memory_notification();
            state.read.set(0);
        } else {
            state.read.set(read);
        }
    }
    collect_if_full(scope, &host, len);
    let early = slot(scope, &host, handle).and_then(|slot| {
        let charge = reserve(&host, len)?;
        let work = move |content: &mut Content| match content {
            Content::Read(body) => body.read_at(offset, len),
            _ => Err(R2Error::Internal("no body is being read".into())),
        };
        Ok(async move { Answer::Bytes(on_slot(slot, work).await, Some(charge)) })
    });
    spawn_op(scope, &host, early, false)
}
}
