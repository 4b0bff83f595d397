//! A job's [`Event`] (`work.rs`) as JavaScript gets it: `internal.handleRequest`'s last
//! argument (js/19_worker.js, HOST.md), one object whose `type` names the
//! event, with the event's fields beside it. A fetch passes none (the
//! request's head and body are `handleRequest`'s own arguments, which an
//! object call shares), so the hot path makes no object for it.
//!
//! The objects have no prototype: a Worker that defines properties on
//! `Object.prototype` cannot show through them.

use crate::host;
use crate::socket::ObjectSocketEvent;

use crate::socket::SocketMessage;
use crate::work::Event;

/// The event object of `event`; `None` for a fetch (no argument is passed)
/// and, inside, `None` when V8 could not make a value (out of memory: the
/// turn fails as an exception would).
pub(crate) fn event_object<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    event: &Event,
) -> Option<Option<v8::Local<'s, v8::Value>>> {
    let object = match event {
        Event::Fetch => return Some(None),
        Event::Scheduled(tick) => {
            let cron = host::js_string(scope, &tick.cron)?;
            // Milliseconds fit a double exactly until 2^53.
            #[allow(clippy::cast_precision_loss)]
            let time = v8::Number::new(scope, tick.scheduled_time_ms as f64).into();
            object(
                scope,
                "scheduled",
                &[("cron", cron), ("scheduledTime", time)],
            )
        }
        Event::Alarm(alarm) => {
            let class = host::js_string(scope, &alarm.class)?;
            let id = host::js_string(scope, &alarm.id)?;
            let retries = v8::Integer::new_from_unsigned(scope, alarm.retry_count).into();
            object(
                scope,
                "alarm",
                &[("className", class), ("id", id), ("retryCount", retries)],
            )
        }
        Event::ObjectCall(call) => {
            let class = host::js_string(scope, &call.class)?;
            let id = host::js_string(scope, &call.id)?;
            let method = match &call.method {
                Some(method) => host::js_string(scope, method)?,
                None => v8::null(scope).into(),
            };
            object(
                scope,
                "objectCall",
                &[("className", class), ("id", id), ("rpcMethod", method)],
            )
        }
        Event::ObjectSocketEvent(event) => socket_event(scope, event),
        Event::QueueBatch(batch) => queue_event(scope, batch),
        Event::WorkflowRun(run) => {
            let run = host::js_string(scope, &run.event_json())?;
            object(scope, "workflow", &[("run", run)])
        }
        Event::ServiceCall(call) => service_call_event(scope, call),
    };
    Some(Some(object?))
}

/// `{type: 'objectSocket', className, id, socketId, kind, data, code,
/// reason, tags, attachment}` of an object's socket event (kinds and
/// values as `internal.webSocketEvent`'s).
fn socket_event<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    event: &ObjectSocketEvent,
) -> Option<v8::Local<'s, v8::Value>> {
    let class = host::js_string(scope, &event.class)?;
    let id = host::js_string(scope, &event.id)?;
    let socket = v8::Integer::new_from_unsigned(scope, event.socket).into();
    let [kind, data, code, reason] = message_args(scope, &event.message)?;
    let tags: Option<Vec<_>> = event
        .tags
        .iter()
        .map(|t| host::js_string(scope, t))
        .collect();
    let tags = v8::Array::new_with_elements(scope, &tags?).into();
    let attachment = match &event.attachment {
        Some(bytes) => host::u8_array(scope, bytes.clone())?.into(),
        None => v8::null(scope).into(),
    };
    let fields = [
        ("className", class),
        ("id", id),
        ("socketId", socket),
        ("kind", kind),
        ("data", data),
        ("code", code),
        ("reason", reason),
        ("tags", tags),
        ("attachment", attachment),
    ];
    object(scope, "objectSocket", &fields)
}

