//! `host.htmlRewriter*`: HTMLRewriter on Cloudflare's `lol_html`, one
//! [`Session`] (a coroutine running lol_html) per `transform()`d body. The
//! protocol with js/23_html_rewriter.js is in HOST.md; why a coroutine is in
//! `html_rewriter/session.rs`.
//!
//! Memory: each session charges the worker's budget for its stack and for
//! the most lol_html may buffer ([`BUFFER_LIMIT`]; past it the rewrite fails),
//! plus the content handlers insert until it is emitted. Sessions belong to
//! the request that started them and end with it.

mod session;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use encoding_rs::Encoding;
use lol_html::html_content::ContentType;
use lol_html::{AsciiCompatibleEncoding, Selector};

use self::session::{Call, Input, Op, OpResult, Place, Registration, STACK_SIZE, Session, Yield};
use super::{HostState, arg_string, arg_u32, js_string, throw_type_error, u8_array, view_bytes};
use crate::memory::Memory;

/// The most lol_html may buffer for one rewrite (a token split across input
/// chunks: a start tag with its attributes, a comment, a doctype); a larger
/// one fails the rewrite.
pub(crate) const BUFFER_LIMIT: usize = 1024 * 1024;

/// The rewrites in flight in one isolate.
#[derive(Default)]
pub(crate) struct Rewriters {
    sessions: RefCell<HashMap<u32, Entry>>,
    next: Cell<u32>,
}

struct Entry {
    ctx: u32,
    session: Session,
    memory: Arc<Memory>,
    /// Bytes charged for the session itself (stack and buffer limit).
    fixed: usize,
    /// Bytes charged for inserted content not yet emitted.
    pending: usize,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.memory.release(self.fixed + self.pending);
    }
}

impl Rewriters {
    /// Ends the sessions of request `ctx` (every session when `None`).
    pub(crate) fn drop_for(&self, ctx: Option<u32>) {
        let ended: Vec<Entry> = {
            let mut sessions = self.sessions.borrow_mut();
            let ids: Vec<u32> = sessions
                .iter()
                .filter(|(_, e)| ctx.is_none_or(|c| c == e.ctx))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| sessions.remove(&id))
                .collect()
        };
        // Dropped outside the borrow: unwinding a suspended coroutine runs
        // lol_html's destructors.
        drop(ended);
    }

    /// Resumes session `id` with `input`, and takes the output produced so
    /// far when `drain` (an operation leaves it for the next step: what a
    /// `DocumentEnd.append` writes goes straight to the output).
    fn resume(&self, id: u32, input: Input, drain: bool) -> Result<(Yield, Vec<u8>), Step> {
        let mut sessions = self.sessions.borrow_mut();
        let Some(entry) = sessions.get_mut(&id) else {
            return Err(Step::Failed(
                "HTMLRewriter: this rewrite has ended".to_owned(),
            ));
        };
        let result = entry.session.resume(input);
        let output = if drain || result.is_err() {
            entry.session.take_output()
        } else {
            Vec::new()
        };
        if !output.is_empty() {
            // What was inserted has been emitted (or dropped with its token).
            entry.memory.release(entry.pending);
            entry.pending = 0;
        }
        match result {
            Ok(value) => Ok((value, output)),
            Err(end) => {
                let entry = sessions.remove(&id);
                drop(sessions);
                drop(entry);
                Err(match end {
                    Ok(()) => Step::Finished(output),
                    Err(message) => Step::Failed(message),
                })
            }
        }
    }

    /// Charges `len` bytes of inserted content to session `id`.
    fn charge_pending(&self, id: u32, len: usize) -> bool {
        let mut sessions = self.sessions.borrow_mut();
        let Some(entry) = sessions.get_mut(&id) else {
            return true;
        };
        if entry.memory.charge(len).is_err() {
            return false;
        }
        entry.pending += len;
        true
    }
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

/// `htmlRewriterSelector(selector)`: throws TypeError unless lol_html
/// supports `selector`.
pub(super) fn html_rewriter_selector(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let text = arg_string(scope, &args, 0);
    if let Err(message) = parse_selector(&text) {
        throw_type_error(scope, &message);
    }
}

