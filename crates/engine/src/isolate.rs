//! [`WorkerIsolate`]: one V8 isolate + context, made from the snapshot, that
//! runs one worker revision; and [`WorkerIsolate::turn`], the only way into
//! its JavaScript.
//!
//! Thread affinity: an isolate is created, used and dropped on one engine
//! thread and never leaves it (`Rc`, no `v8::Locker`). rusty_v8 enters an
//! isolate when it is created and expects isolates to be dropped in reverse
//! order of creation; a pool evicts in LRU order instead. So every isolate is
//! exited right after creation and entered only for the synchronous span of a
//! turn (and for its disposal) — at most one isolate is entered on a thread at
//! any time, never across an `.await`, and any drop order is sound.

#[cfg(test)]
mod breakdown;

use std::cell::{Cell, OnceCell, RefCell};
use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bundle::WorkerBundle;
use crate::event_object;
use crate::host::{self, HostState, IsolateTurns, Settlement};
use crate::limits::thread_cpu_now;
use crate::memory::Memory;
use crate::observer::TerminationReason;
use crate::outcome::ExecuteError;
use crate::script;
use crate::socket::SocketMessage;
use crate::thread_ctx::ThreadCtx;
use crate::work::Event;

/// Handles into the context that every turn needs. `v8::Global`s: they must
/// be dropped before the isolate is disposed (see `Drop for WorkerIsolate`).
pub(crate) struct Globals {
    context: v8::Global<v8::Context>,
    internal: v8::Global<v8::Object>,
    handle_request: v8::Global<v8::Function>,
    timer_fired: v8::Global<v8::Function>,
    request_aborted: v8::Global<v8::Function>,
}

struct Inner {
    globals: Option<Globals>,
    env: Option<v8::Global<v8::Object>>,
    /// `ManuallyDrop`: disposed explicitly, entered, after the globals.
    isolate: ManuallyDrop<v8::OwnedIsolate>,
}

pub(crate) struct WorkerIsolate {
    /// Borrowed mutably for the span of one turn; turns never nest (host
    /// callbacks spawn tasks instead of starting turns).
    inner: RefCell<Inner>,
    pub(crate) host: Rc<HostState>,
    condemned: Cell<Option<TerminationReason>>,
    /// The heap limit V8 enforces; lowered once when a spare made with a
    /// larger one is given to a worker (`lower_heap_limit`).
    heap_limit: Cell<usize>,
    /// Heap and off-heap bytes, one budget. V8 holds a raw pointer to it
    /// (near-heap-limit callback) until the isolate is disposed in `Drop`,
    /// before any field drops; its allocator holds an `Arc` of its own.
    memory: Arc<Memory>,
    /// Its worker's namespace as `fairness.rs` keys it, once loaded.
    tenant_key: OnceCell<u64>,
    /// Its modules' code caches are to be made after its first request.
    code_cache_owed: Cell<bool>,
}

/// Why a turn did not complete normally.
#[derive(Debug)]
pub(crate) enum TurnError {
    /// JavaScript threw; message and stack.
    Threw { message: String, stack: String },
    /// A limit stopped the turn; the isolate is condemned.
    Terminated(TerminationReason),
    /// The isolate was condemned earlier; nothing ran.
    Condemned,
}

/// Why an isolate could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CreateError {
    #[error("the snapshot context lacks {what}")]
    Runtime { what: &'static str },
}

// === impl WorkerIsolate ===

