//! Header lists across the host boundary. Every list, either way, is one flat
//! array `[name, value, name, value, …]` (HOST.md), never one array per
//! header: each array V8 makes or reads through the API costs hundreds of
//! instructions, and a request's headers cross it once in and once out.

use std::cell::{Cell, RefCell};

use http::{HeaderMap, HeaderName, HeaderValue};

use super::HostState;
use crate::unit::Unit;

/// `Headers` (`isolane-fetch-api`'s file), with nothing native of its own:
/// header lists cross the boundary flat (this file).
pub(super) fn unit() -> Unit {
    Unit::new("headers").js(&["07_headers.js"])
}

/// Request and Response (`isolane-fetch-api`'s files), which the core makes
/// and answers for every request it runs (`fetch()` is `isolane-web`'s);
/// each isolate keeps the header names it has made as V8 strings
/// ([`HeaderNames`]).
pub(super) fn bodies() -> Unit {
    Unit::new("request")
        .js(&["10_body.js", "11_request.js", "12_response.js"])
        .state::<HeaderNames>()
}

/// A header list from JS, each pair given to `each`: the name parsed (`Err`
/// holds it as text when it is not a valid name) and the value as bytes.
/// ASCII strings (nearly all) are read in place, others as UTF-8 (lossy). A
/// list of odd length drops its last, unpaired item; anything not an array
/// is empty.
fn for_each_pair(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
    mut each: impl FnMut(Result<HeaderName, String>, &[u8]),
) {
    let Ok(array) = v8::Local::<v8::Array>::try_from(value) else {
        return;
    };
    for i in 0..array.length() / 2 {
        let (Some(name), Some(value)) = (
            array.get_index(scope, 2 * i),
            array.get_index(scope, 2 * i + 1),
        ) else {
            continue;
        };
        // Items are strings (the runtime's lists are); anything else is
        // converted as `String(item)` would.
        let (Some(name), Some(value)) = (name.to_string(scope), value.to_string(scope)) else {
            continue;
        };
        // A view may flatten its string (an allocation, so perhaps a GC that
        // moves strings), and no GC may happen while a view is alive: one
        // view at a time, and only plain Rust while it lives.
        let name = {
            let view = v8::ValueView::new(scope, name);
            let text = view.to_cow_lossy();
            HeaderName::from_bytes(text.as_bytes()).map_err(|_| text.into_owned())
        };
        let view = v8::ValueView::new(scope, value);
        each(name, view.to_cow_lossy().as_bytes());
    }
}

/// A header list from JS as a header map, skipping any pair that is not a
/// valid header (`host.respond`: the runtime's `Headers` validated them).
pub fn lenient_header_map(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for_each_pair(scope, value, |name, value| {
        if let (Ok(name), Ok(value)) = (name, HeaderValue::from_bytes(value)) {
            headers.append(name, value);
        }
    });
    headers
}

/// A header list from JS as a header map; `Err` names the first pair that is
/// not a valid header.
pub fn header_map(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    let mut invalid = None;
    for_each_pair(scope, value, |name, value| {
        if invalid.is_some() {
            return;
        }
        match (name, HeaderValue::from_bytes(value)) {
            (Ok(name), Ok(value)) => {
                headers.append(name, value);
            }
            (Ok(name), Err(_)) => invalid = Some(name.as_str().to_owned()),
            (Err(name), _) => invalid = Some(name),
        }
    });
    match invalid {
        None => Ok(headers),
        Some(name) => Err(format!("invalid header {name:?}")),
    }
}

