//! `host.htmlRewriter*`: HTMLRewriter on Cloudflare's `lol_html`, one
//! [`Session`] (a coroutine running lol_html) per `transform()`d body. The
//! protocol with js/23_html_rewriter.js is in the engine's HOST.md
//! (`crates/engine/js/HOST.md`); why a coroutine is in
//! `html_rewriter/session.rs`.
//!
//! Memory: each session charges the worker's budget for its stack and for
//! the most lol_html may buffer ([`BUFFER_LIMIT`]; past it the rewrite fails),
//! plus the content handlers insert until it is emitted. Sessions belong to
//! the request that started them and end with it.

mod session;

use std::rc::Rc;

use encoding_rs::Encoding;
use lol_html::html_content::ContentType;
use lol_html::{AsciiCompatibleEncoding, Selector};

use isolane_engine::api::{
    HostError, HostResult, HostState, Owner, Unit, fits, js_string, u8_array, value_string,
};

use self::session::{Call, Input, Op, OpResult, Place, Registration, STACK_SIZE, Session, Yield};

/// The most lol_html may buffer for one rewrite (a token split across input
/// chunks: a start tag with its attributes, a comment, a doctype); a larger
/// one fails the rewrite.
pub(crate) const BUFFER_LIMIT: usize = 1024 * 1024;

/// `HTMLRewriter`.
pub(crate) fn unit() -> Unit {
    Unit::new("html_rewriter")
        .js(&["23_html_rewriter.js"])
        .lazy_globals(&["HTMLRewriter"])
        .function("htmlRewriterSelector", html_rewriter_selector)
        .function("htmlRewriterStart", html_rewriter_start)
        .function("htmlRewriterWrite", html_rewriter_write)
        .function("htmlRewriterEnd", html_rewriter_end)
        .function("htmlRewriterContinue", html_rewriter_continue)
        .function("htmlRewriterOp", html_rewriter_op)
        .function("htmlRewriterFree", html_rewriter_free)
}

/// A rewrite in flight, as the isolate's handle table holds it (owned by
/// the request that started it). The table charges its stack and buffer
/// limit, and the inserted content not yet emitted (`pending`).
struct Rewrite {
    session: Session,
    /// Bytes charged for inserted content not yet emitted.
    pending: usize,
}

/// Resumes rewrite `id` with `input`, and takes the output produced so far
/// when `drain` (an operation leaves it for the next step: what a
/// `DocumentEnd.append` writes goes straight to the output).
fn resume(host: &HostState, id: u32, input: Input, drain: bool) -> Result<(Yield, Vec<u8>), Step> {
    let stepped = host.handles().with(id, |rewrite: &mut Rewrite| {
        let result = rewrite.session.resume(input);
        let output = if drain || result.is_err() {
            rewrite.session.take_output()
        } else {
            Vec::new()
        };
        // What was inserted has been emitted (or dropped with its token).
        let emitted = if output.is_empty() {
            0
        } else {
            std::mem::take(&mut rewrite.pending)
        };
        (result, output, emitted)
    });
    let Some((result, output, emitted)) = stepped else {
        return Err(Step::Failed(
            "HTMLRewriter: this rewrite has ended".to_owned(),
        ));
    };
    host.handles().release(id, emitted);
    match result {
        Ok(value) => Ok((value, output)),
        Err(end) => {
            host.handles().remove(id);
            Err(match end {
                Ok(()) => Step::Finished(output),
                Err(message) => Step::Failed(message),
            })
        }
    }
}

/// Charges `len` bytes of inserted content to rewrite `id`; false over the
/// memory limit.
fn charge_pending(host: &HostState, id: u32, len: usize) -> bool {
    if !host.handles().charge(id, len) {
        return false;
    }
    host.handles()
        .with(id, |rewrite: &mut Rewrite| rewrite.pending += len);
    true
}

