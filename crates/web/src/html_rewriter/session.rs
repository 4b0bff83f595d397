//! One HTMLRewriter run: `lol_html` on a coroutine stack of its own.
//!
//! lol_html calls content handlers synchronously from inside `write`, but a
//! worker's handler may return a promise, and the rewrite must then wait for
//! it. So the rewriter runs on a coroutine ([`corosensei`]): a handler
//! closure suspends the coroutine with a [`Call`] and the host function that
//! resumed it returns to JavaScript, which runs the worker's handler. While
//! it runs (synchronously or across awaits), each method it calls on the
//! token (`element.setAttribute(…)`) resumes the coroutine with an [`Op`],
//! applied to the live lol_html token, whose result comes back as
//! [`Yield::Done`]. When the handler (and its promise) is done, JS resumes
//! with [`Input::Continue`] and lol_html goes on.
//!
//! V8 is never entered on the coroutine's stack (V8 checks the stack it
//! runs on): only lol_html and the token operations run there; every call
//! into JavaScript happens on the thread's own stack, between resumes.

use std::cell::{Cell, RefCell};
use std::error::Error as StdError;
use std::rc::Rc;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use lol_html::errors::RewritingError;
use lol_html::html_content::{
    Comment, ContentType, Doctype, DocumentEnd, Element, EndTag, TextChunk,
};
use lol_html::{
    AsciiCompatibleEncoding, DocumentContentHandlers, ElementContentHandlers, HandlerResult,
    HtmlRewriter, MemorySettings, Selector, Settings,
};

/// What the host hands the coroutine.
pub(crate) enum Input {
    /// A chunk of the document.
    Write(Vec<u8>),
    /// The document is complete.
    End,
    /// An operation on the token whose handler is running.
    Op(Op),
    /// The worker's handler finished: lol_html goes on.
    Continue,
    /// The worker's handler threw (or its promise rejected): the rewrite fails.
    Fail(String),
}

/// What the coroutine hands back while it is suspended.
pub(crate) enum Yield {
    /// A worker's handler is to run on a token.
    Call(Call),
    /// The result of an [`Op`].
    Done(OpResult),
    /// The chunk was processed: the rewriter wants the next one.
    NeedInput,
}

/// How a run ends: `Err` carries the rewrite's error message.
pub(crate) type Return = Result<(), String>;

/// A handler to run. `handler` indexes the worker's registrations (`on` and
/// `onDocument`, in order); `tag` names an `onEndTag` callback.
pub(crate) enum Call {
    Element {
        handler: u32,
    },
    Comment {
        handler: u32,
        text: String,
    },
    Text {
        handler: u32,
        text: String,
        last: bool,
    },
    Doctype {
        handler: u32,
        name: Option<String>,
        public_id: Option<String>,
        system_id: Option<String>,
    },
    DocumentEnd {
        handler: u32,
    },
    EndTag {
        tag: u32,
        name: String,
    },
}

/// Where inserted content goes.
#[derive(Clone, Copy)]
pub(crate) enum Place {
    Before,
    After,
    Prepend,
    Append,
    Replace,
    Inner,
}

/// An operation on the current token (JS token methods, HOST.md).
pub(crate) enum Op {
    TagName,
    SetTagName(String),
    Attributes,
    GetAttribute(String),
    HasAttribute(String),
    SetAttribute(String, String),
    RemoveAttribute(String),
    NamespaceUri,
    Removed,
    SelfClosing,
    CanHaveContent,
    Insert(Place, String, ContentType),
    Remove,
    RemoveAndKeepContent,
    OnEndTag(u32),
    SetText(String),
    SetName(String),
}

/// An [`Op`]'s answer.
pub(crate) enum OpResult {
    Nothing,
    Bool(bool),
    Text(String),
    MaybeText(Option<String>),
    Pairs(Vec<(String, String)>),
    /// Thrown in JS as a TypeError.
    Error(String),
}

/// What the worker registered, in order: element handlers by selector, and
/// document handlers. The flags say which kinds of token it wants.
pub(crate) enum Registration {
    Element {
        selector: Selector,
        element: bool,
        comments: bool,
        text: bool,
    },
    Document {
        doctype: bool,
        comments: bool,
        text: bool,
        end: bool,
    },
}

/// The coroutine's stack: lol_html parses and matches there; 256 KiB leaves
/// a wide margin (it does not recurse on the document's nesting).
pub(crate) const STACK_SIZE: usize = 256 * 1024;

type Run = Coroutine<Input, Yield, Return, DefaultStack>;

/// A rewrite in progress: its coroutine and the output it produced so far.
pub(crate) struct Session {
    run: Run,
    output: Rc<RefCell<Vec<u8>>>,
    /// Set once the coroutine returned (or panicked): no more resumes.
    finished: bool,
}

