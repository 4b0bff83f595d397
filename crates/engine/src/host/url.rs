//! `host.urlParse` and `host.urlSet`: the JavaScript `URL`'s parsing and
//! setters, by `ada-url` (the WHATWG URL Standard's parser, conformant with
//! the Web Platform Tests; Node.js uses the same library). The engine's own
//! Rust code (outbound fetch, egress checks) keeps the `url` crate; what it
//! gets from JavaScript is an href this parser already normalised.

use ada_url::Url;

use super::{arg_string, js_string, throw_type_error};

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

/// `urlParse(input, base?)` → component array or `null`.
pub(super) fn url_parse(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let input = arg_string(scope, &args, 0);
    let base = args.get(1);
    let base = (!base.is_null_or_undefined()).then(|| base.to_rust_string_lossy(scope));
    match Url::parse(input.as_str(), base.as_deref())
        .ok()
        .and_then(|url| to_js(scope, &url))
    {
        Some(array) => rv.set(array),
        None => rv.set_null(),
    }
}

/// `urlSet(href, part, value)` → the new component array.
pub(super) fn url_set(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let href = arg_string(scope, &args, 0);
    let part = arg_string(scope, &args, 1);
    let value = arg_string(scope, &args, 2);
    let Ok(mut url) = Url::parse(href.as_str(), None) else {
        throw_type_error(scope, &format!("Invalid URL: {href}"));
        return;
    };
    let value = value.as_str();
    // Setters other than href ignore invalid input, as the standard says.
    let _ = match part.as_str() {
        "href" => {
            if url.set_href(value).is_err() {
                throw_type_error(scope, &format!("Invalid URL: {value}"));
                return;
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
            throw_type_error(scope, &format!("urlSet: unknown part {other:?}"));
            return;
        }
    };
    if let Some(array) = to_js(scope, &url) {
        rv.set(array);
    }
}
