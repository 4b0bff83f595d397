//! Cloudflare Queues' producer: `env.NAME.send(body, options)` and
//! `env.NAME.sendBatch(messages, options)` for a Worker's queue bindings
//! (`js/35_queue.js`, which also makes the consumer's `MessageBatch`), on
//! the node's store (`isolane_storage::Store::queue_send`).
//!
//! JavaScript names a binding, never a queue: the host finds the queue in
//! the Worker's bundle and the Kubernetes namespace in its id, so a Worker
//! sends only to its own namespace's queues. A send is an op of the calling
//! request that waits for one of the isolate's [`QUEUE_SLOTS`] and runs on
//! the store's blocking pool (or its PostgreSQL runtime), never on this
//! thread; its promise resolves once the messages are committed. The bodies
//! count against the Worker's memory until then.

use std::rc::Rc;
use std::sync::Arc;

use isolane_storage::{QueueScope, QueueSend, StoreError};

use isolane_engine::api::{ErrorClass, HostError, Reservation, Unit};
use isolane_engine::api::{HostState, Settle, Settlement, begin_op};

/// Sends of one isolate in flight at once; more wait their turn.
const QUEUE_SLOTS: usize = 6;

/// `env.NAME` for a queue binding.
pub(crate) fn unit() -> Unit {
    Unit::new("queue")
        .js(&["35_queue.js"])
        .function("queueSend", queue_send)
        .state::<QueueState>()
}

/// Each isolate's slots for sends.
pub(crate) struct QueueState {
    slots: Arc<tokio::sync::Semaphore>,
}

impl Default for QueueState {
    fn default() -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(QUEUE_SLOTS)),
        }
    }
}

/// What a send settles with: nothing, or the error it is rejected with.
struct Sent(Result<(), HostError>);

impl Settle for Sent {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
        match self.0 {
            Ok(()) => Ok(undefined),
            Err(error) => Err(error.to_js(scope).ok_or(undefined)?),
        }
    }
}

/// The store's refusal or failure as the Worker sees it: `Queue send
/// failed: …` (or `sendBatch`), as workerd words a refused send.
fn failed(batch: bool, error: StoreError) -> HostError {
    let method = if batch { "sendBatch" } else { "send" };
    match error {
        StoreError::Queue(error) => {
            HostError::new(ErrorClass::Error, format!("Queue {method} failed: {error}"))
        }
        error @ StoreError::Throttled { .. } => HostError::new(
            ErrorClass::Error,
            format!("Queue {method} failed: Too Many Requests ({error})"),
        ),
        other => {
            tracing::warn!(error = %other, kind = other.kind(), "Queue {method} failed");
            HostError::new(ErrorClass::Error, format!("Queue {method} failed: {other}"))
        }
    }
}

/// The store and queue of `binding` for the calling Worker, and the
/// binding's delay (`deliveryDelay`) of a message sent without one.
fn target(
    host: &HostState,
    binding: &str,
) -> Result<(isolane_storage::Store, QueueScope, u32), HostError> {
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("Queue: no Worker is loaded"))?;
    let queue = worker
        .queues
        .get(binding)
        .ok_or_else(|| HostError::type_error(format!("Queue: no queue binding {binding}")))?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            "Queue: this node has no store configured for queues",
        )
    })?;
    let scope = QueueScope::new(worker.namespace(), queue.name.as_str());
    Ok((store, scope, queue.delay_seconds()))
}

/// The messages of `queueSend`'s arrays: each body's bytes, content type
/// and delay (`null`: the binding's, `default_delay`), checked against
/// Cloudflare's limits before a byte is copied.
fn messages<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    arrays: [v8::Local<'s, v8::Value>; 3],
    batch: bool,
    default_delay: u32,
) -> Result<Vec<QueueSend>, HostError> {
    fn array<'a>(value: v8::Local<'a, v8::Value>) -> Result<v8::Local<'a, v8::Array>, HostError> {
        v8::Local::<v8::Array>::try_from(value)
            .map_err(|_| HostError::type_error("queueSend: arrays expected"))
    }
    let (bodies, types, delays) = (array(arrays[0])?, array(arrays[1])?, array(arrays[2])?);
    let mut views = Vec::with_capacity(bodies.length() as usize);
    let mut sizes = Vec::with_capacity(bodies.length() as usize);
    for i in 0..bodies.length() {
        let body = bodies
            .get_index(scope, i)
            .and_then(|b| v8::Local::<v8::ArrayBufferView>::try_from(b).ok())
            .ok_or_else(|| HostError::type_error("queueSend: each body must be a Uint8Array"))?;
        let delay = delays
            .get_index(scope, i)
            .filter(|d| !d.is_null_or_undefined())
            .and_then(|d| d.number_value(scope))
            .unwrap_or(f64::from(default_delay));
        // Whole seconds of a delay JavaScript checked (0 to 86400).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let delay = delay.clamp(0.0, f64::from(u32::MAX)) as u32;
        sizes.push((body.byte_length(), delay));
        views.push(body);
    }
    isolane_storage::queue::check_sizes(&sizes, batch)
        .map_err(|error| failed(batch, error.into()))?;
    let mut messages = Vec::with_capacity(views.len());
    for (i, (view, (len, delay_seconds))) in views.into_iter().zip(sizes).enumerate() {
        let mut body = vec![0; len];
        view.copy_contents(&mut body);
        let content_type = types
            .get_index(scope, u32::try_from(i).unwrap_or(u32::MAX))
            .map(|t| t.to_rust_string_lossy(scope))
            .unwrap_or_default();
        messages.push(QueueSend {
            body,
            content_type,
            delay_seconds,
        });
    }
    Ok(messages)
}

host_fn! {
/// `queueSend(binding, bodies, contentTypes, delays, batch)` → Promise,
/// resolved once the messages are durable.
fn queue_send<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    bodies: v8::Local<'s, v8::Value>,
    types: v8::Local<'s, v8::Value>,
    delays: v8::Local<'s, v8::Value>,
    batch: bool,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(&host, &binding).and_then(|(store, queue, delay)| {
        let messages = messages(scope, [bodies, types, delays], batch, delay)?;
        Ok(((store, queue), messages))
    });
    let early = match early {
        Ok(((store, queue), messages)) => {
            let len = messages.iter().map(|m| m.body.len()).sum();
            // Over the memory limit: the isolate is being terminated.
            let Ok(charge) = Reservation::new(host.memory(), len) else {
                return None;
            };
            Ok(async move {
                let sent = store.queue_send(queue, messages, batch).await;
                drop(charge);
                Sent(sent.map(|_| ()).map_err(|error| failed(batch, error)))
            })
        }
        Err(error) => Err(error),
    };
    let (resolver, promise, work) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let slots = host.state::<QueueState>()?.slots.clone();
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let Ok(_slot) = slots.acquire_owned().await else {
            return;
        };
        let sent = work.await;
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(sent));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}