impl WorkerIsolate {
    /// A blank isolate: snapshot → context, no worker yet.
    pub(crate) fn create(
        thread: &Rc<ThreadCtx>,
        heap_limit: usize,
    ) -> Result<Rc<Self>, CreateError> {
        let memory = Memory::new(heap_limit);
        let params = v8::CreateParams::default()
            .snapshot_blob(v8::StartupData::from(thread.snapshot))
            .external_references(crate::snapshot::external_references().into())
            .heap_limits(0, heap_limit)
            // Off-heap bytes (ArrayBuffers) count against the same limit.
            .array_buffer_allocator(memory.allocator())
            // No blocking waits on shared memory (there is none to share:
            // see `platform.rs`), even if a worker found an `Atomics.wait`.
            .allow_atomics_wait(false);
        // Entered on this thread by `Isolate::new`; exited at the end.
        let mut isolate = v8::Isolate::new(params);
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
        isolate.set_promise_reject_callback(host::unhandled::promise_reject);
        isolate.set_capture_stack_trace_for_uncaught_exceptions(true, 16);
        // No Wasm compiled from bytes at run time (`WebAssembly.compile`,
        // `new WebAssembly.Module(bytes)`), as on Cloudflare: Wasm comes
        // only from the bundle's modules, which the engine compiles itself
        // after rewriting their memories (modules/wasm.rs).
        isolate.set_allow_wasm_code_generation_callback(refuse_wasm);
        isolate.set_host_import_module_dynamically_callback(crate::modules::import_dynamically);
        memory.attach(&mut isolate);
        memory.install_heap_callback(&mut isolate);
        memory.install_gc_callback(&mut isolate);
        // On error the isolate is dropped while still entered, as rusty_v8 wants.
        let (globals, dom_exception) = init_context(&mut isolate)?;
        host::error::set_dom_exception(&mut isolate, dom_exception);
        let worker = Rc::<WorkerIsolate>::new_cyclic(|me| {
            let host = Rc::new(HostState::new(thread.clone(), me.clone(), memory.clone()));
            isolate.set_slot(host.clone());
            // SAFETY: `Isolate::new` entered this isolate on this thread and
            // nothing entered another since; exiting restores the previous
            // state. From here on it is entered only inside `turn`/`drop`.
            unsafe { isolate.exit() };
            WorkerIsolate {
                inner: RefCell::new(Inner {
                    globals: Some(globals),
                    env: None,
                    isolate: ManuallyDrop::new(isolate),
                }),
                host,
                condemned: Cell::new(None),
                heap_limit: Cell::new(heap_limit),
                code_cache_owed: Cell::new(false),
                memory,
                tenant_key: OnceCell::new(),
            }
        });
        Ok(worker)
    }

    pub(crate) fn heap_limit(&self) -> usize {
        self.heap_limit.get()
    }

    /// Lowers the heap limit of a blank isolate to `limit` (a spare made with
    /// the default limit, given to a worker with a smaller `memory_mib`).
    /// V8 has no setter for the limit of a live isolate; removing the
    /// near-heap-limit callback with a limit restores the old-generation
    /// limit to it (never below what the heap already holds, which in a blank
    /// isolate is the runtime's ~1 MiB), and the callback goes back on at
    /// once, so the lower limit is enforced like any other.
    pub(crate) fn lower_heap_limit(&self, limit: usize) {
        if limit >= self.heap_limit.get() {
            return;
        }
        let mut inner = self.inner.borrow_mut();
        let isolate: &mut v8::OwnedIsolate = &mut inner.isolate;
        let _entered = Entered::new(isolate);
        self.memory.reinstall_heap_callback(isolate, limit);
        self.memory.set_limit(limit);
        self.heap_limit.set(limit);
    }

    pub(crate) fn condemned(&self) -> Option<TerminationReason> {
        self.condemned.get()
    }

    pub(crate) fn worker(&self) -> Option<&Arc<WorkerBundle>> {
        self.host.worker.get()
    }

    /// Memory in use, JS heap (measured now) plus off-heap bytes: what
    /// `memory_mib` limits, for the pool's memory budget and gauges.
    pub(crate) fn memory_used(&self) -> usize {
        let Ok(mut inner) = self.inner.try_borrow_mut() else {
            return self.memory.used();
        };
        let isolate: &mut v8::OwnedIsolate = &mut inner.isolate;
        let _entered = Entered::new(isolate);
        self.memory
            .note_heap(isolate.get_heap_statistics().used_heap_size());
        self.memory.used()
    }

