//! The code caches an isolate owes: big sources it compiled without a cache
//! V8 accepted, ES modules (`modules.rs`) and classic service-worker scripts
//! (`script.rs`) alike. Kept in an isolate slot (V8 globals: dropped by
//! [`forget`] before the isolate is disposed) until [`make`] runs after the
//! isolate's first request, so the functions that request ran are in them.

use std::cell::RefCell;
use std::rc::Rc;

use super::CodeCache;
use crate::checked_file::Key;

/// What V8 makes a cache from: a module's or a script's compiled code.
pub(crate) enum Unbound {
    Module(v8::Global<v8::UnboundModuleScript>),
    Script(v8::Global<v8::UnboundScript>),
}

#[derive(Default)]
struct Owed(RefCell<Vec<(Key, Unbound)>>);

type OwedSlot = Rc<Owed>;

/// Gives the isolate its (empty) list, before anything is compiled.
pub(crate) fn prepare(isolate: &mut v8::Isolate) {
    if isolate.get_slot::<OwedSlot>().is_none() {
        isolate.set_slot::<OwedSlot>(Rc::default());
    }
}

/// Records that the isolate owes `key`'s cache, made from `unbound`.
pub(crate) fn owe(isolate: &v8::Isolate, key: Key, unbound: Unbound) {
    if let Some(owed) = isolate.get_slot::<OwedSlot>() {
        owed.0.borrow_mut().push((key, unbound));
    }
}

/// Whether the isolate owes any cache.
pub(crate) fn owes(isolate: &v8::Isolate) -> bool {
    isolate
        .get_slot::<OwedSlot>()
        .is_some_and(|owed| !owed.0.borrow().is_empty())
}

/// Makes the caches the isolate owes and hands them to the writer; one
/// isolate of the process makes each (the first to get here).
pub(crate) fn make(scope: &mut v8::PinScope<'_, '_>, cache: &CodeCache) {
    let Some(owed) = scope.get_slot::<OwedSlot>().cloned() else {
        return;
    };
    let owed = std::mem::take(&mut *owed.0.borrow_mut());
    for (key, unbound) in owed.into_iter().filter(|(key, _)| cache.claim(key)) {
        let data = match unbound {
            Unbound::Module(unbound) => v8::Local::new(scope, unbound).create_code_cache(),
            Unbound::Script(unbound) => v8::Local::new(scope, unbound).create_code_cache(),
        };
        if let Some(data) = data {
            cache.produced(key, data.to_vec());
        }
    }
}

/// Drops the list (before the isolate is disposed).
pub(crate) fn forget(isolate: &mut v8::Isolate) {
    isolate.remove_slot::<OwedSlot>();
}
