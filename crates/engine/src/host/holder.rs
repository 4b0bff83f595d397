//! The objects a host promise is resolved with. Resolving looks up `then`
//! on the value; on an ordinary object that lookup reaches
//! `Object.prototype`, where a Worker can put a `then` that injects what it
//! likes into the runtime's reads. A holder's prototype is one frozen,
//! empty object without a prototype, made once per isolate and never given
//! to a Worker. Not `Object.create(null)`: V8 keeps those in dictionary
//! mode, and the runtime's every read of one missed its inline caches; a
//! holder made from the same map each time, with internalized keys, keeps
//! one map per order of keys and those reads monomorphic.

/// The isolate's holder prototype (an isolate slot).
struct HolderProto(v8::Global<v8::Object>);

/// A fresh holder.
pub fn holder<'s>(scope: &mut v8::PinScope<'s, '_>) -> v8::Local<'s, v8::Object> {
    let object = v8::Object::new(scope);
    let proto = match scope.get_slot::<HolderProto>() {
        Some(HolderProto(proto)) => v8::Local::new(scope, proto.clone()),
        None => {
            let null = v8::null(scope).into();
            let proto = v8::Object::with_prototype_and_properties(scope, null, &[], &[]);
            proto.set_integrity_level(scope, v8::IntegrityLevel::Frozen);
            let global = v8::Global::new(scope, proto);
            scope.set_slot(HolderProto(global));
            proto
        }
    };
    object.set_prototype(scope, proto.into());
    object
}

/// Sets `key` on `object` to `value`, when V8 could make both.
pub fn set(
    scope: &mut v8::PinScope<'_, '_>,
    object: v8::Local<'_, v8::Object>,
    key: &str,
    value: Option<v8::Local<'_, v8::Value>>,
) {
    let key = v8::String::new_from_one_byte(scope, key.as_bytes(), v8::NewStringType::Internalized);
    if let (Some(key), Some(value)) = (key, value) {
        object.set(scope, key.into(), value);
    }
}
