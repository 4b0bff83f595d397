//! [`Unit`]: one Web API family as the engine registers it — its host
//! functions, its JavaScript files and its per-isolate state, declared in one
//! place (as deno's `extension!`). `host.rs` lists the core's units and the families'; everything else
//! (the `host` object, the snapshot's external references and JavaScript,
//! each isolate's state) is made from that list.
//!
//! A [`Family`] is the units of one API crate, as a binary hands them to
//! the engine (`EngineConfig::families`).
//!
//! A unit's state is any `Default` type, made once per isolate and found by
//! its type: `host.state::<T>()` (see [`UnitStates`]).

use std::any::{Any, TypeId};

use crate::bundle::Compat;
use crate::object_call::RingClass;

/// One Web API family.
pub struct Unit {
    /// For diagnostics and tests.
    pub(crate) name: &'static str,
    /// Its files in its crate's `js/` (the core's, or its family's
    /// [`Family::js`]), in evaluation order.
    pub(crate) js: &'static [&'static str],
    /// `(name on host, callback)`, in registration order.
    pub(crate) functions: Vec<(&'static str, v8::FunctionCallback)>,
    /// Makes its per-isolate state.
    pub(crate) state: Option<MakeState>,
    /// Drops what its state holds for a request that ends (or for every
    /// request, `None`, when the isolate goes): see [`RequestResources`].
    pub(crate) teardown: Option<Teardown>,
    /// Node built-ins it provides: (name without `node:`, source). Not in
    /// the snapshot: compiled when a Worker first imports one
    /// (`modules/node.rs`).
    pub(crate) node: Vec<(&'static str, &'static str)>,
    /// Globals its JavaScript defines that a Worker sees only when its
    /// compatibility settings say so; deleted at load otherwise
    /// (`host::hide_gated_globals`).
    pub(crate) gated: Vec<(&'static [&'static str], Gate)>,
    /// The globals its JavaScript defines (`internal.defineGlobal`) when
    /// it is lazy: its files are compiled into the snapshot but run only
    /// when a Worker first reads one of these (`host/lazy.rs`). Empty: the
    /// files run at snapshot time.
    pub(crate) lazy: &'static [&'static str],
    /// Its class of calls on the ring, if it has one ([`RingClass`]).
    pub(crate) ring: Option<&'static dyn RingClass>,
}

/// Whether a Worker's compatibility settings expose some globals.
pub type Gate = fn(&Compat) -> bool;

/// Makes a unit's state for a new isolate: its type and the value.
pub(crate) type MakeState = fn() -> (TypeId, Box<dyn Any>);

/// Tears down a unit's state for one request (`Some(ctx)`) or all (`None`).
pub(crate) type Teardown = fn(&dyn Any, Option<u32>);

/// A unit's per-isolate state that holds resources of requests (open
/// sockets, passed-in WebSockets): the core calls [`Self::drop_for`] when a
/// request ends, with its pending ops, timers and bodies, so the core need
/// not know what the resources are. Registered by [`Unit::request_state`].
pub trait RequestResources {
    /// Drops what belongs to request `ctx`, or everything when `ctx` is
    /// `None` (the isolate is being torn down).
    fn drop_for(&self, ctx: Option<u32>);
}

