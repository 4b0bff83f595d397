//! `host.cachePut`, `host.cacheMatch`, `host.cacheDelete`: the Cache API on
//! the engine's shared store (`cache/store.rs`, an engine-wide state made
//! on first use), scoped to the calling worker's namespace — JavaScript never
//! names the namespace.

mod store;

use std::time::SystemTime;

use bytes::Bytes;
use http::StatusCode;

use std::rc::Rc;

use isolane_engine::api::headers::{header_array, header_map};
use isolane_engine::api::{HostError, HostResult, HostState, Unit, js_string, u8_array};

use self::store::{CacheKey, CacheRequest, CacheResponse, HttpCache};

/// `caches.default` and `caches.open`: the Cache API.
pub(crate) fn unit() -> Unit {
    Unit::new("cache")
        .js(&["22_cache.js"])
        .lazy_globals(&["caches", "Cache", "CacheStorage"])
        .function("cachePut", cache_put)
        .function("cacheMatch", cache_match)
        .function("cacheDelete", cache_delete)
}

/// What names a cache entry, as JavaScript passes it: the cache's name
/// (`None` for `caches.default`), the URL and the request's headers.
struct Target<'s> {
    cache: Option<String>,
    url: String,
    headers: v8::Local<'s, v8::Value>,
}

/// The key for a [`Target`] in the calling worker's namespace, and the
/// request as the cache sees it; `Err` is a TypeError.
fn key_and_request(
    scope: &mut v8::PinScope<'_, '_>,
    target: Target<'_>,
    host: &HostState,
) -> HostResult<(CacheKey, CacheRequest)> {
    key_and_request_of(scope, target, host).map_err(HostError::type_error)
}

fn key_and_request_of(
    scope: &mut v8::PinScope<'_, '_>,
    target: Target<'_>,
    host: &HostState,
) -> Result<(CacheKey, CacheRequest), String> {
    let worker = host.worker().ok_or("no worker")?;
    let namespace = worker
        .id
        .split_once('/')
        .map_or(worker.id.as_str(), |(namespace, _)| namespace)
        .to_owned();
    let cache = target.cache;
    let mut url = url::Url::parse(&target.url).map_err(|_| "Cache: invalid URL".to_owned())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "Cache: only http and https URLs can be cached, not {}:",
            url.scheme()
        ));
    }
    url.set_fragment(None);
    let uri: http::Uri = url
        .as_str()
        .parse()
        .map_err(|_| "Cache: invalid URL".to_owned())?;
    let headers = header_map(scope, target.headers)?;
    Ok((
        CacheKey {
            namespace,
            cache,
            url: url.into(),
        },
        CacheRequest { uri, headers },
    ))
}

host_fn! {
/// `cachePut(cache, url, requestHeaders, status, statusText, headers, u8)`
/// → whether it was stored.
fn cache_put<'s>(
    scope,
    host: Rc<HostState>,
    cache: Option<String>,
    url: String,
    request_headers: v8::Local<'s, v8::Value>,
    status: v8::Local<'s, v8::Value>,
    status_text: String,
    headers: v8::Local<'s, v8::Value>,
    body: v8::Local<'s, v8::Value>,
) -> HostResult<bool> {
    let target = Target {
        cache,
        url,
        headers: request_headers,
    };
    let (key, request) = key_and_request(scope, target, &host)?;
    let status = status
        .uint32_value(scope)
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .ok_or_else(|| HostError::type_error("Cache.put: invalid status"))?;
    let headers = header_map(scope, headers).map_err(HostError::type_error)?;
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(body) else {
        return Err(HostError::type_error("Cache.put: body must be a Uint8Array"));
    };
    let mut body = vec![0; view.byte_length()];
    view.copy_contents(&mut body);
    let response = CacheResponse {
        status,
        status_text,
        headers,
        body: Bytes::from(body),
    };
    let url = key.url.clone();
    let stored = host.engine_state::<HttpCache>().put(key, &request, response, SystemTime::now());
    if let Err(refusal) = &stored {
        tracing::debug!(
            worker.id = host.worker_id(),
            url,
            %refusal,
            "cache.put not stored"
        );
    }
    Ok(stored.is_ok())
}
}

host_fn! {
/// `cacheMatch(cache, url, requestHeaders)` →
/// `[status, statusText, headers, u8 | null]` or `null`.
fn cache_match<'s>(
    scope,
    host: Rc<HostState>,
    cache: Option<String>,
    url: String,
    headers: v8::Local<'s, v8::Value>,
) -> HostResult<v8::Local<'s, v8::Value>> {
    let null = v8::null(scope).into();
    let (key, request) = key_and_request(scope, Target { cache, url, headers }, &host)?;
    let Some(answer) = host.engine_state::<HttpCache>().lookup(&key, &request, SystemTime::now()) else {
        return Ok(null);
    };
    let status = v8::Integer::new(scope, i32::from(answer.status.as_u16())).into();
    let Some(status_text) = js_string(scope, &answer.status_text) else {
        return Ok(null);
    };
    let headers = header_array(scope, &answer.headers).into();
    let body = match answer.body {
        // Copied into the isolate, charged to its memory budget; over it the
        // isolate is being terminated and nothing is returned.
        Some(bytes) => match u8_array(scope, bytes.to_vec()) {
            Some(array) => array.into(),
            None => return Ok(null),
        },
        None => null,
    };
    let result = v8::Array::new_with_elements(scope, &[status, status_text, headers, body]);
    Ok(result.into())
}
}

host_fn! {
/// `cacheDelete(cache, url, requestHeaders)` → whether something was removed.
fn cache_delete<'s>(
    scope,
    host: Rc<HostState>,
    cache: Option<String>,
    url: String,
    headers: v8::Local<'s, v8::Value>,
) -> HostResult<bool> {
    let (key, _) = key_and_request(scope, Target { cache, url, headers }, &host)?;
    Ok(host.engine_state::<HttpCache>().delete(&key))
}
}