/// How a resume ended the session.
enum Step {
    Finished(Vec<u8>),
    Failed(String),
}

/// The longest selector accepted, in bytes: real selectors are far shorter,
/// and lol_html's parse and match work grows with it.
pub(crate) const MAX_SELECTOR: usize = 1024;

/// The deepest nesting of `(…)` and `[…]` in a selector: the selector parser
/// recurses into each level on the thread's stack, so a hostile selector
/// (`:not(:not(…))` a thousand deep) would overflow it and abort the process.
pub(crate) const MAX_SELECTOR_NESTING: usize = 16;

/// The most compound selectors one complex selector may chain with
/// combinators (`a b > c` has three): lol_html compiles and matches them
/// recursively on the rewrite's coroutine stack.
pub(crate) const MAX_SELECTOR_COMPOUNDS: usize = 32;

/// The most registrations (`on` and `onDocument` calls) one rewrite runs:
/// each element is matched against every selector.
pub(crate) const MAX_REGISTRATIONS: u32 = 256;

/// Refuses selectors nested deeper than `MAX_SELECTOR_NESTING` or chaining
/// more than `MAX_SELECTOR_COMPOUNDS` compounds (per item of a list), before
/// any parser recurses into them. Quoted strings are skipped.
fn check_shape(text: &str) -> Result<(), String> {
    let mut depth = 0_usize;
    let mut quote = None;
    let mut compounds = 1_usize;
    let mut in_combinator = false;
    let mut bytes = text.trim().bytes();
    while let Some(byte) = bytes.next() {
        if let Some(q) = quote {
            match byte {
                b'\\' => {
                    bytes.next();
                }
                _ if byte == q => quote = None,
                _ => {}
            }
            continue;
        }
        let combinator = depth == 0
            && matches!(
                byte,
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'>' | b'+' | b'~'
            );
        if combinator {
            if !in_combinator {
                compounds += 1;
                if compounds > MAX_SELECTOR_COMPOUNDS {
                    return Err(format!(
                        "HTMLRewriter: a selector may chain at most {MAX_SELECTOR_COMPOUNDS} compound selectors"
                    ));
                }
            }
            in_combinator = true;
            continue;
        }
        in_combinator = false;
        match byte {
            b'"' | b'\'' => quote = Some(byte),
            b'\\' => {
                bytes.next();
            }
            b'(' | b'[' => {
                depth += 1;
                if depth > MAX_SELECTOR_NESTING {
                    return Err(format!(
                        "HTMLRewriter: a selector may nest at most {MAX_SELECTOR_NESTING} levels of ( and ["
                    ));
                }
            }
            b')' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                compounds = 1;
                // The spaces after a list's comma are no combinator.
                in_combinator = true;
            }
            _ => {}
        }
    }
    Ok(())
}

fn parse_selector(text: &str) -> Result<Selector, String> {
    if text.len() > MAX_SELECTOR {
        return Err(format!(
            "HTMLRewriter: a selector may be at most {MAX_SELECTOR} bytes long"
        ));
    }
    check_shape(text)?;
    text.parse::<Selector>()
        .map_err(|e| format!("HTMLRewriter: invalid selector {text:?}: {e}"))
}

host_fn! {
/// `htmlRewriterSelector(selector)`: throws TypeError unless lol_html
/// supports `selector`.
fn html_rewriter_selector<'s>(_scope, text: String) -> HostResult<()> {
    parse_selector(&text)
        .map(drop)
        .map_err(HostError::type_error)
}
}

