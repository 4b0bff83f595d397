//! The static assets' binding (wrangler's `assets.binding`): `env.ASSETS`
//! is a `Fetcher` (`js/33_assets.js`) whose `fetch(request | url, init)`
//! answers from the Worker's own assets as the asset server would with no
//! Worker in front (`isolane_assets::Site::fetch`: no `run_worker_first`,
//! the configured `not_found_handling`, a 404 when nothing matches). The
//! site is the one the node (or `isolane dev`) answers requests from, held
//! by the Worker's bundle; the answer is made on this thread, without a
//! subrequest (Cloudflare does not count requests to assets either).

use std::rc::Rc;

use isolane_engine::api::service::{header_map, request};
use isolane_engine::api::{HostError, HostState, Unit, fits, js_string, u8_array};

/// `env.<assets.binding>`.
pub(crate) fn unit() -> Unit {
    Unit::new("assets")
        .js(&["33_assets.js"])
        .function("assetsFetch", assets_fetch)
}

host_fn! {
/// `assetsFetch(method, url, headers)` → the answer's head and bytes, in
/// the shape `internal.responseFromHost` takes (`{status, statusText,
/// headers, bytes, url}`); a `TypeError` for a Worker without assets.
fn assets_fetch<'s>(
    scope,
    host: Rc<HostState>,
    method: String,
    url: String,
    headers: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Object>> {
    let answered = header_map(scope, headers)
        .map_err(HostError::type_error)
        // No body: assets answer GET and HEAD, and a 405 to the rest.
        .and_then(|headers| request(&method, &url, headers, ()))
        .and_then(|request| {
            let site = host.worker().and_then(|worker| worker.assets.clone());
            let site = site.ok_or_else(|| HostError::type_error("this Worker has no assets"))?;
            Ok(site.0.fetch(&request))
        });
    match answered {
        Ok(answered) => head(scope, answered, &url),
        Err(error) => {
            error.throw(scope);
            None
        }
    }
}
}

/// The object `internal.responseFromHost` makes a `Response` of.
fn head<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    answered: isolane_assets::Answered,
    url: &str,
) -> Option<v8::Local<'s, v8::Object>> {
    let object = v8::Object::new(scope);
    let mut list = Vec::with_capacity(answered.headers.len() * 2);
    for (name, value) in &answered.headers {
        list.push(js_string(scope, name.as_str())?);
        list.push(js_string(
            scope,
            &String::from_utf8_lossy(value.as_bytes()),
        )?);
    }
    let status = v8::Integer::new(scope, i32::from(answered.status.as_u16())).into();
    let reason = answered.status.canonical_reason().unwrap_or_default();
    let fields = [
        ("status", status),
        ("statusText", js_string(scope, reason)?),
        ("headers", v8::Array::new_with_elements(scope, &list).into()),
        ("url", js_string(scope, url)?),
    ];
    for (key, value) in fields {
        let key = js_string(scope, key)?;
        object.set(scope, key, value)?;
    }
    // An empty answer (a 304, a HEAD's, a bare 404) has no body at all.
    // The bytes are copied into the isolate's own buffer, charged to its
    // limit: checked first, so an asset larger than what is left ends the
    // request at the limit without a host copy of it.
    if !answered.body.is_empty() {
        if !fits(scope, answered.body.len()) {
            return None;
        }
        let key = js_string(scope, "bytes")?;
        let bytes = u8_array(scope, answered.body.to_vec())?;
        object.set(scope, key, bytes.into())?;
    }
    Some(object)
}