impl Unit {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            js: &[],
            functions: Vec::new(),
            state: None,
            teardown: None,
            node: Vec::new(),
            gated: Vec::new(),
            lazy: &[],
            ring: None,
        }
    }

    /// Its JavaScript files (`NN_name.js` in its crate's `js/`), in
    /// evaluation order.
    pub fn js(mut self, files: &'static [&'static str]) -> Self {
        self.js = files;
        self
    }

    /// A host function, `host.<name>` in JavaScript (see HOST.md).
    pub fn function(
        mut self,
        name: &'static str,
        callback: impl v8::MapFnTo<v8::FunctionCallback>,
    ) -> Self {
        self.functions.push((name, callback.map_fn_to()));
        self
    }

    /// A Node built-in, `node:<name>`, whose source (in its crate's `js/`: `crates/nodejs/js/`) runs as
    /// `function (host, internal, require, module, exports)`.
    pub fn node_module(mut self, name: &'static str, source: &'static str) -> Self {
        self.node.push((name, source));
        self
    }

    /// Several Node built-ins at once, each (name without `node:`, source).
    pub fn node_modules(mut self, modules: &[(&'static str, &'static str)]) -> Self {
        self.node.extend_from_slice(modules);
        self
    }

    /// Globals of its JavaScript that a Worker sees only when `gate` says
    /// its compatibility settings expose them.
    pub fn globals_if(mut self, names: &'static [&'static str], gate: Gate) -> Self {
        self.gated.push((names, gate));
        self
    }

    /// Its files run on first use, not at snapshot time: `names` are every
    /// global they define, each a lazy data property until it is first read
    /// (`host/lazy.rs`; the rules a lazy file keeps are in HOST.md).
    pub fn lazy_globals(mut self, names: &'static [&'static str]) -> Self {
        self.lazy = names;
        self
    }

    /// Its class of calls on the ring beside Durable Objects' ([`RingClass`]).
    pub fn ring_class(mut self, ring: &'static dyn RingClass) -> Self {
        self.ring = Some(ring);
        self
    }

    /// Its per-isolate state: a `T::default()` in every isolate.
    pub fn state<T: Default + 'static>(mut self) -> Self {
        self.state = Some(|| (TypeId::of::<T>(), Box::new(T::default())));
        self
    }

    /// Its per-isolate state, as [`Self::state`], which also holds
    /// resources of requests: torn down with each request
    /// ([`RequestResources`]), in unit order.
    pub fn request_state<T: Default + RequestResources + 'static>(mut self) -> Self {
        self = self.state::<T>();
        self.teardown = Some(|state, ctx| {
            if let Some(state) = state.downcast_ref::<T>() {
                state.drop_for(ctx);
            }
        });
        self
    }
}

/// The units' per-isolate states, found by type. A handful of entries, so a
/// scan beats hashing.
pub(crate) struct UnitStates(Vec<(TypeId, Box<dyn Any>)>, Vec<(usize, Teardown)>);

impl UnitStates {
    pub fn new(units: &[Unit]) -> Self {
        let mut states = Vec::new();
        let mut teardowns = Vec::new();
        for unit in units {
            let Some(make) = unit.state else { continue };
            if let Some(teardown) = unit.teardown {
                teardowns.push((states.len(), teardown));
            }
            states.push(make());
        }
        Self(states, teardowns)
    }

    /// Drops the request resources of every unit's state, in unit order
    /// (see [`RequestResources`]).
    pub(crate) fn drop_for(&self, ctx: Option<u32>) {
        for (index, teardown) in &self.1 {
            if let Some((_, state)) = self.0.get(*index) {
                teardown(state.as_ref(), ctx);
            }
        }
    }

    /// The state of type `T`; `None` when no unit declares one.
    pub(crate) fn get<T: 'static>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.0
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, state)| state.downcast_ref())
    }
}

/// A family of units an API crate registers with the engine (as deno's
/// extensions): `isolane-nodejs`'s Node built-ins, …. The binary picks the
/// families it includes (`EngineConfig::families`); their units come after
/// the core's, in the order given, and before `finalize`.
#[derive(Clone, Copy, Debug)]
pub struct Family {
    /// For diagnostics, and to tell two engines' families apart.
    pub name: &'static str,
    /// A hash of the crate's sources (`isolane_jsbuild`): part of the
    /// snapshot cache's key, as the engine's own.
    pub fingerprint: &'static str,
    /// Its units, in order.
    pub units: fn() -> Vec<Unit>,
    /// Its runtime JavaScript, the files its units name in [`Unit::js`]:
    /// the crate's `RUNTIME_JS` (`js/NN_*.js` as `isolane_jsbuild::build`
    /// embeds them), evaluated into the snapshot after the core's files
    /// and before `finalize`, in its units' order. Empty for a crate
    /// without (its JavaScript is built-in modules only).
    pub js: &'static [(&'static str, v8::OneByteConst)],
}