    /// Runs one turn: enters the isolate and its context, arms the watchdog,
    /// runs `f` and then the microtask queue, charges the CPU time to request
    /// `ctx`, and reports an exception or a termination.
    ///
    /// `f` returns `None` when it stopped on a JS exception.
    pub(crate) fn turn<R>(
        &self,
        ctx: u32,
        f: impl FnOnce(
            &mut v8::PinScope<'_, '_>,
            &Globals,
            Option<&v8::Global<v8::Object>>,
        ) -> Option<R>,
    ) -> Result<R, TurnError> {
        // A retired isolate (a limit stopped one of its turns) still runs
        // the turns of the requests already in it, never a new one.
        if self.condemned.get().is_some() && !self.host.request_live(ctx) {
            return Err(TurnError::Condemned);
        }
        // Its tree of calls used its CPU: no turn (`isolane-calltree`).
        if let Some(first) = self.host.tree_cpu_spent(ctx) {
            let _ = first.then(|| {
                self.fail_at_limit(ctx, TerminationReason::CpuLimit, Duration::ZERO, false)
            });
            return Err(TurnError::Terminated(TerminationReason::CpuLimit));
        }
        let mut inner = self.inner.borrow_mut();
        let Inner {
            globals,
            env,
            isolate,
        } = &mut *inner;
        let Some(globals) = globals.as_ref() else {
            return Err(TurnError::Condemned);
        };
        let thread = &self.host.thread;
        self.host.set_current(ctx);
        // Recorded before any JavaScript runs, cleared once none does: a
        // crash between the two is this Worker's turn (`turn_map.rs`).
        if let Some(slot) = &thread.turn_slot {
            slot.enter(self.host.worker_id());
        }
        self.host.tick_clock();
        let cpu_start = thread_cpu_now();
        let deadline = self
            .host
            .deadline(ctx)
            .unwrap_or_else(|| Instant::now() + self.host.startup_cpu() * 20);
        let cpu_budget = self.host.cpu_remaining(ctx);
        thread.watchdog.arm(
            isolate.thread_safe_handle(),
            // Same clock the watchdog reads through the thread's clock id.
            cpu_start,
            cpu_budget,
            deadline,
        );
        let isolate: &mut v8::OwnedIsolate = isolate;
        let entered = Entered::new(isolate);
        // V8's large C++ allocations (a JSON text being built) count too.
        let watch = crate::native_alloc::Watch::new(&self.memory);
        let outcome = {
            // Handle scope for this turn: every Local made by `f` and by the
            // exception handling below dies with it; what must outlive the
            // turn is kept as a `v8::Global`.
            v8::scope!(let scope, isolate);
            let context = v8::Local::new(scope, &globals.context);
            let scope = &mut v8::ContextScope::new(scope, context);
            v8::tc_scope!(let tc, scope);
            let value = f(tc, globals, env.as_ref());
            if value.is_some() && !tc.has_terminated() {
                tc.perform_microtask_checkpoint();
            }
            // What is still rejected without a handler now is reported;
            // nothing is when the turn was stopped.
            if tc.has_terminated() {
                self.host.rejections.clear();
            } else {
                host::unhandled::report(tc, &self.host);
                // Memory V8 took without the allocator (resizable buffers)
                // counts too; over the limit this marks the hit.
                self.memory.measure_external();
            }
            let fired = thread.watchdog.disarm();
            let heap_hit = self.memory.take_hit();
            if heap_hit || fired.is_some() || tc.has_terminated() {
                self.recover(tc, heap_hit);
            }
            if heap_hit {
                Err(TurnError::Terminated(TerminationReason::MemoryLimit))
            } else if let Some(reason) = fired {
                Err(TurnError::Terminated(reason))
            } else if tc.has_terminated() {
                Err(TurnError::Terminated(TerminationReason::CpuLimit))
            } else if let Some(value) = value.filter(|_| !tc.has_caught()) {
                Ok(value)
            } else {
                let (exception, message, stack) = (tc.exception(), tc.message(), tc.stack_trace());
                let (message, stack) = script::describe(tc, exception, message, stack);
                Err(TurnError::Threw { message, stack })
            }
        };
        drop(watch);
        drop(entered);
        drop(inner);
        if let Some(slot) = &thread.turn_slot {
            slot.leave();
        }
        let cpu_end = thread_cpu_now();
        let used = cpu_end.saturating_sub(cpu_start);
        self.host.add_cpu(ctx, used);
        if let Some(worker) = self.worker() {
            let key = *self
                .tenant_key
                .get_or_init(|| crate::fairness::tenant_key(worker.namespace()));
            thread
                .shared
                .loads
                .turn_ended(thread.index, Some(key), used, cpu_end);
            thread
                .schedule
                .borrow_mut()
                .charge(worker.namespace(), used);
            if let Some(quota) = worker.cpu_ms_per_second {
                (thread.shared.quotas).charge(worker.namespace(), quota, used, Instant::now());
            }
        }
        let hit_cpu = self.memory.take_hit_cpu();
        if let Err(TurnError::Terminated(reason)) = &outcome {
            // When the limit was reached, counted from the turn's start.
            let reached = match reason {
                TerminationReason::CpuLimit => cpu_budget,
                TerminationReason::MemoryLimit => {
                    hit_cpu.map_or(used, |at| at.saturating_sub(cpu_start))
                }
                TerminationReason::WallTimeout => used,
            };
            self.condemn(ctx, *reason, used.saturating_sub(reached));
        }
        outcome
    }

