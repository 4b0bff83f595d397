//! `host.respond`, `responseWrite`, `responseEnd`, `fail`, `requestDone`: the
//! worker's answer to one request.

use http::header::CONTENT_LENGTH;
use http::{HeaderValue, StatusCode};
use tokio::sync::mpsc;

use std::rc::Rc;

use super::error::{HostError, HostResult};
use super::state::WriteOp;
use super::{HostState, IsolateTurns, Settlement, lenient_header_map, new_promise, view_bytes};
use crate::body::{Body, BodySender};
use crate::outcome::ExecuteError;
use crate::unit::Unit;

/// The worker: its handlers (`fetch`, `scheduled`, service-worker events),
/// `ctx.waitUntil`, and its answer to each request.
pub(super) fn unit() -> Unit {
    Unit::new("worker")
        .js(&["19_worker.js"])
        .function("respond", respond)
        .function("responseWrite", response_write)
        .function("responseEnd", response_end)
        .function("fail", fail)
        .function("requestDone", request_done)
        .request_state::<super::object_forward::PassedSockets>()
}

host_fn! {
/// `respond(ctxId, status, statusText, headers, body)`.
fn respond<'s>(
    scope,
    host: Rc<HostState>,
    ctx: u32,
    status: v8::Local<'s, v8::Value>,
    _status_text: v8::Local<'s, v8::Value>,
    headers: v8::Local<'s, v8::Value>,
    body_arg: v8::Local<'s, v8::Value>,
) -> HostResult<()> {
    let status = status.uint32_value(scope).unwrap_or(200);
    let Some(status) = u16::try_from(status)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
    else {
        return Err(HostError::type_error("respond: invalid status"));
    };
    let mut headers = lenient_header_map(scope, headers);
    let body = if body_arg.is_true() {
        let capacity = host.thread.config.body_channel_chunks;
        let (sender, body) = Body::channel(capacity);
        let (tx, rx) = mpsc::unbounded_channel();
        host.set_writer(ctx, tx);
        let length = declared_length(&headers);
        tokio::task::spawn_local(write_body(host.me.clone(), ctx, rx, sender, length));
        body
    } else if let Some(bytes) = view_bytes(body_arg) {
        // A whole body is sent with its real length, whatever the worker
        // declared.
        if headers.contains_key(CONTENT_LENGTH) {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(bytes.len()));
        }
        if bytes.len() <= UNCHARGED_BODY {
            Body::from(bytes)
        } else {
            match host.memory.charged_bytes(bytes) {
                Ok(bytes) => Body::from(bytes),
                // Over the memory limit: the turn is being terminated.
                Err(_) => return Ok(()),
            }
        }
    } else {
        Body::empty()
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    host.send_head(ctx, response);
    Ok(())
}
}

/// The `Content-Length` a streamed response declared, if one valid one.
fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    let mut values = headers.get_all(CONTENT_LENGTH).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()?.trim().parse().ok()
}

/// A whole body up to this size is not charged to the worker's memory while
/// it waits for its reader: the request's slot already bounds it (one per
/// slot, like one slice of a streamed body), and charging costs the warm path
/// an allocation.
pub(super) const UNCHARGED_BODY: usize = 64 * 1024;

const TOO_LONG: &str = "the response body is longer than its Content-Length";