/// The coroutine's yielder, reachable from handler closures that lol_html
/// requires to be `'static` (`onEndTag`).
struct Bridge {
    yielder: Cell<*const Yielder<Input, Yield>>,
}

impl Bridge {
    fn suspend(&self, value: Yield) -> Input {
        let yielder = self.yielder.get();
        // SAFETY: set at the start of the coroutine's body to the body's own
        // yielder, which lives until the body returns. Every closure that
        // calls this is owned by the `HtmlRewriter` made and dropped inside
        // that body, and lol_html calls them only from `write`/`end`, i.e. on
        // the coroutine's stack while the body runs.
        unsafe { (*yielder).suspend(value) }
    }
}

/// Why a session could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("HTMLRewriter: could not allocate the rewriter's stack")]
    Stack(#[source] std::io::Error),
}

// === impl Session ===

impl Session {
    /// A rewriter for `registrations`, its buffers capped at `memory_limit`
    /// bytes (lol_html fails the rewrite past it).
    pub(crate) fn new(
        registrations: Vec<Registration>,
        memory_limit: usize,
        encoding: AsciiCompatibleEncoding,
    ) -> Result<Self, SessionError> {
        let stack = DefaultStack::new(STACK_SIZE).map_err(SessionError::Stack)?;
        let output = Rc::new(RefCell::new(Vec::new()));
        let sink = output.clone();
        let run = Coroutine::with_stack(
            stack,
            move |yielder: &Yielder<Input, Yield>, first: Input| {
                let bridge = Rc::new(Bridge {
                    yielder: Cell::new(std::ptr::from_ref(yielder)),
                });
                let settings =
                    settings(&bridge, registrations, memory_limit).with_encoding(encoding);
                let mut rewriter = HtmlRewriter::new(settings, move |chunk: &[u8]| {
                    sink.borrow_mut().extend_from_slice(chunk);
                });
                let mut input = first;
                loop {
                    match input {
                        Input::Write(bytes) => {
                            rewriter.write(&bytes).map_err(|e| describe(&e))?;
                            input = yielder.suspend(Yield::NeedInput);
                        }
                        Input::End => return rewriter.end().map_err(|e| describe(&e)),
                        _ => return Err("HTMLRewriter: out-of-order call".to_owned()),
                    }
                }
            },
        );
        Ok(Self {
            run,
            output,
            finished: false,
        })
    }

    /// Resumes the rewrite with `input`; `Err` once it ended (with its
    /// result) or when it cannot go on.
    pub(crate) fn resume(&mut self, input: Input) -> Result<Yield, Return> {
        if self.finished {
            return Err(Err("HTMLRewriter: the rewrite has ended".to_owned()));
        }
        let run = &mut self.run;
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.resume(input)));
        match step {
            Ok(CoroutineResult::Yield(value)) => Ok(value),
            Ok(CoroutineResult::Return(result)) => {
                self.finished = true;
                Err(result)
            }
            Err(_) => {
                self.finished = true;
                Err(Err("HTMLRewriter: internal error".to_owned()))
            }
        }
    }

    /// The output produced since the last call.
    pub(crate) fn take_output(&self) -> Vec<u8> {
        std::mem::take(&mut *self.output.borrow_mut())
    }
}

fn describe(error: &RewritingError) -> String {
    match error {
        RewritingError::ContentHandlerError(inner) => inner.to_string(),
        other => format!("HTMLRewriter: {other}"),
    }
}

/// lol_html settings running every registration's handlers through `bridge`.
fn settings(
    bridge: &Rc<Bridge>,
    registrations: Vec<Registration>,
    memory_limit: usize,
) -> Settings<'static, 'static> {
    let mut settings = Settings::new()
        .with_memory_settings(MemorySettings::new().with_max_allowed_memory_usage(memory_limit));
    for (index, registration) in (0_u32..).zip(registrations) {
        match registration {
            Registration::Element {
                selector,
                element,
                comments,
                text,
            } => {
                let handlers = element_handlers(bridge, index, element, comments, text);
                settings = settings
                    .append_element_content_handler((std::borrow::Cow::Owned(selector), handlers));
            }
            Registration::Document {
                doctype,
                comments,
                text,
                end,
            } => {
                let handlers = document_handlers(bridge, index, [doctype, comments, text, end]);
                settings = settings.append_document_content_handler(handlers);
            }
        }
    }
    settings
}

