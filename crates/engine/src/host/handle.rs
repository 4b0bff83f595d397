//! [`Handles`]: the one table of native resources an isolate's JavaScript
//! holds — Web Crypto keys and hashers, codecs, HTML rewrites — and the
//! opaque objects that name them. As workerd's `IoOwn`: a resource is
//! charged to the worker's memory budget when it enters the table, and
//! released, dropped and forgotten only here.
//!
//! A handle object is made from a template with one internal field (the
//! entry's id): JavaScript cannot forge one, and a plain object or a number
//! is refused. Ids are made and looked up through one isolate's `HostState`,
//! so an id never means anything in another isolate, and each lookup names
//! the type it expects, so a key's handle never finds a codec.
//!
//! Lifetime: an entry goes when JavaScript frees it, when its handle object
//! is garbage collected (a `v8::Weak` finalizer), when the request that owns
//! it ends ([`Handles::drop_for`]), or with the isolate (`Drop`). Values are
//! dropped outside the table's borrow: dropping a suspended rewrite unwinds
//! a coroutine, and a finalizer may run inside any V8 allocation.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::Arc;

use super::id_map::IdMap;
use crate::memory::Memory;

/// Who owns a resource: the isolate (until freed or collected), or a
/// request, whose end frees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Isolate,
    Request(u32),
}

impl Owner {
    /// The request `ctx` (0, no request: the isolate).
    pub fn request(ctx: u32) -> Self {
        if ctx == 0 {
            Self::Isolate
        } else {
            Self::Request(ctx)
        }
    }
}

struct Entry {
    value: Box<dyn Any>,
    /// Bytes charged to the memory budget for it.
    charge: usize,
    owner: Owner,
    /// Keeps the finalizer of its handle object armed; dropped with the entry.
    _handle: Option<v8::Weak<v8::Object>>,
}

/// The native resources of one isolate.
pub struct Handles {
    memory: Arc<Memory>,
    next: Cell<u32>,
    entries: RefCell<IdMap<Entry>>,
    /// Ids whose handle was collected while `entries` was borrowed.
    collected: RefCell<Vec<u32>>,
    /// Itself, for the finalizers of its handle objects: a collected
    /// object's entry goes from the table that made it, without a way
    /// back through the isolate's state.
    me: Weak<Handles>,
}

impl Handles {
    pub(crate) fn new(memory: Arc<Memory>) -> Rc<Self> {
        Rc::new_cyclic(|me| Self {
            memory,
            next: Cell::new(0),
            entries: RefCell::default(),
            collected: RefCell::default(),
            me: me.clone(),
        })
    }

    /// Adds `value`, charging `charge` bytes; its id, or `None` over the
    /// memory limit (the isolate is then being terminated).
    pub fn insert<T: 'static>(&self, value: T, charge: usize, owner: Owner) -> Option<u32> {
        self.sweep();
        self.memory.charge(charge).ok()?;
        let id = self.next.get().wrapping_add(1).max(1);
        self.next.set(id);
        let entry = Entry {
            value: Box::new(value),
            charge,
            owner,
            _handle: None,
        };
        let Ok(mut entries) = self.entries.try_borrow_mut() else {
            self.memory.release(charge);
            return None;
        };
        entries.insert(id, entry);
        Some(id)
    }

    /// Adds `value` as [`insert`](Self::insert) does, named for JavaScript
    /// by a new handle object whose collection removes it; `None` over the
    /// limit or when V8 could not make the object.
    pub fn insert_object<'s, T: 'static>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        value: T,
        charge: usize,
        owner: Owner,
    ) -> Option<v8::Local<'s, v8::Object>> {
        let id = self.insert(value, charge, owner)?;
        let Some((object, weak)) = new_handle(scope, id, self.me.clone()) else {
            self.remove(id);
            return None;
        };
        if let Ok(mut entries) = self.entries.try_borrow_mut()
            && let Some(entry) = entries.get_mut(&id)
        {
            entry._handle = Some(weak);
        }
        Some(object)
    }

    /// Runs `f` on the `T` of entry `id` (no JavaScript runs meanwhile);
    /// `None` when there is none (freed, or another type).
    pub fn with<T: 'static, R>(&self, id: u32, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut entries = self.entries.try_borrow_mut().ok()?;
        let value = entries.get_mut(&id)?.value.downcast_mut::<T>()?;
        Some(f(value))
    }

    /// [`with`](Self::with) the entry a handle object names.
    pub fn with_handle<T: 'static, R>(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        self.with(handle_id(scope, handle)?, f)
    }

    /// Charges `bytes` more to entry `id` (content it holds for a while);
    /// false over the memory limit. An unknown id is charged nothing.
    pub fn charge(&self, id: u32, bytes: usize) -> bool {
        let Ok(mut entries) = self.entries.try_borrow_mut() else {
            return false;
        };
        let Some(entry) = entries.get_mut(&id) else {
            return true;
        };
        if self.memory.charge(bytes).is_err() {
            return false;
        }
        entry.charge += bytes;
        true
    }

    /// Gives back up to `bytes` of what entry `id` was charged beyond
    /// [`insert`](Self::insert)'s charge.
    pub fn release(&self, id: u32, bytes: usize) {
        if let Ok(mut entries) = self.entries.try_borrow_mut()
            && let Some(entry) = entries.get_mut(&id)
        {
            let bytes = bytes.min(entry.charge);
            entry.charge -= bytes;
            self.memory.release(bytes);
        }
    }

    /// Drops entry `id` now, or at the next insert when the table is
    /// borrowed (a finalizer may run inside any V8 allocation; it must not
    /// panic whatever happens).
    pub fn remove(&self, id: u32) {
        let removed = match self.entries.try_borrow_mut() {
            Ok(mut entries) => entries.remove(&id),
            Err(_) => {
                if let Ok(mut collected) = self.collected.try_borrow_mut() {
                    collected.push(id);
                }
                None
            }
        };
        if let Some(entry) = removed {
            self.memory.release(entry.charge);
        }
    }

    /// Drops the entry a handle object names.
    pub fn remove_handle(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
    ) {
        if let Some(id) = handle_id(scope, handle) {
            self.remove(id);
        }
    }

    /// Drops what request `ctx` owns (what every request owns when `None`):
    /// a request's I/O goes with it, as in workerd.
    pub fn drop_for(&self, ctx: Option<u32>) {
        let owned = |owner: Owner| match owner {
            Owner::Isolate => false,
            Owner::Request(c) => ctx.is_none_or(|ctx| ctx == c),
        };
        let removed: Vec<Entry> = match self.entries.try_borrow_mut() {
            Ok(mut entries) => {
                let ids: Vec<u32> = entries
                    .iter()
                    .filter(|(_, e)| owned(e.owner))
                    .map(|(id, _)| *id)
                    .collect();
                ids.into_iter()
                    .filter_map(|id| entries.remove(&id))
                    .collect()
            }
            Err(_) => return,
        };
        for entry in removed {
            self.memory.release(entry.charge);
        }
    }

    fn sweep(&self) {
        let ids = match self.collected.try_borrow_mut() {
            Ok(mut collected) => std::mem::take(&mut *collected),
            Err(_) => return,
        };
        for id in ids {
            self.remove(id);
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        let charged: usize = self.entries.get_mut().values().map(|e| e.charge).sum();
        self.memory.release(charged);
    }
}

