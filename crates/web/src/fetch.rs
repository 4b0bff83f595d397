//! `fetch()`: outbound HTTP through the thread's HTTP client (the core's
//! `api::fetch::send`), counted against the Worker's `subrequests` limit
//! per request — every redirect hop is a subrequest of its own — and
//! `data:` URLs (`fetch/data_url.rs`). Request and Response stay the
//! core's: the core makes and answers them for every request it runs.

use std::rc::{Rc, Weak};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use isolane_engine::Body;
use isolane_engine::api::fetch::{
    FetchHead, HOPS_HEADER, check_hop, connection_headers, prepare_through, send,
};
use isolane_engine::api::headers::header_map;
use isolane_engine::api::service::{self, CallOutbound};
use isolane_engine::api::{
    HostError, HostState, IsolateTurns, Settlement, Unit, begin_op, too_many,
};

mod data_url;

/// `fetch` (Request, Response and Headers are the core's, Blob and File
/// this crate's `blob.rs`).
pub(crate) fn unit() -> Unit {
    Unit::new("fetch")
        .js(&["13_fetch.js"])
        .function("fetch", fetch)
        .function("dataUrl", data_url::data_url)
}

/// Redirects followed at most, as the Fetch Standard says.
const MAX_REDIRECTS: usize = 20;

/// `Request.redirect`: what to do with a 3xx answer that has a `Location`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    Follow,
    Manual,
    Error,
}

/// An outbound request, kept whole so a redirect can send it again.
struct Outbound {
    method: Method,
    url: url::Url,
    headers: HeaderMap,
    body: Option<Bytes>,
    redirect: Redirect,
}

