//! Lazy units (`Unit::lazy_globals`): their files are compiled into the
//! snapshot, but run only when a Worker first reads one of their globals,
//! so an isolate that never touches them holds one uncompiled function per
//! file instead of their classes, prototypes, closures and maps
//! (docs/benchmark-history.md, section 5).
//!
//! Each global is a native data property of the global object (V8's
//! `SetNativeDataProperty`): to `typeof`, `in`, `delete`, assignment and
//! `Object.getOwnPropertyDescriptor` it is an ordinary writable,
//! configurable, non-enumerable data property. Its getter, [`get`], runs
//! the unit's files on the first read (`internal.lazyGlobals` in
//! js/00_internal.js) and keeps the value; [`set`] keeps an assigned one.
//! The values and the unit's thunks live on the global object under two
//! private symbols, which no JavaScript can name.
//!
//! Not V8's `SetLazyDataProperty`: its getter may not let JavaScript touch
//! the property (V8 checks, fatally, that it is still the lazy accessor when
//! the getter returns), and a lazy file's top level calls built-ins a Worker
//! may have patched; nor may the accessor's data be a JavaScript object,
//! which the snapshot cannot hold (an accessor is isolate-wide there).

use std::ffi::c_void;

/// The private symbol of one of the two tables.
fn table_key<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
) -> Option<v8::Local<'s, v8::Private>> {
    let name = v8::String::new(scope, name)?;
    Some(v8::Private::for_api(scope, Some(name)))
}

const VALUES: &str = "isolane:lazyGlobals.values";
const THUNKS: &str = "isolane:lazyGlobals.thunks";

/// The table `name` on `holder` (the global object).
fn table<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    holder: v8::Local<'s, v8::Object>,
    name: &str,
) -> Option<v8::Local<'s, v8::Object>> {
    let key = table_key(scope, name)?;
    holder
        .get_private(scope, key)
        .and_then(|v| v8::Local::<v8::Object>::try_from(v).ok())
}

/// The getter of every lazy global: its kept value, else its thunk's (run
/// once; an exception the thunk throws is thrown by the read).
fn get<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    key: v8::Local<'s, v8::Name>,
    args: v8::PropertyCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let holder = args.holder();
    let Some(values) = table(scope, holder, VALUES) else {
        return;
    };
    if values.has_own_property(scope, key) == Some(true) {
        if let Some(value) = values.get(scope, key.into()) {
            rv.set(value);
        }
        return;
    }
    let Some(thunk) = table(scope, holder, THUNKS)
        .and_then(|thunks| thunks.get(scope, key.into()))
        .and_then(|v| v8::Local::<v8::Function>::try_from(v).ok())
    else {
        return;
    };
    let undefined = v8::undefined(scope).into();
    let Some(value) = thunk.call(scope, undefined, &[]) else {
        return;
    };
    // An assignment while the files ran wins, as it would after.
    if values.has_own_property(scope, key) != Some(true) {
        values.set(scope, key.into(), value);
    }
    if let Some(value) = values.get(scope, key.into()) {
        rv.set(value);
    }
}

/// The setter of every lazy global: keeps the assigned value.
fn set<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    key: v8::Local<'s, v8::Name>,
    value: v8::Local<'s, v8::Value>,
    args: v8::PropertyCallbackArguments<'s>,
    _rv: v8::ReturnValue<()>,
) {
    if let Some(values) = table(scope, args.holder(), VALUES) {
        values.set(scope, key.into(), value);
    }
}

/// The getter's and the setter's external references (every lazy global in
/// the snapshot names them).
pub(crate) fn external_references() -> [v8::ExternalReference; 2] {
    use v8::MapFnTo;
    let getter: v8::AccessorNameGetterCallback = get.map_fn_to();
    let setter: v8::AccessorNameSetterCallback = set.map_fn_to();
    [
        v8::ExternalReference {
            pointer: getter as *mut c_void,
        },
        v8::ExternalReference {
            pointer: setter as *mut c_void,
        },
    ]
}

/// The table `name` on `global`, made (without a prototype) if missing.
fn table_or_new<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    name: &str,
) -> Result<v8::Local<'s, v8::Object>, String> {
    if let Some(table) = table(scope, global, name) {
        return Ok(table);
    }
    let null = v8::null(scope).into();
    let table = v8::Object::with_prototype_and_properties(scope, null, &[], &[]);
    let key = table_key(scope, name).ok_or("allocating a string")?;
    global
        .set_private(scope, key, table.into())
        .filter(|done| *done)
        .ok_or_else(|| format!("setting the table {name}"))?;
    Ok(table)
}

/// Installs `names` on `global` as lazy globals of the unit whose files
/// evaluated to `files` (snapshot time only).
pub(crate) fn install<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    global: v8::Local<'s, v8::Object>,
    internal: v8::Local<'s, v8::Object>,
    files: &[v8::Local<'s, v8::Function>],
    names: &[&str],
) -> Result<(), String> {
    let key = v8::String::new(scope, "lazyGlobals").ok_or("allocating a string")?;
    let lazy_globals = internal
        .get(scope, key.into())
        .and_then(|v| v8::Local::<v8::Function>::try_from(v).ok())
        .ok_or("the runtime defines no internal.lazyGlobals")?;
    let files: Vec<v8::Local<v8::Value>> = files.iter().map(|f| (*f).into()).collect();
    let files = v8::Array::new_with_elements(scope, &files);
    let mut keys = Vec::with_capacity(names.len());
    for name in names {
        keys.push(v8::String::new(scope, name).ok_or("allocating a string")?);
    }
    let key_values: Vec<v8::Local<v8::Value>> = keys.iter().map(|k| (*k).into()).collect();
    let key_array = v8::Array::new_with_elements(scope, &key_values);
    let unit_thunks = lazy_globals
        .call(scope, internal.into(), &[files.into(), key_array.into()])
        .and_then(|v| v8::Local::<v8::Object>::try_from(v).ok())
        .ok_or("internal.lazyGlobals failed")?;
    table_or_new(scope, global, VALUES)?;
    let thunks = table_or_new(scope, global, THUNKS)?;
    for (key, name) in keys.iter().zip(names) {
        let thunk = unit_thunks
            .get(scope, (*key).into())
            .ok_or_else(|| format!("no thunk for the lazy global {name}"))?;
        thunks.set(scope, (*key).into(), thunk);
        let installed = global.set_accessor_with_configuration(
            scope,
            (*key).into(),
            v8::AccessorConfiguration::new(get)
                .setter(set)
                .property_attribute(v8::PropertyAttribute::DONT_ENUM),
        );
        if installed != Some(true) {
            return Err(format!("installing the lazy global {name}"));
        }
    }
    Ok(())
}