host_fn! {
/// `htmlRewriterStart(registrations, charset)` → session id. Each registration is
/// `[0, selector, element, comments, text]` or `[1, doctype, comments,
/// text, end]` (booleans: which handlers exist).
fn html_rewriter_start<'s>(
    scope,
    host: Rc<HostState>,
    registrations: v8::Local<'s, v8::Value>,
    charset: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Integer>>> {
    let registrations = read_registrations(scope, registrations).map_err(HostError::type_error)?;
    let encoding = read_encoding(scope, charset).map_err(HostError::type_error)?;
    let fixed = STACK_SIZE + BUFFER_LIMIT;
    // Over the limit the isolate is being terminated (see `memory.rs`):
    // checked before the coroutine's stack is allocated, charged by the
    // handle table once the session exists (nothing runs in between).
    if !fits(scope, fixed) {
        return Ok(None);
    }
    let session = Session::new(registrations, BUFFER_LIMIT, encoding)
        .map_err(|error| HostError::type_error(error.to_string()))?;
    let rewrite = Rewrite {
        session,
        pending: 0,
    };
    let owner = Owner::request(host.current());
    let Some(id) = host.handles().insert(rewrite, fixed, owner) else {
        return Ok(None);
    };
    Ok(Some(v8::Integer::new_from_unsigned(scope, id)))
}
}

/// The document's encoding from a `charset` label (`null`: UTF-8). An
/// unknown label means UTF-8, as for a page without one; an encoding
/// lol_html cannot rewrite in (UTF-16, ISO-2022-JP…) is refused.
fn read_encoding(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Result<AsciiCompatibleEncoding, String> {
    let utf8 = || AsciiCompatibleEncoding::utf_8();
    if value.is_null_or_undefined() {
        return Ok(utf8());
    }
    let label = value.to_rust_string_lossy(scope);
    let Some(encoding) = Encoding::for_label(label.as_bytes()) else {
        return Ok(utf8());
    };
    AsciiCompatibleEncoding::new(encoding).ok_or_else(|| {
        format!(
            "HTMLRewriter: cannot rewrite a document encoded in {}",
            encoding.name()
        )
    })
}

fn read_registrations(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Result<Vec<Registration>, String> {
    let list = v8::Local::<v8::Array>::try_from(value)
        .map_err(|_| "htmlRewriterStart: registrations must be an array".to_owned())?;
    if list.length() > MAX_REGISTRATIONS {
        return Err(format!(
            "HTMLRewriter: a rewriter may have at most {MAX_REGISTRATIONS} handlers (on and onDocument calls)"
        ));
    }
    let mut registrations = Vec::with_capacity(list.length() as usize);
    for i in 0..list.length() {
        let item = list
            .get_index(scope, i)
            .and_then(|v| v8::Local::<v8::Array>::try_from(v).ok())
            .ok_or("htmlRewriterStart: a registration must be an array")?;
        let flag = |scope: &mut v8::PinScope<'_, '_>, at: u32| {
            item.get_index(scope, at)
                .is_some_and(|v| v.boolean_value(scope))
        };
        let kind = item
            .get_index(scope, 0)
            .and_then(|v| v.uint32_value(scope))
            .unwrap_or(u32::MAX);
        let registration = match kind {
            0 => {
                let selector = item
                    .get_index(scope, 1)
                    .map(|v| v.to_rust_string_lossy(scope))
                    .unwrap_or_default();
                Registration::Element {
                    selector: parse_selector(&selector)?,
                    element: flag(scope, 2),
                    comments: flag(scope, 3),
                    text: flag(scope, 4),
                }
            }
            1 => Registration::Document {
                doctype: flag(scope, 1),
                comments: flag(scope, 2),
                text: flag(scope, 3),
                end: flag(scope, 4),
            },
            _ => return Err("htmlRewriterStart: unknown registration kind".to_owned()),
        };
        registrations.push(registration);
    }
    Ok(registrations)
}

host_fn! {
/// `htmlRewriterWrite(id, u8)` → `[output, call]`.
fn html_rewriter_write<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    bytes: Option<Vec<u8>>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    step(scope, &host, id, Input::Write(bytes.unwrap_or_default()))
}
}

host_fn! {
/// `htmlRewriterEnd(id)` → `[output, call]`; `call` null: the rewrite is done.
fn html_rewriter_end<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    step(scope, &host, id, Input::End)
}
}