/// The handlers of an element registration (`index`): those it asked for.
fn element_handlers(
    bridge: &Rc<Bridge>,
    index: u32,
    element: bool,
    comments: bool,
    text: bool,
) -> ElementContentHandlers<'static> {
    let mut handlers = ElementContentHandlers::default();
    if element {
        let b = bridge.clone();
        handlers = handlers.element(move |el: &mut Element<'_, '_>| {
            handle(
                &b,
                Call::Element { handler: index },
                &mut ElementToken { el, bridge: &b },
            )
        });
    }
    if comments {
        let b = bridge.clone();
        handlers = handlers.comments(move |c: &mut Comment<'_>| comment(&b, index, c));
    }
    if text {
        let b = bridge.clone();
        handlers = handlers.text(move |t: &mut TextChunk<'_>| text_chunk(&b, index, t));
    }
    handlers
}

/// The handlers of a document registration (`index`): those it asked for,
/// `[doctype, comments, text, end]`.
fn document_handlers(
    bridge: &Rc<Bridge>,
    index: u32,
    [doctype, comments, text, end]: [bool; 4],
) -> DocumentContentHandlers<'static> {
    let mut handlers = DocumentContentHandlers::default();
    if doctype {
        let b = bridge.clone();
        handlers = handlers.doctype(move |d: &mut Doctype<'_>| {
            let call = Call::Doctype {
                handler: index,
                name: d.name(),
                public_id: d.public_id(),
                system_id: d.system_id(),
            };
            handle(&b, call, d)
        });
    }
    if comments {
        let b = bridge.clone();
        handlers = handlers.comments(move |c: &mut Comment<'_>| comment(&b, index, c));
    }
    if text {
        let b = bridge.clone();
        handlers = handlers.text(move |t: &mut TextChunk<'_>| text_chunk(&b, index, t));
    }
    if end {
        let b = bridge.clone();
        handlers = handlers.end(move |e: &mut DocumentEnd<'_>| {
            handle(&b, Call::DocumentEnd { handler: index }, e)
        });
    }
    handlers
}

fn comment(bridge: &Rc<Bridge>, handler: u32, c: &mut Comment<'_>) -> HandlerResult {
    let call = Call::Comment {
        handler,
        text: c.text(),
    };
    handle(bridge, call, c)
}

fn text_chunk(bridge: &Rc<Bridge>, handler: u32, t: &mut TextChunk<'_>) -> HandlerResult {
    let call = Call::Text {
        handler,
        text: t.as_str().to_owned(),
        last: t.last_in_text_node(),
    };
    handle(bridge, call, t)
}

/// Hands `call` to JS and applies its operations to `token` until the
/// worker's handler is done.
fn handle(bridge: &Rc<Bridge>, call: Call, token: &mut impl Token) -> HandlerResult {
    let mut input = bridge.suspend(Yield::Call(call));
    loop {
        match input {
            Input::Op(op) => {
                let result = token.apply(op);
                input = bridge.suspend(Yield::Done(result));
            }
            Input::Continue => return Ok(()),
            Input::Fail(message) => return Err(Box::new(HandlerFailed(message))),
            Input::Write(_) | Input::End => {
                return Err(Box::new(HandlerFailed(
                    "HTMLRewriter: the document was written to while a handler was running"
                        .to_owned(),
                )));
            }
        }
    }
}

/// A worker's handler failed; its message is the rewrite's error.
#[derive(Debug)]
struct HandlerFailed(String);

impl std::fmt::Display for HandlerFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for HandlerFailed {}

// === tokens: what each kind of token does with an operation ===

trait Token {
    fn apply(&mut self, op: Op) -> OpResult;
}

fn unsupported() -> OpResult {
    OpResult::Error("HTMLRewriter: this token does not support that operation".to_owned())
}

struct ElementToken<'a, 'r, 't> {
    el: &'a mut Element<'r, 't>,
    bridge: &'a Rc<Bridge>,
}

