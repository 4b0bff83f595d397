//! `host.structuredClone`, `host.serialize` and `host.deserialize`: V8's
//! ValueSerializer, the wire of Durable Objects' storage, RPC, queues and
//! hibernatable WebSockets' attachments (in the bindings' and the core's
//! JavaScript) and the round trip of `isolane-web`'s `structuredClone`
//! (`crates/web/js/18_structured_clone.js`).

use v8::{ValueDeserializerHelper, ValueSerializerHelper};

use super::error::{ErrorClass, HostError};
use crate::unit::Unit;

/// V8's serializer: host functions only.
pub(super) fn unit() -> Unit {
    Unit::new("serializer")
        .function("structuredClone", structured_clone)
        .function("serialize", serialize)
        .function("deserialize", deserialize)
}

/// Serializer/deserializer delegate: no host objects, no shared memory; a
/// value V8 cannot clone becomes the `DataCloneError` HOST.md asks for.
struct Cloner;

impl v8::ValueSerializerImpl for Cloner {
    fn throw_data_clone_error<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        message: v8::Local<'s, v8::String>,
    ) {
        let message = message.to_rust_string_lossy(scope);
        HostError::new(ErrorClass::DataClone, message).throw(scope);
    }
}

impl v8::ValueDeserializerImpl for Cloner {}

host_fn! {
/// `structuredClone(value)`.
fn structured_clone<'s>(
    scope,
    value: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Value>> {
    let data = write(scope, value)?;
    read(scope, &data)
}
}

/// V8's serialization of `value`; `None` when the delegate threw (a
/// DataCloneError is pending).
fn write(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Option<Vec<u8>> {
    let context = scope.get_current_context();
    let serializer = v8::ValueSerializer::new(scope, Box::new(Cloner));
    serializer.write_header();
    // `None` or `Some(false)`: the delegate already threw.
    if serializer.write_value(context, value) != Some(true) {
        return None;
    }
    Some(serializer.release())
}

/// The value [`write`] serialized into `data`.
fn read<'s>(scope: &mut v8::PinScope<'s, '_>, data: &[u8]) -> Option<v8::Local<'s, v8::Value>> {
    let context = scope.get_current_context();
    let deserializer = v8::ValueDeserializer::new(scope, Box::new(Cloner), data);
    if deserializer.read_header(context) != Some(true) {
        return None;
    }
    deserializer.read_value(context)
}

host_fn! {
/// `serialize(value)` → Uint8Array: V8's serialization of `value` (what a
/// Durable Object stores), or a `DataCloneError`.
fn serialize<'s>(
    scope,
    value: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Uint8Array>> {
    let data = write(scope, value)?;
    super::u8_array(scope, data)
}
}

host_fn! {
/// `deserialize(bytes)`: the value [`serialize`] made.
fn deserialize<'s>(
    scope,
    bytes: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Value>> {
    let Some(bytes) = bytes else {
        HostError::type_error("deserialize: expected a Uint8Array").throw(scope);
        return None;
    };
    read(scope, &bytes)
}
}