    /// After a turn stopped by a limit (or one the watchdog stopped just as
    /// it ended): the isolate runs on for the other requests already in it,
    /// so the termination is cancelled and, after the memory limit, the
    /// garbage of the stopped turn is collected and the heap limit, raised
    /// to let the termination unwind (`memory.rs`), is put back.
    fn recover(&self, isolate: &mut v8::Isolate, heap_hit: bool) {
        isolate.cancel_terminate_execution();
        if heap_hit {
            isolate.low_memory_notification();
            self.memory
                .reinstall_heap_callback(isolate, self.heap_limit.get());
        }
    }

    /// A limit stopped request `ctx`: it fails alone, as `reason`. When the
    /// limit stopped JavaScript (`retire`), the isolate takes no new
    /// requests (the stopped turn may have left the worker's own state half
    /// updated): the pool drops it, and the requests already in it finish.
    /// `overrun` is the CPU time the turn kept running past the limit,
    /// holding the thread from everyone: past `schedule::OVERRUN` its
    /// namespace is penalized (see `schedule.rs`).
    fn condemn(&self, ctx: u32, reason: TerminationReason, overrun: Duration) {
        self.fail_at_limit(ctx, reason, overrun, true);
    }

    fn fail_at_limit(&self, ctx: u32, reason: TerminationReason, overrun: Duration, retire: bool) {
        if retire {
            self.condemned.set(Some(reason));
        }
        let thread = &self.host.thread;
        thread.observer.termination(thread.index, reason);
        if retire && reason != TerminationReason::WallTimeout {
            self.penalize(overrun);
        }
        let limits = self.worker().map(|w| w.limits).unwrap_or_default();
        let error = match reason {
            TerminationReason::CpuLimit => ExecuteError::CpuLimit {
                limit_ms: self.host.cpu_limit(ctx).map_or_else(
                    || thread.config.cpu_limit_ms(&limits),
                    |limit| u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                ),
            },
            TerminationReason::MemoryLimit => ExecuteError::MemoryLimit {
                limit_mib: u64::from(limits.memory_mib),
            },
            TerminationReason::WallTimeout => ExecuteError::WallTimeout {
                limit_ms: u64::from(limits.wall_ms),
            },
        };
        tracing::warn!(
            worker.id = self.host.worker_id(),
            revision = self.host.revision(),
            thread = thread.index,
            request.id = self.host.request_id(ctx).as_deref().unwrap_or(""),
            reason = reason.as_str(),
            retire,
            "a limit stopped the request"
        );
        self.host.fail_request(ctx, error);
    }

    /// The turn overran its limit on this thread: its namespace waits.
    fn penalize(&self, overrun: Duration) {
        let thread = &self.host.thread;
        let namespace = crate::bundle::namespace_of(self.host.worker_id());
        let penalty = thread
            .schedule
            .borrow_mut()
            .overran(namespace, overrun, Instant::now());
        if let Some(length) = penalty {
            thread.observer.quarantined(thread.index);
            tracing::warn!(
                worker.id = self.host.worker_id(),
                revision = self.host.revision(),
                thread = thread.index,
                overrun_ms = u64::try_from(overrun.as_millis()).unwrap_or(u64::MAX),
                penalty_ms = u64::try_from(length.as_millis()).unwrap_or(u64::MAX),
                "a turn ran on past its limit; its namespace waits on this thread"
            );
        }
    }