impl Token for ElementToken<'_, '_, '_> {
    fn apply(&mut self, op: Op) -> OpResult {
        let el = &mut *self.el;
        match op {
            Op::TagName => OpResult::Text(el.tag_name()),
            Op::SetTagName(name) => match el.set_tag_name(&name) {
                Ok(()) => OpResult::Nothing,
                Err(e) => OpResult::Error(format!("HTMLRewriter: {e}")),
            },
            Op::Attributes => OpResult::Pairs(
                el.attributes()
                    .iter()
                    .map(|a| (a.name(), a.value()))
                    .collect(),
            ),
            Op::GetAttribute(name) => OpResult::MaybeText(el.get_attribute(&name)),
            Op::HasAttribute(name) => OpResult::Bool(el.has_attribute(&name)),
            Op::SetAttribute(name, value) => match el.set_attribute(&name, &value) {
                Ok(()) => OpResult::Nothing,
                Err(e) => OpResult::Error(format!("HTMLRewriter: {e}")),
            },
            Op::RemoveAttribute(name) => {
                el.remove_attribute(&name);
                OpResult::Nothing
            }
            Op::NamespaceUri => OpResult::Text(el.namespace_uri().to_owned()),
            Op::Removed => OpResult::Bool(el.removed()),
            Op::SelfClosing => OpResult::Bool(el.is_self_closing()),
            Op::CanHaveContent => OpResult::Bool(el.can_have_content()),
            Op::Insert(place, content, kind) => {
                insert(el, place, &content, kind);
                OpResult::Nothing
            }
            Op::Remove => {
                el.remove();
                OpResult::Nothing
            }
            Op::RemoveAndKeepContent => {
                el.remove_and_keep_content();
                OpResult::Nothing
            }
            Op::OnEndTag(tag) => on_end_tag(el, self.bridge, tag),
            Op::SetText(_) | Op::SetName(_) => unsupported(),
        }
    }
}

/// Inserts `content` at `place` relative to (or inside) `el`.
fn insert(el: &mut Element<'_, '_>, place: Place, content: &str, kind: ContentType) {
    match place {
        Place::Before => el.before(content, kind),
        Place::After => el.after(content, kind),
        Place::Prepend => el.prepend(content, kind),
        Place::Append => el.append(content, kind),
        Place::Replace => el.replace(content, kind),
        Place::Inner => el.set_inner_content(content, kind),
    }
}

/// Runs end-tag handler `tag` through `bridge` when `el`'s end tag comes.
fn on_end_tag(el: &mut Element<'_, '_>, bridge: &Rc<Bridge>, tag: u32) -> OpResult {
    let bridge = bridge.clone();
    let handler = Box::new(move |end: &mut EndTag<'_>| {
        let call = Call::EndTag {
            tag,
            name: end.name(),
        };
        handle(&bridge, call, end)
    });
    match el.on_end_tag(handler) {
        Ok(()) => OpResult::Nothing,
        Err(e) => OpResult::Error(format!("HTMLRewriter: {e}")),
    }
}

impl Token for TextChunk<'_> {
    fn apply(&mut self, op: Op) -> OpResult {
        match op {
            Op::Removed => OpResult::Bool(self.removed()),
            Op::Insert(Place::Before, content, kind) => {
                self.before(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::After, content, kind) => {
                self.after(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::Replace, content, kind) => {
                self.replace(&content, kind);
                OpResult::Nothing
            }
            Op::Remove => {
                self.remove();
                OpResult::Nothing
            }
            _ => unsupported(),
        }
    }
}

impl Token for Comment<'_> {
    fn apply(&mut self, op: Op) -> OpResult {
        match op {
            Op::Removed => OpResult::Bool(self.removed()),
            Op::SetText(text) => match self.set_text(&text) {
                Ok(()) => OpResult::Nothing,
                Err(e) => OpResult::Error(format!("HTMLRewriter: {e}")),
            },
            Op::Insert(Place::Before, content, kind) => {
                self.before(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::After, content, kind) => {
                self.after(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::Replace, content, kind) => {
                self.replace(&content, kind);
                OpResult::Nothing
            }
            Op::Remove => {
                self.remove();
                OpResult::Nothing
            }
            _ => unsupported(),
        }
    }
}

impl Token for Doctype<'_> {
    fn apply(&mut self, op: Op) -> OpResult {
        match op {
            Op::Removed => OpResult::Bool(self.removed()),
            Op::Remove => {
                self.remove();
                OpResult::Nothing
            }
            _ => unsupported(),
        }
    }
}

impl Token for DocumentEnd<'_> {
    fn apply(&mut self, op: Op) -> OpResult {
        match op {
            Op::Insert(Place::Append, content, kind) => {
                self.append(&content, kind);
                OpResult::Nothing
            }
            _ => unsupported(),
        }
    }
}

impl Token for EndTag<'_> {
    fn apply(&mut self, op: Op) -> OpResult {
        match op {
            Op::TagName => OpResult::Text(self.name()),
            Op::SetName(name) => {
                self.set_name_str(name);
                OpResult::Nothing
            }
            Op::Removed => OpResult::Bool(self.removed()),
            Op::Insert(Place::Before, content, kind) => {
                self.before(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::After, content, kind) => {
                self.after(&content, kind);
                OpResult::Nothing
            }
            Op::Insert(Place::Replace, content, kind) => {
                self.replace(&content, kind);
                OpResult::Nothing
            }
            Op::Remove => {
                self.remove();
                OpResult::Nothing
            }
            _ => unsupported(),
        }
    }
}
