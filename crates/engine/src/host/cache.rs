//! `host.cachePut`, `host.cacheMatch`, `host.cacheDelete`: the Cache API on
//! the engine's shared store (`crate::cache`), scoped to the calling
//! worker's namespace — JavaScript never names the namespace.

use std::time::SystemTime;

use bytes::Bytes;
use http::StatusCode;

use super::{
    HostState, arg_string, header_array, header_map, js_string, throw_type_error, u8_array,
};
use crate::cache::{CacheKey, CacheRequest, CacheResponse};

/// The key for (`cache`, `url`) in the calling worker's namespace, and the
/// request as the cache sees it. `Err`: a message for a TypeError.
fn key_and_request(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    host: &HostState,
) -> Result<(CacheKey, CacheRequest), String> {
    let worker = host.worker.get().ok_or("no worker")?;
    let namespace = worker
        .id
        .split_once('/')
        .map_or(worker.id.as_str(), |(namespace, _)| namespace)
        .to_owned();
    let cache = match args.get(0) {
        name if name.is_null_or_undefined() => None,
        name => Some(name.to_rust_string_lossy(scope)),
    };
    let mut url = url::Url::parse(&arg_string(scope, args, 1))
        .map_err(|_| "Cache: invalid URL".to_owned())?;
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
    let headers = header_map(scope, args.get(2))?;
    Ok((
        CacheKey {
            namespace,
            cache,
            url: url.into(),
        },
        CacheRequest { uri, headers },
    ))
}

/// `cachePut(cache, url, requestHeaders, status, statusText, headers, u8)`
/// → whether it was stored.
pub(super) fn cache_put(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let (key, request) = match key_and_request(scope, &args, &host) {
        Ok(parsed) => parsed,
        Err(message) => return throw_type_error(scope, &message),
    };
    let status = args
        .get(3)
        .uint32_value(scope)
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| StatusCode::from_u16(s).ok());
    let Some(status) = status else {
        return throw_type_error(scope, "Cache.put: invalid status");
    };
    let status_text = arg_string(scope, &args, 4);
    let headers = match header_map(scope, args.get(5)) {
        Ok(headers) => headers,
        Err(message) => return throw_type_error(scope, &message),
    };
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(args.get(6)) else {
        return throw_type_error(scope, "Cache.put: body must be a Uint8Array");
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
    let stored = host
        .thread
        .shared
        .cache
        .put(key, &request, response, SystemTime::now());
    if let Err(refusal) = &stored {
        tracing::debug!(
            worker.id = host.worker_id(),
            url,
            %refusal,
            "cache.put not stored"
        );
    }
    rv.set(v8::Boolean::new(scope, stored.is_ok()).into());
}

/// `cacheMatch(cache, url, requestHeaders)` →
/// `[status, statusText, headers, u8 | null]` or `null`.
pub(super) fn cache_match(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    rv.set(v8::null(scope).into());
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let (key, request) = match key_and_request(scope, &args, &host) {
        Ok(parsed) => parsed,
        Err(message) => return throw_type_error(scope, &message),
    };
    let Some(answer) = host
        .thread
        .shared
        .cache
        .lookup(&key, &request, SystemTime::now())
    else {
        return;
    };
    let status = v8::Integer::new(scope, i32::from(answer.status.as_u16())).into();
    let Some(status_text) = js_string(scope, &answer.status_text) else {
        return;
    };
    let headers = header_array(scope, &answer.headers).into();
    let body = match answer.body {
        // Copied into the isolate, charged to its memory budget; over it the
        // isolate is being terminated and nothing is returned.
        Some(bytes) => match u8_array(scope, bytes.to_vec()) {
            Some(array) => array.into(),
            None => return,
        },
        None => v8::null(scope).into(),
    };
    let result = v8::Array::new_with_elements(scope, &[status, status_text, headers, body]);
    rv.set(result.into());
}

/// `cacheDelete(cache, url, requestHeaders)` → whether something was removed.
pub(super) fn cache_delete(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let (key, _) = match key_and_request(scope, &args, &host) {
        Ok(parsed) => parsed,
        Err(message) => return throw_type_error(scope, &message),
    };
    let removed = host.thread.shared.cache.delete(&key);
    rv.set(v8::Boolean::new(scope, removed).into());
}
