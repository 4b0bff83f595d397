//! `host.urlPatternParse` and `host.urlPatternMatchInput`: the URL Pattern
//! Standard's parsing via the `urlpattern` crate (its `quirks` interface,
//! made for JS runtimes). The crate turns a pattern into one ECMAScript
//! regular expression per URL component; JS compiles and runs them with V8's
//! own `RegExp` (js/21_urlpattern.js), so matching has exactly the web's
//! regular-expression semantics.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use urlpattern::quirks::{self, EcmaRegexp, StringOrInit, UrlPatternComponent, UrlPatternInit};
use urlpattern::{RegexSyntax, UrlPatternOptions};

use isolane_engine::api::{HostError, HostResult, Unit, js_string};

/// `URLPattern`.
pub(crate) fn unit() -> Unit {
    Unit::new("urlpattern")
        .js(&["21_urlpattern.js"])
        .lazy_globals(&["URLPattern"])
        .function("urlPatternParse", url_pattern_parse)
        .function("urlPatternMatchInput", url_pattern_match_input)
}

/// The longest pattern or part of one (in UTF-16 code units) the host
/// accepts: URL patterns are short, and parsing one, and compiling its
/// regular expressions, grows faster than its length (30,000 `*` took
/// ~0.5 s of CPU that the watchdog cannot interrupt).
const MAX_PATTERN: usize = 8 * 1024;

/// The longest input matched against a pattern, or part of one: parsed in
/// linear time, matched by V8's (interruptible) regular expressions.
const MAX_INPUT: usize = 64 * 1024;

/// Why a URL pattern or its input was refused (thrown as a TypeError).
#[derive(Debug, thiserror::Error)]
enum PatternError {
    #[error("URLPattern: the pattern or input (or a part of it) is longer than {0} characters")]
    TooLong(usize),
    #[error("URLPattern: {0}")]
    Invalid(#[from] urlpattern::Error),
    #[error("URLPattern: the pattern could not be parsed")]
    Internal,
}

/// A constructor or match input from JS: a string, or the init dictionary
/// as `[protocol, username, password, hostname, port, pathname, search,
/// hash, baseURL]` (`undefined` for a missing member).
fn read_input(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
    max: usize,
) -> Result<StringOrInit<'static>, PatternError> {
    let Ok(parts) = v8::Local::<v8::Array>::try_from(value) else {
        let text = read_string(scope, value, max)?;
        return Ok(StringOrInit::String(Cow::Owned(text)));
    };
    let mut fields: [Option<String>; 9] = Default::default();
    for (i, field) in (0..9).zip(fields.iter_mut()) {
        let Some(part) = parts.get_index(scope, i) else {
            continue;
        };
        if !part.is_undefined() {
            *field = Some(read_string(scope, part, max)?);
        }
    }
    let [
        protocol,
        username,
        password,
        hostname,
        port,
        pathname,
        search,
        hash,
        base_url,
    ] = fields;
    Ok(StringOrInit::Init(UrlPatternInit {
        protocol,
        username,
        password,
        hostname,
        port,
        pathname,
        search,
        hash,
        base_url,
    }))
}

/// A string argument, refused past `max` before it is copied.
fn read_string(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
    max: usize,
) -> Result<String, PatternError> {
    let Some(text) = value.to_string(scope) else {
        return Err(PatternError::Internal);
    };
    if text.length() > max {
        return Err(PatternError::TooLong(max));
    }
    Ok(text.to_rust_string_lossy(scope))
}

/// An optional base URL argument (`undefined` or `null`: none).
fn read_base(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Result<Option<String>, PatternError> {
    if value.is_null_or_undefined() {
        return Ok(None);
    }
    read_string(scope, value, MAX_INPUT).map(Some)
}

/// Runs the crate's code, which must not unwind into V8.
fn guarded<T>(f: impl FnOnce() -> Result<T, urlpattern::Error>) -> Result<T, PatternError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.map_err(PatternError::from),
        Err(_) => Err(PatternError::Internal),
    }
}

host_fn! {
/// `urlPatternParse(input, baseURL, ignoreCase)` →
/// `[hasRegExpGroups, [pattern, regexp, [groupName…]] × 8]`, the components
/// in the order protocol, username, password, hostname, port, pathname,
/// search, hash; throws TypeError for an invalid pattern.
fn url_pattern_parse<'s>(
    scope,
    input: v8::Local<'s, v8::Value>,
    base: v8::Local<'s, v8::Value>,
    ignore_case: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let parsed = read_input(scope, input, MAX_PATTERN).and_then(|input| {
        let base = read_base(scope, base)?;
        let ignore_case = ignore_case.boolean_value(scope);
        guarded(|| {
            let init = quirks::process_construct_pattern_input(input, base.as_deref())?;
            let options = UrlPatternOptions {
                regex_syntax: RegexSyntax::EcmaScript,
                ignore_case,
            };
            quirks::parse_pattern::<EcmaRegexp>(init, options)
        })
    });
    let pattern = parsed.map_err(|error| HostError::type_error(error.to_string()))?;
    let components = [
        &pattern.protocol,
        &pattern.username,
        &pattern.password,
        &pattern.hostname,
        &pattern.port,
        &pattern.pathname,
        &pattern.search,
        &pattern.hash,
    ];
    let mut items = Vec::with_capacity(9);
    items.push(v8::Boolean::new(scope, pattern.has_regexp_groups).into());
    for component in components {
        let Some(item) = component_to_js(scope, component) else {
            return Ok(None);
        };
        items.push(item);
    }
    Ok(Some(v8::Array::new_with_elements(scope, &items)))
}
}

fn component_to_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    component: &UrlPatternComponent,
) -> Option<v8::Local<'s, v8::Value>> {
    let mut names = Vec::with_capacity(component.group_name_list.len());
    for name in &component.group_name_list {
        names.push(js_string(scope, name)?);
    }
    let names = v8::Array::new_with_elements(scope, &names).into();
    let pattern = js_string(scope, &component.pattern_string)?;
    let regexp = js_string(scope, &component.regexp_string)?;
    Some(v8::Array::new_with_elements(scope, &[pattern, regexp, names]).into())
}

host_fn! {
/// `urlPatternMatchInput(input, baseURL)` → the eight component strings of
/// what a pattern is matched against, or `null` when the input is no URL
/// (no match); throws TypeError for an init dictionary with a separate base.
fn url_pattern_match_input<'s>(
    scope,
    input: v8::Local<'s, v8::Value>,
    base: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let processed = read_input(scope, input, MAX_INPUT).and_then(|input| {
        let base = read_base(scope, base)?;
        guarded(|| {
            Ok(quirks::process_match_input(input, base.as_deref())?
                .and_then(|(input, _)| quirks::parse_match_input(input)))
        })
    });
    let input = match processed {
        Ok(Some(input)) => input,
        Ok(None) => return Ok(Some(v8::null(scope).into())),
        Err(error) => return Err(HostError::type_error(error.to_string())),
    };
    let parts = [
        &input.protocol,
        &input.username,
        &input.password,
        &input.hostname,
        &input.port,
        &input.pathname,
        &input.search,
        &input.hash,
    ];
    let mut items = Vec::with_capacity(8);
    for part in parts {
        let Some(item) = js_string(scope, part) else {
            return Ok(None);
        };
        items.push(item);
    }
    Ok(Some(v8::Array::new_with_elements(scope, &items).into()))
}
}
