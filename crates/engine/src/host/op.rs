//! The typed adapter between V8's callback signature and a host function's
//! Rust signature: `host_fn!` turns
//!
//! ```ignore
//! host_fn! {
//!     /// `timerCancel(id)`
//!     pub(super) fn timer_cancel<'s>(scope, host: Rc<HostState>, id: u32) {
//!         host.cancel_timer(id);
//!     }
//! }
//! ```
//!
//! into a `v8::FunctionCallback`-shaped function that converts each JS
//! argument in order ([`FromArg`]), runs the body, and hands its result back
//! ([`Return`]): a value, nothing, or a [`HostError`] thrown as its class.
//!
//! A `host: Rc<HostState>` parameter takes no JS argument: it is the
//! isolate's state, and where there is none (at snapshot time) the function
//! does nothing and returns undefined, as HOST.md says of every host call
//! there. Every conversion is the one the hand-written callbacks made:
//! `String` is `String(value)` (huge strings are checked against the memory
//! limit first, see [`arg_string`]), `u32` is `ToUint32` (0 when it throws),
//! `f64` is `ToNumber` (0 when it throws), `bool` is `ToBoolean`.

use std::rc::Rc;

use super::error::HostError;
use super::{HostState, arg_string, view_bytes};

/// Defines a host function; see the module docs. The body
/// is an ordinary Rust function of `scope` and the typed arguments.
#[macro_export]
macro_rules! host_fn {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident<$s:lifetime>($scope:ident $(, $arg:ident : $ty:ty)* $(,)?)
            $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name<$s>(
            $scope: &mut $crate::v8::PinScope<$s, '_>,
            args: $crate::v8::FunctionCallbackArguments<$s>,
            mut rv: $crate::v8::ReturnValue<$s, $crate::v8::Value>,
        ) {
            #[allow(clippy::too_many_arguments)]
            fn typed<$s>($scope: &mut $crate::v8::PinScope<$s, '_> $(, $arg: $ty)*) $(-> $ret)? $body
            #[allow(unused_mut)]
            let mut next = 0;
            $(
                let Some($arg) = <$ty as $crate::FromArg<$s>>::from_arg(
                    $scope, &args, &mut next,
                ) else {
                    return;
                };
            )*
            let _ = (&args, next);
            let result = typed($scope $(, $arg)*);
            $crate::Return::set(result, $scope, &mut rv);
        }
    };
}

/// One parameter of a host function, from the JS arguments (`next` is the
/// index of the next unconverted one). `None`: the body does not run and
/// the call returns undefined (there is no host state).
pub trait FromArg<'s>: Sized {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self>;
}

/// The next argument's index, moving `next` past it.
fn take(next: &mut i32) -> i32 {
    let i = *next;
    *next += 1;
    i
}

impl<'s> FromArg<'s> for Rc<HostState> {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        _args: &v8::FunctionCallbackArguments<'s>,
        _next: &mut i32,
    ) -> Option<Self> {
        HostState::get(scope)
    }
}

impl<'s> FromArg<'s> for v8::Local<'s, v8::Value> {
    fn from_arg(
        _scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(args.get(take(next)))
    }
}

impl<'s> FromArg<'s> for String {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(arg_string(scope, args, take(next)))
    }
}

/// `null` and `undefined` are `None`; anything else `String(value)`.
impl<'s> FromArg<'s> for Option<String> {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        let i = take(next);
        if args.get(i).is_null_or_undefined() {
            return Some(None);
        }
        Some(Some(arg_string(scope, args, i)))
    }
}

impl<'s> FromArg<'s> for u32 {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(args.get(take(next)).uint32_value(scope).unwrap_or(0))
    }
}

impl<'s> FromArg<'s> for f64 {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(args.get(take(next)).number_value(scope).unwrap_or(0.0))
    }
}

impl<'s> FromArg<'s> for bool {
    fn from_arg(
        scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(args.get(take(next)).boolean_value(scope))
    }
}

/// The bytes of an ArrayBufferView (a copy); `None` for anything else.
impl<'s> FromArg<'s> for Option<Vec<u8>> {
    fn from_arg(
        _scope: &mut v8::PinScope<'s, '_>,
        args: &v8::FunctionCallbackArguments<'s>,
        next: &mut i32,
    ) -> Option<Self> {
        Some(view_bytes(args.get(take(next))))
    }
}

/// What a host function's body returns, handed to JavaScript.
pub trait Return<'s> {
    fn set(self, scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>);
}

/// Nothing: `undefined`.
impl<'s> Return<'s> for () {
    fn set(self, _scope: &mut v8::PinScope<'s, '_>, _rv: &mut v8::ReturnValue<'s, v8::Value>) {}
}

impl<'s, T> Return<'s> for v8::Local<'s, T>
where
    v8::Local<'s, T>: Into<v8::Local<'s, v8::Value>>,
{
    fn set(self, _scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>) {
        rv.set(self.into());
    }
}

impl<'s> Return<'s> for bool {
    fn set(self, _scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>) {
        rv.set_bool(self);
    }
}

impl<'s> Return<'s> for f64 {
    fn set(self, _scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>) {
        rv.set_double(self);
    }
}

/// `None` leaves `undefined`: no value could be made (an allocation failed,
/// or the memory limit was hit and the isolate is being terminated).
impl<'s, T: Return<'s>> Return<'s> for Option<T> {
    fn set(self, scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>) {
        if let Some(value) = self {
            value.set(scope, rv);
        }
    }
}

/// `Err` is thrown as its class.
impl<'s, T: Return<'s>> Return<'s> for Result<T, HostError> {
    fn set(self, scope: &mut v8::PinScope<'s, '_>, rv: &mut v8::ReturnValue<'s, v8::Value>) {
        match self {
            Ok(value) => value.set(scope, rv),
            Err(error) => error.throw(scope),
        }
    }
}
