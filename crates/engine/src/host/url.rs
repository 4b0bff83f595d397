//! `host.urlParse` and `host.urlSet`: WHATWG URLs via the `url` crate, with
//! `url::quirks` for the setters' exact web semantics.

use url::{Url, quirks};

use super::{arg_string, js_string, throw_type_error};

/// The component array of HOST.md, in order.
fn components(url: &Url) -> [String; 11] {
    [
        quirks::href(url).to_owned(),
        quirks::origin(url),
        quirks::protocol(url).to_owned(),
        quirks::username(url).to_owned(),
        quirks::password(url).to_owned(),
        quirks::host(url).to_owned(),
        quirks::hostname(url).to_owned(),
        quirks::port(url).to_owned(),
        quirks::pathname(url).to_owned(),
        quirks::search(url).to_owned(),
        quirks::hash(url).to_owned(),
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
    let parsed = if base.is_null_or_undefined() {
        Url::parse(&input)
    } else {
        let base = base.to_rust_string_lossy(scope);
        Url::parse(&base).and_then(|base| base.join(&input))
    };
    match parsed.ok().and_then(|url| to_js(scope, &url)) {
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
    let Ok(mut url) = Url::parse(&href) else {
        throw_type_error(scope, &format!("Invalid URL: {href}"));
        return;
    };
    // Setters other than href ignore invalid input, as the standard says.
    let _ = match part.as_str() {
        "href" => {
            if quirks::set_href(&mut url, &value).is_err() {
                throw_type_error(scope, &format!("Invalid URL: {value}"));
                return;
            }
            Ok(())
        }
        "protocol" => quirks::set_protocol(&mut url, &value),
        "username" => quirks::set_username(&mut url, &value),
        "password" => quirks::set_password(&mut url, &value),
        "host" => quirks::set_host(&mut url, &value),
        "hostname" => quirks::set_hostname(&mut url, &value),
        "port" => quirks::set_port(&mut url, &value),
        "pathname" => {
            quirks::set_pathname(&mut url, &value);
            Ok(())
        }
        "search" => {
            quirks::set_search(&mut url, &value);
            Ok(())
        }
        "hash" => {
            quirks::set_hash(&mut url, &value);
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