/// A header map to JS as a flat list. Names come from the isolate's
/// [`HeaderNames`]; a visible-ASCII value (nearly all) is made without UTF-8
/// decoding.
pub fn header_array<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    headers: &HeaderMap,
) -> v8::Local<'s, v8::Array> {
    let host = HostState::get(scope);
    let names = host.as_ref().and_then(|h| h.state::<HeaderNames>());
    let mut items = Vec::with_capacity(2 * headers.len());
    for (name, value) in headers {
        let name = match names {
            Some(names) => names.get(scope, name),
            None => HeaderNames::make(scope, name),
        };
        let value = match value.to_str() {
            Ok(text) => {
                v8::String::new_from_one_byte(scope, text.as_bytes(), v8::NewStringType::Normal)
            }
            Err(_) => v8::String::new(scope, &String::from_utf8_lossy(value.as_bytes())),
        };
        if let (Some(name), Some(value)) = (name, value) {
            items.push(name.into());
            items.push(value.into());
        }
    }
    v8::Array::new_with_elements(scope, &items)
}

/// A request's headers to JS as one string, `name\0value\0name\0value`
/// (no header name or value can hold a NUL): one string is far cheaper to
/// make than a list of them, and the runtime splits it into the flat list
/// only when the Worker first reads `request.headers` (many never do).
pub(crate) fn header_block<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    headers: &HeaderMap,
) -> Option<v8::Local<'s, v8::String>> {
    let mut block = Vec::with_capacity(64 * headers.len());
    // Visible ASCII (nearly always): the bytes are the string. Other bytes
    // in a value are read as UTF-8 (lossy), as `header_array` does.
    let mut ascii = true;
    for (name, value) in headers {
        if !block.is_empty() {
            block.push(0);
        }
        block.extend_from_slice(name.as_str().as_bytes());
        block.push(0);
        match value.to_str() {
            Ok(text) => block.extend_from_slice(text.as_bytes()),
            Err(_) => {
                ascii = false;
                block.extend_from_slice(String::from_utf8_lossy(value.as_bytes()).as_bytes());
            }
        }
    }
    if ascii {
        v8::String::new_from_one_byte(scope, &block, v8::NewStringType::Normal)
    } else {
        v8::String::new_from_utf8(scope, &block, v8::NewStringType::Normal)
    }
}

/// The header names this isolate has made, as internalized V8 strings, so a
/// request's names are not made (hashed, looked up in V8's string table)
/// anew each time. JS keys a `Headers` map by them, and an internalized key
/// is found without a string-table lookup of its own.
///
/// At most [`CAPACITY`] names are kept, the first seen: a client that sends
/// many made-up names fills it once and later names are made each time, as
/// without it. A request's names usually come in the order of the last
/// request's, so each search starts after the last name found.
#[derive(Default)]
pub(crate) struct HeaderNames {
    names: RefCell<Vec<(HeaderName, v8::Global<v8::String>)>>,
    next: Cell<usize>,
}

/// How many names an isolate keeps.
const CAPACITY: usize = 64;

impl HeaderNames {
    /// `name` as a V8 string.
    pub(crate) fn get<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        name: &HeaderName,
    ) -> Option<v8::Local<'s, v8::String>> {
        {
            let names = self.names.borrow();
            let start = self.next.get().min(names.len());
            let (after, before) = names.split_at(start);
            let found = before
                .iter()
                .position(|(known, _)| known == name)
                .map(|i| start + i)
                .or_else(|| after.iter().position(|(known, _)| known == name));
            if let Some(i) = found {
                self.next.set(i + 1);
                return Some(v8::Local::new(scope, &names[i].1));
            }
        }
        let string = Self::make(scope, name)?;
        let mut names = self.names.borrow_mut();
        if names.len() < CAPACITY {
            names.push((name.clone(), v8::Global::new(scope, string)));
            self.next.set(names.len());
        }
        Some(string)
    }

    /// `name` as a new internalized V8 string.
    fn make<'s>(
        scope: &mut v8::PinScope<'s, '_>,
        name: &HeaderName,
    ) -> Option<v8::Local<'s, v8::String>> {
        v8::String::new_from_one_byte(
            scope,
            name.as_str().as_bytes(),
            v8::NewStringType::Internalized,
        )
    }
}
