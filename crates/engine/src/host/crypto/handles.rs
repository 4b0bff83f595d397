//! [`Handles`]: the per-isolate table of Web Crypto keys and `DigestStream`
//! hashers, and the opaque JS objects that name them.
//!
//! A handle is an object made from a template with one internal field (the
//! entry's id): JavaScript cannot forge one, and a plain object or a number
//! is refused. Handles are made in and looked up through one isolate's
//! `HostState`, so an id never means anything in another isolate.
//!
//! Lifetime: each entry holds a `v8::Weak` to its handle whose finalizer
//! removes the entry once the handle was garbage collected; everything left
//! goes with the `HostState` (the isolate). Dropping an entry zeroises the
//! key material (see `key.rs`) and returns its charge to the memory budget.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use sha2::digest::DynDigest;

use super::key::Key;
use crate::host::handle::{handle_id, new_handle};
use crate::memory::Memory;

/// What a handle names.
pub(crate) enum Item {
    Key(Rc<Key>),
    Hasher(Box<dyn DynDigest>),
}

struct Entry {
    item: Item,
    charge: usize,
    /// Keeps the finalizer armed; dropped with the entry.
    _handle: v8::Weak<v8::Object>,
}

pub(crate) struct Handles {
    memory: Arc<Memory>,
    next: Cell<u32>,
    entries: RefCell<HashMap<u32, Entry>>,
    /// Ids whose handle was collected while `entries` was borrowed.
    collected: RefCell<Vec<u32>>,
    /// One expensive operation at a time per isolate (see `offload.rs`).
    pub(crate) offload: Arc<tokio::sync::Semaphore>,
}

/// Charge for a hasher's state.
const HASHER_CHARGE: usize = 512;

impl Handles {
    pub(crate) fn new(memory: Arc<Memory>) -> Self {
        Self {
            memory,
            next: Cell::new(0),
            entries: RefCell::default(),
            collected: RefCell::default(),
            offload: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }

    /// A new handle for `item`; `None` over the memory limit (the isolate is
    /// then being terminated) or when V8 could not make the object.
    pub(crate) fn insert<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        item: Item,
    ) -> Option<v8::Local<'s, v8::Object>> {
        self.sweep();
        let charge = match &item {
            Item::Key(key) => key.size_estimate(),
            Item::Hasher(_) => HASHER_CHARGE,
        };
        self.memory.charge(charge).ok()?;
        let id = self.next.get().wrapping_add(1);
        self.next.set(id);
        let Some((object, handle)) = new_handle(scope, id, |host, id| host.crypto.collect(id))
        else {
            self.memory.release(charge);
            return None;
        };
        self.entries.borrow_mut().insert(
            id,
            Entry {
                item,
                charge,
                _handle: handle,
            },
        );
        Some(object)
    }

    /// The key a handle names; `None` for anything else.
    pub(crate) fn key(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
    ) -> Option<Rc<Key>> {
        let id = handle_id(scope, handle)?;
        match &self.entries.borrow().get(&id)?.item {
            Item::Key(key) => Some(key.clone()),
            Item::Hasher(_) => None,
        }
    }

    /// Runs `f` on the hasher a handle names (no JavaScript runs meanwhile).
    pub(crate) fn with_hasher<T>(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
        f: impl FnOnce(&mut dyn DynDigest) -> T,
    ) -> Option<T> {
        let id = handle_id(scope, handle)?;
        let mut entries = self.entries.borrow_mut();
        match &mut entries.get_mut(&id)?.item {
            Item::Hasher(hasher) => Some(f(hasher.as_mut())),
            Item::Key(_) => None,
        }
    }

    /// Forgets the entry of a handle (a finished `DigestStream`).
    pub(crate) fn remove(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        handle: v8::Local<'_, v8::Value>,
    ) {
        if let Some(id) = handle_id(scope, handle) {
            self.collect(id);
        }
    }

    /// The handle of `id` was collected: drop its entry now, or at the next
    /// insert if the table is borrowed (a finalizer may run inside any V8
    /// allocation, never while this module holds a borrow across one, but
    /// it must not panic whatever happens).
    fn collect(&self, id: u32) {
        match self.entries.try_borrow_mut() {
            Ok(mut entries) => {
                if let Some(entry) = entries.remove(&id) {
                    self.memory.release(entry.charge);
                }
            }
            Err(_) => {
                if let Ok(mut collected) = self.collected.try_borrow_mut() {
                    collected.push(id);
                }
            }
        }
    }

    fn sweep(&self) {
        let ids = match self.collected.try_borrow_mut() {
            Ok(mut collected) => std::mem::take(&mut *collected),
            Err(_) => return,
        };
        for id in ids {
            self.collect(id);
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        let charged: usize = self.entries.get_mut().values().map(|e| e.charge).sum();
        self.memory.release(charged);
    }
}
