//! `host.structuredClone`: a V8 ValueSerializer round trip.

use v8::{ValueDeserializerHelper, ValueSerializerHelper};

use super::throw_type_error;

/// Serializer/deserializer delegate: no host objects, no shared memory; a
/// value V8 cannot clone becomes the TypeError HOST.md asks for.
struct Cloner;

impl v8::ValueSerializerImpl for Cloner {
    fn throw_data_clone_error<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        message: v8::Local<'s, v8::String>,
    ) {
        let message = format!("DataCloneError: {}", message.to_rust_string_lossy(scope));
        throw_type_error(scope, &message);
    }
}

impl v8::ValueDeserializerImpl for Cloner {}

/// `structuredClone(value)`.
pub(super) fn structured_clone(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let value = args.get(0);
    let context = scope.get_current_context();
    let data = {
        let serializer = v8::ValueSerializer::new(scope, Box::new(Cloner));
        serializer.write_header();
        // `None` or `Some(false)`: the delegate already threw.
        if serializer.write_value(context, value) != Some(true) {
            return;
        }
        serializer.release()
    };
    let deserializer = v8::ValueDeserializer::new(scope, Box::new(Cloner), &data);
    if deserializer.read_header(context) != Some(true) {
        return;
    }
    if let Some(copy) = deserializer.read_value(context) {
        rv.set(copy);
    }
}