/// `{type: 'serviceCall', entrypoint, rpcMethod, props, payload, params}`
/// of a call through a service binding (`params`: values for the callee's
/// `env` in this call only, an outbound Worker's).
fn service_call_event<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    call: &crate::service_call::ServiceCall,
) -> Option<v8::Local<'s, v8::Value>> {
    let entrypoint = string_or_null(scope, call.entrypoint.as_deref())?;
    let method = string_or_null(scope, call.method.as_deref())?;
    let props = string_or_null(scope, call.props.as_deref())?;
    let params = string_or_null(scope, call.params.as_deref())?;
    let payload = match &call.payload {
        Some(bytes) => host::u8_array(scope, bytes.to_vec())?.into(),
        None => v8::null(scope).into(),
    };
    let fields = [
        ("entrypoint", entrypoint),
        ("rpcMethod", method),
        ("props", props),
        ("payload", payload),
        ("params", params),
    ];
    object(scope, "serviceCall", &fields)
}

/// `{type: 'queue', queue, messages: [[id, timestamp, body, contentType,
/// attempts], …]}` of a queue batch; each body a Uint8Array (charged to
/// the Worker), decoded by JavaScript as its content type says.
fn queue_event<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    batch: &isolane_storage::QueueBatch,
) -> Option<v8::Local<'s, v8::Value>> {
    let queue = host::js_string(scope, &batch.queue)?;
    let mut messages = Vec::with_capacity(batch.messages.len());
    for message in &batch.messages {
        let id = host::js_string(scope, &message.id)?;
        // Milliseconds fit a double exactly until 2^53.
        #[allow(clippy::cast_precision_loss)]
        let timestamp = v8::Number::new(scope, message.timestamp_ms as f64).into();
        let body = host::u8_array(scope, message.body.clone())?.into();
        let content_type = host::js_string(scope, &message.content_type)?;
        let attempts = v8::Integer::new_from_unsigned(scope, message.attempts).into();
        let fields = [id, timestamp, body, content_type, attempts];
        messages.push(v8::Array::new_with_elements(scope, &fields).into());
    }
    let messages = v8::Array::new_with_elements(scope, &messages).into();
    object(scope, "queue", &[("queue", queue), ("messages", messages)])
}

/// `value` as a string, or `null`.
fn string_or_null<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: Option<&str>,
) -> Option<v8::Local<'s, v8::Value>> {
    match value {
        Some(value) => host::js_string(scope, value),
        None => Some(v8::null(scope).into()),
    }
}

/// `{type, ...fields}`, without a prototype.
fn object<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    kind: &str,
    fields: &[(&str, v8::Local<'s, v8::Value>)],
) -> Option<v8::Local<'s, v8::Value>> {
    let mut names: Vec<v8::Local<v8::Name>> = Vec::with_capacity(fields.len() + 1);
    let mut values = Vec::with_capacity(fields.len() + 1);
    names.push(name(scope, "type")?);
    values.push(host::js_string(scope, kind)?);
    for &(field, value) in fields {
        names.push(name(scope, field)?);
        values.push(value);
    }
    let null = v8::null(scope).into();
    Some(v8::Object::with_prototype_and_properties(scope, null, &names, &values).into())
}

/// An internalized property name.
fn name<'s>(scope: &mut v8::PinScope<'s, '_>, name: &str) -> Option<v8::Local<'s, v8::Name>> {
    v8::String::new_from_utf8(scope, name.as_bytes(), v8::NewStringType::Internalized)
        .map(Into::into)
}

/// `[kind, data, code, reason]` of a socket message: kind 0 text, 1 binary
/// (a Uint8Array, charged to the Worker), 2 close.
pub(crate) fn message_args<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    message: &SocketMessage,
) -> Option<[v8::Local<'s, v8::Value>; 4]> {
    let undefined: v8::Local<v8::Value> = v8::undefined(scope).into();
    let (kind, data, code, reason) = match message {
        SocketMessage::Text(text) => (0, host::js_string(scope, text)?, 0, undefined),
        SocketMessage::Binary(bytes) => (
            1,
            host::u8_array(scope, bytes.to_vec())?.into(),
            0,
            undefined,
        ),
        SocketMessage::Close(frame) => {
            let (code, reason) = frame
                .as_ref()
                .map_or((1005, ""), |f| (f.code, f.reason.as_str()));
            (2, undefined, code, host::js_string(scope, reason)?)
        }
    };
    Some([
        v8::Integer::new(scope, kind).into(),
        data,
        v8::Integer::new(scope, i32::from(code)).into(),
        reason,
    ])
}