/// `htmlRewriterStart(registrations, charset)` → session id. Each registration is
/// `[0, selector, element, comments, text]` or `[1, doctype, comments,
/// text, end]` (booleans: which handlers exist).
pub(super) fn html_rewriter_start(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let registrations = match read_registrations(scope, args.get(0)) {
        Ok(registrations) => registrations,
        Err(message) => {
            throw_type_error(scope, &message);
            return;
        }
    };
    let encoding = match read_encoding(scope, args.get(1)) {
        Ok(encoding) => encoding,
        Err(message) => {
            throw_type_error(scope, &message);
            return;
        }
    };
    let fixed = STACK_SIZE + BUFFER_LIMIT;
    // Over the limit the isolate is being terminated (see `memory.rs`).
    if host.memory.charge(fixed).is_err() {
        return;
    }
    let session = match Session::new(registrations, BUFFER_LIMIT, encoding) {
        Ok(session) => session,
        Err(error) => {
            host.memory.release(fixed);
            throw_type_error(scope, &error.to_string());
            return;
        }
    };
    let rewriters = &host.rewriters;
    let id = rewriters.next.get().wrapping_add(1).max(1);
    rewriters.next.set(id);
    rewriters.sessions.borrow_mut().insert(
        id,
        Entry {
            ctx: host.current(),
            session,
            memory: host.memory.clone(),
            fixed,
            pending: 0,
        },
    );
    rv.set(v8::Integer::new_from_unsigned(scope, id).into());
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

/// `htmlRewriterWrite(id, u8)` → `[output, call]`.
pub(super) fn html_rewriter_write(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    let bytes = view_bytes(args.get(1)).unwrap_or_default();
    step(scope, rv, id, Input::Write(bytes));
}

/// `htmlRewriterEnd(id)` → `[output, call]`; `call` null: the rewrite is done.
pub(super) fn html_rewriter_end(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    step(scope, rv, id, Input::End);
}

/// `htmlRewriterContinue(id, error)` → `[output, call]`: the handler of the
/// last call finished (`error` null) or failed (its message).
pub(super) fn html_rewriter_continue(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    let error = args.get(1);
    let input = if error.is_null_or_undefined() {
        Input::Continue
    } else {
        Input::Fail(error.to_rust_string_lossy(scope))
    };
    step(scope, rv, id, input);
}

/// `htmlRewriterFree(id)`: the rewrite is abandoned.
pub(super) fn html_rewriter_free(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    if let Some(host) = HostState::get(scope) {
        let entry = host.rewriters.sessions.borrow_mut().remove(&id);
        drop(entry);
    }
}

/// Resumes a session until it wants input, calls a handler, or ends.
fn step(
    scope: &mut v8::PinScope<'_, '_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
    id: u32,
    input: Input,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let (call, output) = match host.rewriters.resume(id, input, true) {
        Ok((Yield::Call(call), output)) => (Some(call), output),
        Ok((Yield::NeedInput, output)) | Err(Step::Finished(output)) => (None, output),
        Ok((Yield::Done(_), _)) => {
            host.rewriters.drop_for_id(id);
            throw_type_error(scope, "HTMLRewriter: out-of-order call");
            return;
        }
        Err(Step::Failed(message)) => {
            throw_type_error(scope, &message);
            return;
        }
    };
    let output: v8::Local<v8::Value> = if output.is_empty() {
        v8::null(scope).into()
    } else {
        match u8_array(scope, output) {
            Some(array) => array.into(),
            // Over the memory limit: the isolate is being terminated.
            None => return,
        }
    };
    let call: v8::Local<v8::Value> = match call {
        None => v8::null(scope).into(),
        Some(call) => match call_to_js(scope, call) {
            Some(call) => call,
            None => return,
        },
    };
    rv.set(v8::Array::new_with_elements(scope, &[output, call]).into());
}

impl Rewriters {
    fn drop_for_id(&self, id: u32) {
        let entry = self.sessions.borrow_mut().remove(&id);
        drop(entry);
    }
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

/// `htmlRewriterOp(id, op, a, b)` → the operation's result, applied to the
/// token whose handler is running; throws TypeError when it fails.
pub(super) fn html_rewriter_op(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let id = arg_u32(scope, &args, 0);
    let name = arg_string(scope, &args, 1);
    let Some(op) = read_op(scope, &args, &name) else {
        throw_type_error(
            scope,
            &format!("htmlRewriterOp: unknown operation {name:?}"),
        );
        return;
    };
    if let Op::Insert(_, content, _) = &op
        && !host.rewriters.charge_pending(id, content.len())
    {
        // Over the memory limit: the isolate is being terminated.
        return;
    }
    let result = match host.rewriters.resume(id, Input::Op(op), false) {
        Ok((Yield::Done(result), _)) => result,
        Ok(_) => {
            host.rewriters.drop_for_id(id);
            OpResult::Error("HTMLRewriter: this content token is no longer valid".to_owned())
        }
        Err(Step::Finished(_)) => OpResult::Error("HTMLRewriter: the rewrite has ended".to_owned()),
        Err(Step::Failed(message)) => OpResult::Error(message),
    };
    match result {
        OpResult::Nothing => rv.set_undefined(),
        OpResult::Bool(b) => rv.set_bool(b),
        OpResult::Text(s) => {
            if let Some(s) = js_string(scope, &s) {
                rv.set(s);
            }
        }
        OpResult::MaybeText(None) => rv.set_null(),
        OpResult::MaybeText(Some(s)) => {
            if let Some(s) = js_string(scope, &s) {
                rv.set(s);
            }
        }
        OpResult::Pairs(pairs) => {
            let mut items = Vec::with_capacity(pairs.len());
            for (name, value) in pairs {
                let (Some(name), Some(value)) = (js_string(scope, &name), js_string(scope, &value))
                else {
                    return;
                };
                items.push(v8::Array::new_with_elements(scope, &[name, value]).into());
            }
            rv.set(v8::Array::new_with_elements(scope, &items).into());
        }
        OpResult::Error(message) => throw_type_error(scope, &message),
    }
}

fn read_op(
    scope: &mut v8::PinScope<'_, '_>,
    args: &v8::FunctionCallbackArguments<'_>,
    name: &str,
) -> Option<Op> {
    let a = |scope: &mut v8::PinScope<'_, '_>| arg_string(scope, args, 2);
    let kind = |scope: &mut v8::PinScope<'_, '_>| {
        if args.get(3).boolean_value(scope) {
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
            let value = arg_string(scope, args, 3);
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
        "onEndTag" => Some(Op::OnEndTag(arg_u32(scope, args, 2))),
        "setText" => Some(Op::SetText(a(scope))),
        "setName" => Some(Op::SetName(a(scope))),
        _ => None,
    }
}