host_fn! {
/// `fetch(method, url, headers, body, redirect)` → Promise.
fn fetch<'s>(
    scope,
    host: Rc<HostState>,
    method: String,
    url: String,
    headers: v8::Local<'s, v8::Value>,
    body: Option<Vec<u8>>,
    redirect: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    // The first hop's subrequest is taken now, so a fetch over the limit is
    // refused at once; redirects take theirs as they happen. A request
    // given an outbound Worker (a dispatched call's) sends it there.
    let limit = host.worker().map_or(0, |w| w.limits.subrequests);
    let outbound = host
        .take_fetch(ctx, limit)
        .map_err(|limit| HostError::type_error(too_many(limit)))
        .and_then(|to| {
            let mut outbound = parse(scope, method, url, headers, body, redirect)
                .map_err(HostError::type_error)?;
            // Set by the engine, whatever the worker wrote.
            outbound.headers.insert(
                HeaderName::from_static(HOPS_HEADER),
                HeaderValue::from(host.outbound_hops(ctx)),
            );
            let through = match to {
                Some(to) => Some(through_outbound(&host, ctx, &to, &outbound)?),
                None => None,
            };
            Ok((through, outbound))
        });
    let (resolver, promise, (through, outbound)) = match begin_op(scope, outbound)? {
        Ok(begun) => begun,
        Err(promise) => return Some(promise),
    };
    if let Some((call, request)) = through {
        let op = resolver_op(scope, &host, ctx, resolver);
        fetch_through(&host, (ctx, op), call, request);
        return Some(promise);
    }
    let op = resolver_op(scope, &host, ctx, resolver);
    let me = host.turns();
    let mut outbound = outbound;
    // Held until the response head (or the failure): the subrequest's span.
    let span = host.subrequest_span(ctx, &outbound.method, &outbound.url, &mut outbound.headers);
    let task = tokio::task::spawn_local(async move {
        let settlement = run(&me, ctx, outbound).await;
        if let (Some(span), Settlement::Fetch(head)) = (&span, &settlement) {
            span.record("http.response.status_code", head.status());
        }
        drop(span);
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, settlement);
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// The op of request `ctx` that `resolver` settles.
fn resolver_op(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    ctx: u32,
    resolver: v8::Local<'_, v8::PromiseResolver>,
) -> u32 {
    let resolver = v8::Global::new(scope, resolver);
    host.add_op(ctx, resolver)
}

/// A `fetch()` of a request given outbound Worker `to` (a dispatched
/// call's, docs/dispatch.md): the call of that Worker's `fetch` handler
/// with the request as it is.
fn through_outbound(
    host: &HostState,
    ctx: u32,
    to: &CallOutbound,
    outbound: &Outbound,
) -> Result<(service::Outbound, http::Request<Body>), HostError> {
    let request = outbound.request().map_err(HostError::type_error)?;
    Ok((prepare_through(host, ctx, to)?, request))
}

/// Runs [`through_outbound`]'s call for op `op` of request `ctx`: its answer is the
/// fetch's (no redirect followed, no egress check here: the outbound
/// Worker decides, and its own fetches meet its own limits and rules).
fn fetch_through(
    host: &HostState,
    (ctx, op): (u32, u32),
    call: service::Outbound,
    request: http::Request<Body>,
) {
    let url = request.uri().to_string();
    let me = host.turns();
    let call = call.run(host, request);
    let task = tokio::task::spawn_local(async move {
        let answer = call.await;
        if let Some(isolate) = me.upgrade() {
            let settlement = service::settlement(&*isolate, ctx, answer, url);
            isolate.settle(op, settlement);
        }
    });
    host.set_op_task(op, task.abort_handle());
}

/// Sends the request, following redirects as `redirect` says; every hop
/// takes one of the request's subrequests.
async fn run(me: &Weak<dyn IsolateTurns>, ctx: u32, mut outbound: Outbound) -> Settlement {
    let mut redirected = false;
    for hop in 0..=MAX_REDIRECTS {
        let sent = {
            let Some(isolate) = me.upgrade() else {
                return Settlement::Undefined;
            };
            let host = isolate.host();
            let limit = host.worker().map_or(0, |w| w.limits.subrequests);
            if hop > 0
                && let Err(limit) = host.take_subrequest(ctx, limit)
            {
                return Settlement::TypeError(too_many(limit));
            }
            if let Err(refused) = check_hop(host, &outbound.url) {
                return Settlement::TypeError(refused);
            }
            match outbound.request() {
                Ok(request) => send(host, request),
                Err(message) => return Settlement::TypeError(message),
            }
        };
        let response = match sent.await {
            Ok(response) => response,
            Err(message) => return Settlement::TypeError(message),
        };
        let location = redirect_location(&outbound.url, &response);
        if let Some(location) = location
            && outbound.redirect != Redirect::Manual
        {
            if outbound.redirect == Redirect::Error {
                return Settlement::TypeError(format!(
                    "fetch failed: redirect mode is 'error' and {} answered {}",
                    outbound.url,
                    response.status().as_u16()
                ));
            }
            let location = match location {
                Ok(location) => location,
                Err(message) => return Settlement::TypeError(message),
            };
            outbound.follow(response.status(), location);
            redirected = true;
            continue;
        }
        let Some(isolate) = me.upgrade() else {
            return Settlement::Undefined;
        };
        let head = FetchHead::new(isolate.host(), ctx, response, outbound.url.into());
        return Settlement::Fetch(head.redirected(redirected));
    }
    Settlement::TypeError(format!("fetch failed: more than {MAX_REDIRECTS} redirects"))
}

/// The `Location` of a redirect response resolved against `url`: `None` when
/// the response is not a redirect, `Some(Err)` when its location is invalid.
fn redirect_location<B>(
    url: &url::Url,
    response: &http::Response<B>,
) -> Option<Result<url::Url, String>> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = response.headers().get(header::LOCATION)?;
    let parsed = location
        .to_str()
        .ok()
        .and_then(|l| url.join(l).ok())
        .ok_or_else(|| format!("fetch failed: invalid redirect location {location:?}"));
    Some(parsed)
}

// === impl Outbound ===

impl Outbound {
    /// The hyper request for the current hop.
    fn request(&self) -> Result<http::Request<Body>, String> {
        let uri = uri(&self.url)?;
        let body = self.body.clone().map_or_else(Body::empty, Body::from);
        let mut request = http::Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = uri;
        *request.headers_mut() = self.headers.clone();
        Ok(request)
    }

    /// Turns this request into the next hop of a redirect (Fetch Standard,
    /// "HTTP-redirect fetch"): 301/302 after POST and 303 after anything but
    /// HEAD become a GET without a body; a cross-origin hop drops
    /// `Authorization`.
    fn follow(&mut self, status: StatusCode, location: url::Url) {
        let to_get = (matches!(status.as_u16(), 301 | 302) && self.method == Method::POST)
            || (status.as_u16() == 303 && self.method != Method::HEAD);
        if to_get {
            self.method = Method::GET;
            self.body = None;
            for name in [
                header::CONTENT_TYPE,
                header::CONTENT_LENGTH,
                header::CONTENT_ENCODING,
                header::CONTENT_LANGUAGE,
                header::CONTENT_LOCATION,
            ] {
                self.headers.remove(name);
            }
        }
        if location.origin() != self.url.origin() {
            self.headers.remove(header::AUTHORIZATION);
        }
        // The Host header belongs to the first hop; hyper sets it from the URI.
        self.headers.remove(header::HOST);
        self.url = location;
    }
}

/// The URI hyper sends to: HTTP or HTTPS.
fn uri(url: &url::Url) -> Result<http::Uri, String> {
    match url.scheme() {
        "http" | "https" => {}
        _ => return Err(format!("fetch: unsupported URL {:?}", url.as_str())),
    }
    url.as_str()
        .parse()
        .map_err(|_| format!("invalid URL {:?}", url.as_str()))
}

fn parse(
    scope: &mut v8::PinScope<'_, '_>,
    method: String,
    url: String,
    headers: v8::Local<'_, v8::Value>,
    body: Option<Vec<u8>>,
    redirect: v8::Local<'_, v8::Value>,
) -> Result<Outbound, String> {
    let headers = header_map(scope, headers)?;
    let body = body.map(Bytes::from);
    let redirect = match redirect {
        mode if mode.is_undefined() => Redirect::Follow,
        mode => match mode.to_rust_string_lossy(scope).as_str() {
            "follow" => Redirect::Follow,
            "manual" => Redirect::Manual,
            "error" => Redirect::Error,
            other => return Err(format!("fetch: invalid redirect mode {other:?}")),
        },
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method {method:?}"))?;
    let url = url::Url::parse(&url).map_err(|_| format!("invalid URL {url:?}"))?;
    // Refuse what cannot be sent before counting a subrequest for it.
    uri(&url)?;
    let mut headers = headers;
    connection_headers(&mut headers, &method, body.as_ref().map(Bytes::len));
    Ok(Outbound {
        method,
        url,
        headers,
        body,
        redirect,
    })
}
