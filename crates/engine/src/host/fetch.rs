//! `host.fetch`: outbound HTTP through the thread's hyper client, counted
//! against the worker's `subrequests` limit per request.

use http::{HeaderName, HeaderValue, Method, Uri};

use super::state::FetchHead;
use super::{HostState, Settlement, arg_string, header_pairs, new_promise, view_bytes};
use crate::body::Body;

pub(super) fn fetch(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let Some((resolver, promise)) = new_promise(scope) else {
        return;
    };
    rv.set(promise.into());
    let ctx = host.current();
    let limit = host.worker.get().map_or(0, |w| w.limits.subrequests);
    let request = host
        .take_subrequest(ctx, limit)
        .map_err(|limit| {
            format!("Too many subrequests: a request may make at most {limit} fetch calls")
        })
        .and_then(|()| build_request(scope, &args));
    let request = match request {
        Ok(request) => request,
        Err(message) => {
            if let Some(message) = v8::String::new(scope, &message) {
                let error = v8::Exception::type_error(scope, message);
                resolver.reject(scope, error);
            }
            return;
        }
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.me.clone();
    let client = host.thread.client.clone();
    let task = tokio::task::spawn_local(async move {
        let response = client.request(request).await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let settlement = match response {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                let body_id = if http_body::Body::is_end_stream(&body) {
                    0
                } else {
                    isolate.host.register_body(ctx, Body::wrap(body))
                };
                Settlement::Fetch(FetchHead {
                    status: parts.status.as_u16(),
                    status_text: parts.status.canonical_reason().unwrap_or("").to_owned(),
                    headers: parts.headers,
                    body_id,
                })
            }
            Err(error) => Settlement::TypeError(format!("fetch failed: {error}")),
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
}

fn build_request(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
) -> Result<http::Request<Body>, String> {
    let method = arg_string(scope, args, 0);
    let url = arg_string(scope, args, 1);
    let headers = header_pairs(scope, args.get(2));
    let body = view_bytes(args.get(3)).map_or_else(Body::empty, Body::from);
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method {method:?}"))?;
    let uri: Uri = url.parse().map_err(|_| format!("invalid URL {url:?}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return Err("fetch: https is not supported by this engine yet".to_owned()),
        _ => return Err(format!("fetch: unsupported URL {url:?}")),
    }
    let mut request = http::Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    for (name, value) in headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) else {
            return Err(format!("invalid header {name:?}"));
        };
        request.headers_mut().append(name, value);
    }
    Ok(request)
}