host_fn! {
/// `htmlRewriterContinue(id, error)` → `[output, call]`: the handler of the
/// last call finished (`error` null) or failed (its message).
fn html_rewriter_continue<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    error: Option<String>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let input = match error {
        None => Input::Continue,
        Some(message) => Input::Fail(message),
    };
    step(scope, &host, id, input)
}
}

host_fn! {
/// `htmlRewriterFree(id)`: the rewrite is abandoned.
fn html_rewriter_free<'s>(_scope, host: Rc<HostState>, id: u32) {
    host.handles().remove(id);
}
}

/// Resumes a session until it wants input, calls a handler, or ends.
fn step<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    id: u32,
    input: Input,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let (call, output) = match resume(host, id, input, true) {
        Ok((Yield::Call(call), output)) => (Some(call), output),
        Ok((Yield::NeedInput, output)) | Err(Step::Finished(output)) => (None, output),
        Ok((Yield::Done(_), _)) => {
            host.handles().remove(id);
            return Err(HostError::type_error("HTMLRewriter: out-of-order call"));
        }
        Err(Step::Failed(message)) => return Err(HostError::type_error(message)),
    };
    let output: v8::Local<v8::Value> = if output.is_empty() {
        v8::null(scope).into()
    } else {
        match u8_array(scope, output) {
            Some(array) => array.into(),
            // Over the memory limit: the isolate is being terminated.
            None => return Ok(None),
        }
    };
    let call: v8::Local<v8::Value> = match call {
        None => v8::null(scope).into(),
        Some(call) => match call_to_js(scope, call) {
            Some(call) => call,
            None => return Ok(None),
        },
    };
    Ok(Some(v8::Array::new_with_elements(scope, &[output, call])))
}

fn call_to_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    call: Call,
) -> Option<v8::Local<'s, v8::Value>> {
    let number = |scope: &mut v8::PinScope<'s, '_>, n: u32| -> v8::Local<'s, v8::Value> {
        v8::Integer::new_from_unsigned(scope, n).into()
    };
    let maybe =
        |scope: &mut v8::PinScope<'s, '_>, s: Option<String>| -> Option<v8::Local<'s, v8::Value>> {
            match s {
                Some(s) => js_string(scope, &s),
                None => Some(v8::null(scope).into()),
            }
        };
    let items: Vec<v8::Local<v8::Value>> = match call {
        Call::Element { handler } => vec![js_string(scope, "element")?, number(scope, handler)],
        Call::Comment { handler, text } => vec![
            js_string(scope, "comments")?,
            number(scope, handler),
            js_string(scope, &text)?,
        ],
        Call::Text {
            handler,
            text,
            last,
        } => vec![
            js_string(scope, "text")?,
            number(scope, handler),
            js_string(scope, &text)?,
            v8::Boolean::new(scope, last).into(),
        ],
        Call::Doctype {
            handler,
            name,
            public_id,
            system_id,
        } => vec![
            js_string(scope, "doctype")?,
            number(scope, handler),
            maybe(scope, name)?,
            maybe(scope, public_id)?,
            maybe(scope, system_id)?,
        ],
        Call::DocumentEnd { handler } => vec![js_string(scope, "end")?, number(scope, handler)],
        Call::EndTag { tag, name } => vec![
            js_string(scope, "endTag")?,
            number(scope, tag),
            js_string(scope, &name)?,
        ],
    };
    Some(v8::Array::new_with_elements(scope, &items).into())
}