    /// Loads a worker into this blank isolate: compile, evaluate, find the
    /// handler, build `env`.
    pub(crate) fn load(&self, bundle: Arc<WorkerBundle>) -> Result<(), ExecuteError> {
        // A blank isolate is loaded exactly once; a second load would be a bug
        // in the pool, reported as a script error rather than a panic.
        if self.host.worker.set(bundle.clone()).is_err() {
            return Err(ExecuteError::Script {
                message: "internal: isolate already holds a worker".to_owned(),
            });
        }
        let code_cache = self.host.thread.shared.code_cache.clone();
        let env = self.turn(0, |scope, globals, _| {
            script::evaluate(scope, &globals.internal, &bundle, code_cache.as_ref())
        });
        match env {
            Ok(env) => {
                let mut inner = self.inner.borrow_mut();
                inner.env = Some(env);
                let owed = crate::code_cache::owed::owes(&inner.isolate);
                self.code_cache_owed.set(owed);
                Ok(())
            }
            Err(TurnError::Threw { message, stack }) => {
                crate::host::console::report_exception(
                    &self.host,
                    0,
                    "worker script failed",
                    &message,
                    &stack,
                );
                Err(ExecuteError::Script { message })
            }
            Err(TurnError::Terminated(reason)) => Err(match reason {
                TerminationReason::MemoryLimit => ExecuteError::MemoryLimit {
                    limit_mib: u64::from(bundle.limits.memory_mib),
                },
                _ => ExecuteError::Script {
                    message: "the worker's top-level code exceeded its startup CPU budget"
                        .to_owned(),
                },
            }),
            Err(TurnError::Condemned) => Err(ExecuteError::Canceled {
                reason: "the isolate was discarded",
            }),
        }
    }

    /// `internal.handleRequest(ctxId, method, url, headers, bodyId, env,
    /// event)`: `event` is the job's [`Event`] as one object
    /// (`event_object.rs`), and not passed for a fetch, the hot path, which
    /// passes its request only.
    pub(crate) fn handle_request(
        &self,
        ctx: u32,
        parts: &http::request::Parts,
        url: &str,
        body_id: u32,
        event: &Event,
    ) -> Result<(), TurnError> {
        self.turn(ctx, |scope, globals, env| {
            let function = v8::Local::new(scope, &globals.handle_request);
            let receiver = v8::Local::new(scope, &globals.internal);
            let env: v8::Local<v8::Value> = match env {
                Some(env) => v8::Local::new(scope, env).into(),
                None => v8::Object::new(scope).into(),
            };
            let event = event_object::event_object(scope, event)?;
            let args = [
                v8::Integer::new_from_unsigned(scope, ctx).into(),
                host::js_string(scope, parts.method.as_str())?,
                host::js_string(scope, url)?,
                host::header_block(scope, &parts.headers)?.into(),
                v8::Integer::new_from_unsigned(scope, body_id).into(),
                env,
            ];
            let called = match event {
                // A fetch: its request's values only, no event object.
                None => function.call(scope, receiver.into(), &args),
                Some(event) => {
                    let [ctx, method, url, headers, body, env] = args;
                    let args = [ctx, method, url, headers, body, env, event];
                    function.call(scope, receiver.into(), &args)
                }
            };
            called.map(|_| ())
        })
    }

    /// Makes the code caches of its modules and script compiled without one
    /// (`code_cache.rs`), once: after its first request is over, off that
    /// request's path. Every other call is one flag read. No JavaScript
    /// runs (V8 serialises what it compiled), so it is no turn: no limit
    /// applies and the Worker is charged nothing, as for its compile.
    pub(crate) fn make_owed_code_caches(&self) {
        if !self.code_cache_owed.take() || self.condemned.get().is_some() {
            return;
        }
        let mut inner = self.inner.borrow_mut();
        let Inner {
            globals, isolate, ..
        } = &mut *inner;
        let Some(globals) = globals.as_ref() else {
            return;
        };
        let Some(cache) = self.host.thread.shared.code_cache.as_deref() else {
            return;
        };
        let isolate: &mut v8::OwnedIsolate = isolate;
        let entered = Entered::new(isolate);
        {
            v8::scope!(let scope, isolate);
            let context = v8::Local::new(scope, &globals.context);
            let scope = &mut v8::ContextScope::new(scope, context);
            crate::code_cache::owed::make(scope, cache);
        }
        drop(entered);
    }

    /// Runs `internal.warmUp()` in this isolate (a spare, before any worker
    /// is loaded): the request path's lazy compiles, regular-expression
    /// compiles, object shapes and feedback that the snapshot does not keep
    /// are made now, off the request path, instead of on the first request.
    /// No request is live (context 0), so every host call it makes is a
    /// no-op; it leaves no state in the runtime.
    pub(crate) fn warm_up(&self) -> Result<(), TurnError> {
        self.turn(0, |scope, globals, _| {
            let internal = v8::Local::new(scope, &globals.internal);
            let key = v8::String::new(scope, "warmUp")?;
            let function =
                v8::Local::<v8::Function>::try_from(internal.get(scope, key.into())?).ok()?;
            function.call(scope, internal.into(), &[]).map(|_| ())
        })
    }