/// Moves a streamed body from JS to the response channel, in order. Each
/// chunk's promise settles once the channel took it: that is the
/// back-pressure JS sees. When the reader goes away (the client
/// disconnected), the request's signal is aborted (`internal.requestAborted`).
///
/// A body that declared a `Content-Length` is held to it: the bytes past it
/// are never sent, and a body longer or shorter than declared ends with an
/// error, so the front end closes the connection instead of framing a lie.
async fn write_body(
    me: std::rc::Weak<dyn IsolateTurns>,
    ctx: u32,
    mut rx: mpsc::UnboundedReceiver<WriteOp>,
    sender: BodySender,
    mut length: Option<u64>,
) {
    let mut told = false;
    loop {
        let op = tokio::select! {
            biased;
            op = rx.recv() => op,
            () = sender.closed(), if !told => {
                told = true;
                // Every declared byte was sent: the reader is done, not gone.
                if length == Some(0) {
                    continue;
                }
                reader_gone(&me, ctx);
                continue;
            }
        };
        let Some(op) = op else {
            return;
        };
        match op {
            WriteOp::Chunk(mut bytes, op) => {
                let over = match &mut length {
                    Some(left) => {
                        let len = bytes.len() as u64;
                        let fits = len <= *left;
                        if !fits {
                            bytes.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
                        }
                        *left = left.saturating_sub(len);
                        !fits
                    }
                    None => false,
                };
                let settlement = match sender.send(bytes).await {
                    Ok(()) if over => Settlement::TypeError(TOO_LONG.to_owned()),
                    Ok(()) => Settlement::Undefined,
                    Err(_) => {
                        // Found gone by this chunk rather than by `closed`
                        // (both were ready): the same, before the chunk's
                        // promise rejects.
                        if !told {
                            told = true;
                            reader_gone(&me, ctx);
                        }
                        Settlement::TypeError("the response's reader went away".to_owned())
                    }
                };
                if let Some(isolate) = me.upgrade() {
                    isolate.settle(op, settlement);
                }
                if over {
                    sender.abort(TOO_LONG.to_owned()).await;
                    return;
                }
            }
            WriteOp::End(None) => {
                if let Some(left @ 1..) = length {
                    sender
                        .abort(format!(
                            "the response body ended {left} bytes short of its Content-Length"
                        ))
                        .await;
                }
                return;
            }
            WriteOp::End(Some(message)) => {
                sender.abort(message).await;
                return;
            }
        }
    }
}

/// The client went away mid-body: abort the request's signal, then cancel
/// the request, so its slot is free at once and nothing more of it runs.
fn reader_gone(me: &std::rc::Weak<dyn IsolateTurns>, ctx: u32) {
    if let Some(isolate) = me.upgrade() {
        isolate.request_aborted(ctx);
        isolate.host().fail_request(
            ctx,
            ExecuteError::Canceled {
                reason: "the client went away",
            },
        );
    }
}

host_fn! {
/// `responseWrite(ctxId, u8)` → Promise.
fn response_write<'s>(
    scope,
    host: Rc<HostState>,
    ctx: u32,
    bytes: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let bytes = bytes.unwrap_or_default();
    // Charged until the reader has taken it (see `Memory::charged_bytes`).
    // Over the memory limit the turn is being terminated.
    let bytes = host.memory.charged_bytes(bytes).ok()?;
    let (resolver, promise) = new_promise(scope)?;
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let sent = host
        .writer(ctx)
        .is_some_and(|writer| writer.send(WriteOp::Chunk(bytes, op)).is_ok());
    if !sent && let Some((_, resolver)) = host.take_op(op) {
        let resolver = v8::Local::new(scope, resolver);
        let error = HostError::type_error("responseWrite: the response is not streaming");
        if let Some(error) = error.to_js(scope) {
            resolver.reject(scope, error);
        }
    }
    Some(promise)
}
}

host_fn! {
/// `responseEnd(ctxId, errorMessage)`.
fn response_end<'s>(_scope, host: Rc<HostState>, ctx: u32, error: Option<String>) {
    if let Some(writer) = host.writer(ctx) {
        let _ = writer.send(WriteOp::End(error));
    }
}
}

host_fn! {
/// `fail(ctxId, message, stack)`: 500 if no head was sent; the stack is logged.
fn fail<'s>(_scope, host: Rc<HostState>, ctx: u32, message: String, stack: String) {
    super::console::report_exception(&host, ctx, "worker failed the request", &message, &stack);
    host.fail_request(ctx, ExecuteError::Exception { message });
}
}

host_fn! {
/// `requestDone(ctxId, busy)` → false when a WebSocket holds the request.
fn request_done<'s>(_scope, host: Rc<HostState>, ctx: u32, busy: bool) -> bool {
    host.request_done(ctx, busy)
}
}