host_fn! {
/// `htmlRewriterOp(id, op, a, b)` → the operation's result, applied to the
/// token whose handler is running; throws TypeError when it fails.
fn html_rewriter_op<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    name: String,
    a: v8::Local<'s, v8::Value>,
    b: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let Some(op) = read_op(scope, &name, a, b) else {
        return Err(HostError::type_error(format!(
            "htmlRewriterOp: unknown operation {name:?}"
        )));
    };
    if let Op::Insert(_, content, _) = &op
        && !charge_pending(&host, id, content.len())
    {
        // Over the memory limit: the isolate is being terminated.
        return Ok(None);
    }
    let result = match resume(&host, id, Input::Op(op), false) {
        Ok((Yield::Done(result), _)) => result,
        Ok(_) => {
            host.handles().remove(id);
            OpResult::Error("HTMLRewriter: this content token is no longer valid".to_owned())
        }
        Err(Step::Finished(_)) => OpResult::Error("HTMLRewriter: the rewrite has ended".to_owned()),
        Err(Step::Failed(message)) => OpResult::Error(message),
    };
    op_result_js(scope, result)
}
}

/// An operation's result for JavaScript.
fn op_result_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    result: OpResult,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    Ok(match result {
        OpResult::Nothing => Some(v8::undefined(scope).into()),
        OpResult::Bool(b) => Some(v8::Boolean::new(scope, b).into()),
        OpResult::Text(s) | OpResult::MaybeText(Some(s)) => js_string(scope, &s),
        OpResult::MaybeText(None) => Some(v8::null(scope).into()),
        OpResult::Pairs(pairs) => {
            let mut items = Vec::with_capacity(pairs.len());
            for (name, value) in pairs {
                let (Some(name), Some(value)) = (js_string(scope, &name), js_string(scope, &value))
                else {
                    return Ok(None);
                };
                items.push(v8::Array::new_with_elements(scope, &[name, value]).into());
            }
            Some(v8::Array::new_with_elements(scope, &items).into())
        }
        OpResult::Error(message) => return Err(HostError::type_error(message)),
    })
}

fn read_op(
    scope: &mut v8::PinScope<'_, '_>,
    name: &str,
    a_value: v8::Local<'_, v8::Value>,
    b_value: v8::Local<'_, v8::Value>,
) -> Option<Op> {
    let a = |scope: &mut v8::PinScope<'_, '_>| value_string(scope, a_value);
    let kind = |scope: &mut v8::PinScope<'_, '_>| {
        if b_value.boolean_value(scope) {
            ContentType::Html
        } else {
            ContentType::Text
        }
    };
    let insert = |scope: &mut v8::PinScope<'_, '_>, place: Place| {
        Some(Op::Insert(place, a(scope), kind(scope)))
    };
    match name {
        "tagName" => Some(Op::TagName),
        "setTagName" => Some(Op::SetTagName(a(scope))),
        "attributes" => Some(Op::Attributes),
        "getAttribute" => Some(Op::GetAttribute(a(scope))),
        "hasAttribute" => Some(Op::HasAttribute(a(scope))),
        "setAttribute" => {
            let name = a(scope);
            let value = value_string(scope, b_value);
            Some(Op::SetAttribute(name, value))
        }
        "removeAttribute" => Some(Op::RemoveAttribute(a(scope))),
        "namespaceURI" => Some(Op::NamespaceUri),
        "removed" => Some(Op::Removed),
        "selfClosing" => Some(Op::SelfClosing),
        "canHaveContent" => Some(Op::CanHaveContent),
        "before" => insert(scope, Place::Before),
        "after" => insert(scope, Place::After),
        "prepend" => insert(scope, Place::Prepend),
        "append" => insert(scope, Place::Append),
        "replace" => insert(scope, Place::Replace),
        "setInnerContent" => insert(scope, Place::Inner),
        "remove" => Some(Op::Remove),
        "removeAndKeepContent" => Some(Op::RemoveAndKeepContent),
        "onEndTag" => Some(Op::OnEndTag(a_value.uint32_value(scope).unwrap_or(0))),
        "setText" => Some(Op::SetText(a(scope))),
        "setName" => Some(Op::SetName(a(scope))),
        _ => None,
    }
}