    fn log_async_error(&self, ctx: u32, result: Result<(), TurnError>) {
        if let Err(TurnError::Threw { message, stack }) = result {
            crate::host::console::report_exception(
                &self.host,
                ctx,
                "uncaught exception in a callback",
                &message,
                &stack,
            );
        }
    }
}

// === impl IsolateTurns for WorkerIsolate ===

impl IsolateTurns for WorkerIsolate {
    fn host(&self) -> &HostState {
        &self.host
    }

    fn charge_offloaded_cpu(&self, ctx: u32, cpu: Duration) -> bool {
        let remaining = self.host.cpu_remaining(ctx);
        self.host.add_cpu(ctx, cpu);
        if !self.host.request_live(ctx) || cpu <= remaining {
            return true;
        }
        // Off this thread: no JavaScript was stopped and no neighbour here
        // waited, so the request fails alone and the isolate stays.
        self.fail_at_limit(ctx, TerminationReason::CpuLimit, Duration::ZERO, false);
        false
    }

    fn settle(&self, op: u32, settlement: Settlement) {
        let Some(ctx) = self.host.op_ctx(op) else {
            return;
        };
        let result = self.turn(ctx, |scope, _, _| {
            let (_, resolver) = self.host.take_op(op)?;
            let resolver = v8::Local::new(scope, resolver);
            match settlement.into_js(scope) {
                Ok(value) => resolver.resolve(scope, value),
                Err(error) => resolver.reject(scope, error),
            };
            Some(())
        });
        self.log_async_error(ctx, result);
    }

    fn fire_timer(&self, id: u32) {
        let Some(ctx) = self.host.fire_timer(id) else {
            return;
        };
        let result = self.turn(ctx, |scope, globals, _| {
            let function = v8::Local::new(scope, &globals.timer_fired);
            let receiver = v8::Local::new(scope, &globals.internal);
            let id = v8::Integer::new_from_unsigned(scope, id).into();
            function.call(scope, receiver.into(), &[id]).map(|_| ())
        });
        self.log_async_error(ctx, result);
    }

    fn request_aborted(&self, ctx: u32) {
        if !self.host.request_live(ctx) {
            return;
        }
        let result = self.turn(ctx, |scope, globals, _| {
            let function = v8::Local::new(scope, &globals.request_aborted);
            let receiver = v8::Local::new(scope, &globals.internal);
            let id = v8::Integer::new_from_unsigned(scope, ctx).into();
            function.call(scope, receiver.into(), &[id]).map(|_| ())
        });
        self.log_async_error(ctx, result);
    }

    fn socket_event(&self, ctx: u32, socket: u32, message: SocketMessage) {
        if !self.host.request_live(ctx) {
            return;
        }
        let wall = self.worker().map(|w| w.limits.wall()).unwrap_or_default();
        self.host.top_up(ctx, wall);
        let result = self.deliver(ctx, socket, message);
        self.log_async_error(ctx, result);
    }
}

impl WorkerIsolate {
    /// `internal.webSocketEvent(id, kind, data, code, reason)`: kind 0 text,
    /// 1 binary (a Uint8Array, charged to the Worker), 2 close.
    fn deliver(&self, ctx: u32, socket: u32, message: SocketMessage) -> Result<(), TurnError> {
        self.turn(ctx, |scope, globals, _| {
            let internal = v8::Local::new(scope, &globals.internal);
            let key = v8::String::new(scope, "webSocketEvent")?;
            let function =
                v8::Local::<v8::Function>::try_from(internal.get(scope, key.into())?).ok()?;
            let [kind, data, code, reason] = event_object::message_args(scope, &message)?;
            let socket = v8::Integer::new_from_unsigned(scope, socket).into();
            let args = [socket, kind, data, code, reason];
            function.call(scope, internal.into(), &args).map(|_| ())
        })
    }
}

