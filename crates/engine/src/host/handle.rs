//! Handle objects: what JavaScript holds for a Rust object kept in a
//! per-isolate table (Web Crypto keys and hashers, codecs). An object with
//! one internal field, the entry's id, whose collection by the GC removes the
//! entry.

use std::rc::Rc;

use super::HostState;

/// A new handle object for entry `id`, and the weak reference that keeps its
/// finalizer armed (store it in the entry): when the GC collects the object,
/// `collect(host, id)` runs.
pub(crate) fn new_handle<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    id: u32,
    collect: fn(&HostState, u32),
) -> Option<(v8::Local<'s, v8::Object>, v8::Weak<v8::Object>)> {
    let template = v8::ObjectTemplate::new(scope);
    template.set_internal_field_count(1);
    let object = template.new_instance(scope)?;
    let value = v8::Integer::new_from_unsigned(scope, id);
    object.set_internal_field(0, value.into());
    let weak = v8::Weak::with_finalizer(
        scope,
        object,
        Box::new(move |isolate: &mut v8::Isolate| {
            if let Some(host) = isolate.get_slot::<Rc<HostState>>().cloned() {
                collect(&host, id);
            }
        }),
    );
    Some((object, weak))
}

/// The id inside a handle object; `None` for any other value.
pub(crate) fn handle_id(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Option<u32> {
    let object = v8::Local::<v8::Object>::try_from(value).ok()?;
    if object.internal_field_count() != 1 {
        return None;
    }
    let data = object.get_internal_field(scope, 0)?;
    let id = v8::Local::<v8::Integer>::try_from(data).ok()?;
    u32::try_from(id.value()).ok()
}
