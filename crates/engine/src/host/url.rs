//! `host.urlParse` and `host.urlSet`: the WHATWG URL Standard's parser and
//! setters, by `ada-url` (conformant with the Web Platform Tests; Node.js
//! uses the same library). The core's `Request`, `Response` and `fetch`
//! parse with it (`internal.parseURL`, `00_internal.js`); the `URL` and
//! `URLSearchParams` objects built on both are `isolane-web`'s
//! (`crates/web/js/06_url.js`). The engine's own Rust code (outbound fetch,
//! egress checks) keeps the `url` crate; what it gets from JavaScript is an
//! href this parser already normalised.

use ada_url::Url;

use super::error::{HostError, HostResult};
use super::js_string;
use crate::unit::Unit;

/// The URL parser: host functions only.
pub(super) fn unit() -> Unit {
    Unit::new("url_parser")
        .function("urlParse", url_parse)
        .function("urlSet", url_set)
}

/// The component array of HOST.md, in order.
fn components(url: &Url) -> [String; 11] {
    [
        url.href().to_owned(),
        url.origin(),
        url.protocol().to_owned(),
        url.username().to_owned(),
        url.password().to_owned(),
        url.host().to_owned(),
        url.hostname().to_owned(),
        url.port().to_owned(),
        url.pathname().to_owned(),
        url.search().to_owned(),
        url.hash().to_owned(),
    ]
}

fn to_js<'s>(scope: &mut v8::PinScope<'s, '_>, url: &Url) -> Option<v8::Local<'s, v8::Value>> {
    let mut items = Vec::with_capacity(11);
    for part in components(url) {
        items.push(js_string(scope, &part)?);
    }
    Some(v8::Array::new_with_elements(scope, &items).into())
}

host_fn! {
/// `urlParse(input, base?)` → component array or `null`.
fn url_parse<'s>(scope, input: String, base: Option<String>) -> v8::Local<'s, v8::Value> {
    match Url::parse(input.as_str(), base.as_deref())
        .ok()
        .and_then(|url| to_js(scope, &url))
    {
        Some(array) => array,
        None => v8::null(scope).into(),
    }
}
}

host_fn! {
/// `urlSet(href, part, value)` → the new component array.
fn url_set<'s>(
    scope,
    href: String,
    part: String,
    value: String,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let Ok(mut url) = Url::parse(href.as_str(), None) else {
        return Err(HostError::type_error(format!("Invalid URL: {href}")));
    };
    let value = value.as_str();
    // Setters other than href ignore invalid input, as the standard says.
    let _ = match part.as_str() {
        "href" => {
            if url.set_href(value).is_err() {
                return Err(HostError::type_error(format!("Invalid URL: {value}")));
            }
            Ok(())
        }
        "protocol" => url.set_protocol(value),
        "username" => url.set_username(Some(value)),
        "password" => url.set_password(Some(value)),
        "host" => url.set_host(Some(value)),
        "hostname" => url.set_hostname(Some(value)),
        "port" => url.set_port(Some(value)),
        "pathname" => url.set_pathname(Some(value)),
        "search" => {
            url.set_search(Some(value));
            Ok(())
        }
        "hash" => {
            url.set_hash(Some(value));
            Ok(())
        }
        other => {
            return Err(HostError::type_error(format!(
                "urlSet: unknown part {other:?}"
            )));
        }
    };
    Ok(to_js(scope, &url))
}
}