/// A new handle object for entry `id`, and the weak reference that keeps its
/// finalizer armed: when the GC collects the object, the entry goes.
fn new_handle<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    id: u32,
    handles: Weak<Handles>,
) -> Option<(v8::Local<'s, v8::Object>, v8::Weak<v8::Object>)> {
    let template = v8::ObjectTemplate::new(scope);
    template.set_internal_field_count(1);
    let object = template.new_instance(scope)?;
    let value = v8::Integer::new_from_unsigned(scope, id);
    object.set_internal_field(0, value.into());
    let weak = v8::Weak::with_finalizer(
        scope,
        object,
        Box::new(move |_: &mut v8::Isolate| {
            if let Some(handles) = handles.upgrade() {
                handles.remove(id);
            }
        }),
    );
    Some((object, weak))
}

/// The id inside a handle object; `None` for any other value.
pub fn handle_id(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Option<u32> {
    let object = v8::Local::<v8::Object>::try_from(value).ok()?;
    if object.internal_field_count() != 1 {
        return None;
    }
    let data = object.get_internal_field(scope, 0)?;
    let id = v8::Local::<v8::Integer>::try_from(data).ok()?;
    u32::try_from(id.value()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resource that counts its drops.
    struct Probe(Rc<std::cell::Cell<u32>>);

    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn resources_are_charged_and_dropped_in_one_place() {
        let memory = Memory::new(1 << 20);
        let dropped = Rc::new(std::cell::Cell::new(0));
        let handles = Handles::new(memory.clone());
        let mine = handles.insert(Probe(dropped.clone()), 1000, Owner::Request(7));
        let other = handles.insert(Probe(dropped.clone()), 100, Owner::Request(8));
        let shared = handles.insert(Probe(dropped.clone()), 10, Owner::Isolate);
        let (Some(mine), Some(other), Some(shared)) = (mine, other, shared) else {
            panic!("inserts under the limit succeed");
        };
        assert_eq!(memory.used(), 1110);
        // The type names what an id may find.
        assert_eq!(handles.with(mine, |_: &mut Probe| ()), Some(()));
        assert_eq!(handles.with(mine, |_: &mut String| ()), None);
        // Extra charges go with the entry.
        assert!(handles.charge(other, 50));
        handles.release(other, 20);
        assert_eq!(memory.used(), 1140);
        // A request's end drops what it owns, and only that.
        handles.drop_for(Some(7));
        assert_eq!((dropped.get(), memory.used()), (1, 140));
        handles.remove(other);
        assert_eq!((dropped.get(), memory.used()), (2, 10));
        assert_eq!(handles.with(shared, |_: &mut Probe| ()), Some(()));
        // Every request's end leaves the isolate's own; the table's end does not.
        handles.drop_for(None);
        assert_eq!(dropped.get(), 2);
        drop(handles);
        assert_eq!((dropped.get(), memory.used()), (3, 0));
    }

    #[test]
    fn an_insert_over_the_limit_holds_nothing() {
        let memory = Memory::new(100);
        let handles = Handles::new(memory.clone());
        assert_eq!(handles.insert(1_u8, 101, Owner::Isolate), None);
        assert_eq!(memory.used(), 0);
    }
}