impl Drop for WorkerIsolate {
    fn drop(&mut self) {
        // Promise resolvers and pending tasks first: they refer into the heap.
        self.host.clear();
        // The allocator outlives the isolate while backing stores live.
        self.memory.detach();
        let inner = self.inner.get_mut();
        inner.globals = None;
        inner.env = None;
        // SAFETY: no other isolate is entered on this thread (turns do not
        // nest and never span an await), so entering makes this isolate the
        // current one, which `OwnedIsolate::drop` asserts before it exits and
        // disposes it. Dropped exactly once, here; `heap` outlives it.
        unsafe {
            inner.isolate.enter();
            inner.isolate.remove_slot::<Rc<HostState>>();
            crate::modules::forget(&mut inner.isolate);
            crate::code_cache::owed::forget(&mut inner.isolate);
            ManuallyDrop::drop(&mut inner.isolate);
        }
    }
}

/// V8 asks before compiling Wasm from JavaScript: never (the engine's own
/// compile of a bundle module does not ask).
unsafe extern "C" fn refuse_wasm(
    _context: v8::Local<v8::Context>,
    _source: v8::Local<v8::String>,
) -> bool {
    false
}

/// Enters an isolate for a synchronous span; exits on drop.
struct Entered(*const v8::Isolate);

impl Entered {
    fn new(isolate: &v8::Isolate) -> Self {
        // SAFETY: isolates are entered only for synchronous spans and at most
        // one at a time per thread (see the module doc), so the enter/exit
        // pairs nest properly.
        unsafe { isolate.enter() };
        Self(std::ptr::from_ref(isolate))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a live `&Isolate` whose owner
        // (`Inner`) outlives this guard, and this isolate is the current one.
        unsafe { (*self.0).exit() };
    }
}

/// Makes the context, disables code generation from strings, and takes the
/// runtime's `internal` object out of the global scope; also returns the
/// runtime's `DOMException` constructor, for the host's errors.
pub(crate) fn init_context(
    isolate: &mut v8::OwnedIsolate,
) -> Result<(Globals, v8::Global<v8::Function>), CreateError> {
    // Handle scope for the setup only; what lasts becomes `Globals`.
    v8::scope!(let scope, isolate);
    // From the snapshot's default context: the runtime JS is already there.
    let context = v8::Context::new(scope, Default::default());
    context.set_allow_generation_from_strings(false);
    let scope = &mut v8::ContextScope::new(scope, context);
    let global = context.global(scope);
    let key = v8::String::new(scope, "__isolane_internal")
        .ok_or(CreateError::Runtime { what: "strings" })?;
    let internal = global
        .get(scope, key.into())
        .and_then(|v| v8::Local::<v8::Object>::try_from(v).ok())
        .ok_or(CreateError::Runtime {
            what: "globalThis.__isolane_internal",
        })?;
    global.delete(scope, key.into());
    let handle_request = function(scope, internal, "handleRequest")?;
    let timer_fired = function(scope, internal, "timerFired")?;
    let request_aborted = function(scope, internal, "requestAborted")?;
    let dom_exception = function(scope, internal, "DOMException")?;
    // V8 adds `WebAssembly` to each context made from the snapshot: wrap
    // it (js/25_wasm.js: memories held to the limit) before any worker
    // code runs.
    let install_wasm = function(scope, internal, "installWebAssembly")?;
    install_wasm
        .call(scope, internal.into(), &[])
        .ok_or(CreateError::Runtime {
            what: "internal.installWebAssembly",
        })?;
    let globals = Globals {
        context: v8::Global::new(scope, context),
        internal: v8::Global::new(scope, internal),
        handle_request: v8::Global::new(scope, handle_request),
        timer_fired: v8::Global::new(scope, timer_fired),
        request_aborted: v8::Global::new(scope, request_aborted),
    };
    Ok((globals, v8::Global::new(scope, dom_exception)))
}

fn function<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    object: v8::Local<'s, v8::Object>,
    name: &'static str,
) -> Result<v8::Local<'s, v8::Function>, CreateError> {
    let key = v8::String::new(scope, name).ok_or(CreateError::Runtime { what: "strings" })?;
    object
        .get(scope, key.into())
        .and_then(|v| v8::Local::<v8::Function>::try_from(v).ok())
        .ok_or(CreateError::Runtime {
            what: name_of(name),
        })
}

fn name_of(name: &'static str) -> &'static str {
    match name {
        "handleRequest" => "internal.handleRequest",
        "timerFired" => "internal.timerFired",
        "requestAborted" => "internal.requestAborted",
        "installWebAssembly" => "internal.installWebAssembly",
        "DOMException" => "internal.DOMException",
        _ => "an internal function",
    }
}
