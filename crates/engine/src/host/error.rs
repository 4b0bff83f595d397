//! [`HostError`]: an error a host function hands to JavaScript, as a class
//! and a message. The class decides what JavaScript catches: a real
//! `TypeError` or `RangeError`, or a `DOMException` with that name, made by
//! the host with the runtime's own constructor (`internal.DOMException`, which
//! a worker cannot replace). Nothing in JavaScript parses a message to find
//! the class.

use std::fmt;

/// The JS class a [`HostError`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// A plain `Error` (what workerd throws for a failed KV operation).
    Error,
    /// A `TypeError`.
    Type,
    /// A `RangeError`.
    Range,
    /// A `DOMException` named `DataError`, and so on below.
    Data,
    NotSupported,
    InvalidAccess,
    Operation,
    QuotaExceeded,
    DataClone,
}

impl ErrorClass {
    /// The class's JS name (the `DOMException`'s `name`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Error => "Error",
            Self::Type => "TypeError",
            Self::Range => "RangeError",
            Self::Data => "DataError",
            Self::NotSupported => "NotSupportedError",
            Self::InvalidAccess => "InvalidAccessError",
            Self::Operation => "OperationError",
            Self::QuotaExceeded => "QuotaExceededError",
            Self::DataClone => "DataCloneError",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An error for JavaScript: `{class, message}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class}: {message}")]
pub struct HostError {
    pub class: ErrorClass,
    pub message: String,
}

/// What host functions return when they can fail.
pub type HostResult<T> = Result<T, HostError>;

impl HostError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
        }
    }

    /// A `TypeError`.
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Type, message)
    }

    /// A `RangeError`.
    pub fn range_error(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Range, message)
    }

    /// The JS value of the error. A `DOMException` class where the isolate
    /// has no host state (at snapshot time, where host calls are no-ops)
    /// becomes a `TypeError` whose message names the class.
    pub fn to_js<'s>(&self, scope: &mut v8::PinScope<'s, '_>) -> Option<v8::Local<'s, v8::Value>> {
        let message = v8::String::new(scope, &self.message)?;
        match self.class {
            ErrorClass::Error => Some(v8::Exception::error(scope, message)),
            ErrorClass::Type => Some(v8::Exception::type_error(scope, message)),
            ErrorClass::Range => Some(v8::Exception::range_error(scope, message)),
            class => match dom_exception(scope) {
                Some(constructor) => {
                    let name = v8::String::new(scope, class.name())?;
                    constructor
                        .new_instance(scope, &[message.into(), name.into()])
                        .map(Into::into)
                }
                None => {
                    let text = v8::String::new(scope, &self.to_string())?;
                    Some(v8::Exception::type_error(scope, text))
                }
            },
        }
    }

    /// Throws the error in `scope`.
    pub fn throw(&self, scope: &mut v8::PinScope<'_, '_>) {
        if let Some(error) = self.to_js(scope) {
            scope.throw_exception(error);
        }
    }
}

/// The runtime's `DOMException` constructor (an isolate slot).
struct DomException(v8::Global<v8::Function>);

/// Keeps the runtime's `DOMException` constructor for [`HostError::to_js`]
/// (at isolate creation; an isolate without it throws `TypeError`s).
pub(crate) fn set_dom_exception(isolate: &mut v8::Isolate, constructor: v8::Global<v8::Function>) {
    isolate.set_slot(DomException(constructor));
}

fn dom_exception<'s>(scope: &mut v8::PinScope<'s, '_>) -> Option<v8::Local<'s, v8::Function>> {
    let constructor = scope.get_slot::<DomException>()?.0.clone();
    Some(v8::Local::new(scope, constructor))
}

/// The message of a request past its subrequest limit.
pub fn too_many(limit: u32) -> String {
    format!(
        "Too many subrequests: a request may make at most {limit} fetch calls (each redirect counts as one)"
    )
}

/// Throws a `TypeError` with `message` in `scope` (for callbacks that are
/// not host functions: the module loader's).
pub fn throw_type_error(scope: &mut v8::PinScope<'_, '_>, message: &str) {
    HostError::type_error(message).throw(scope);
}
