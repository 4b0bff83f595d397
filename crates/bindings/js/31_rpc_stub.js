// 31_rpc_stub.js — passing by reference over JS RPC, as on Cloudflare: a
// function or an RpcTarget (from `cloudflare:workers`) found in a call's
// arguments or result, in arrays and plain objects, is sent as a stub.
// The sender exports it (host.rpcExport: a random token, the right to
// call it, src/stub.rs); the receiver gets a stub that calls back into the
// sender's isolate, in the request that passed it (host.stubCall), and
// returns a promise. A stub received may be sent on (its token goes as it
// is). Methods and getters of an RpcTarget are reached as a
// WorkerEntrypoint's (32_rpc_target.js's rules).
//
// Lifetimes (workerd's rule): what a call's arguments exported is released
// when the call ends, and the callee's stubs of them are disposed then; a
// stub in a result lives until it is disposed (`stub[Symbol.dispose]()`)
// or the request that received it ends, and the request that returned it
// stays open until then (ctx.waitUntil), within its wall limit. A call
// into a stub after that rejects.
//
// On the wire a reference is `{[REF]: i}`, `refs[i]` its token (31_rpc.js's
// payload).
'use strict';

const REF = '\u0000isolane.rpc.ref';
const DISPOSE = Symbol.dispose ?? Symbol.for('dispose');
const stubStates = new WeakMap(); // stub → { token, disposed, notify }
const exported = new Map();       // export id → { target, ctxId, token, onRelease }
const heldByCtx = new Map();      // request → stubs received in results
const serving = new Set();        // requests whose callbacks are taken
let nextExport = 1;

function byReference(value) {
  return typeof value === 'function' || (internal.RpcTarget !== undefined && value instanceof internal.RpcTarget);
}

function isContainer(value) {
  if (!internal.isObject(value)) return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// Whether `value` holds something passed by reference.
function holdsRefs(value, seen) {
  if (byReference(value)) return true;
  if (!isContainer(value) || seen.has(value)) return false;
  seen.add(value);
  for (const key of Object.keys(value)) if (holdsRefs(value[key], seen)) return true;
  return false;
}

// `value` with each reference swapped for `{[REF]: i}` (copies of the
// containers on the way; cycles kept), its token pushed on `out.refs`.
function swap(value, out, memo) {
  if (byReference(value)) {
    out.refs.push(tokenOf(value, out));
    return { [REF]: out.refs.length - 1 };
  }
  if (!isContainer(value)) return value;
  if (memo.has(value)) return memo.get(value);
  const copy = Array.isArray(value) ? [] : {};
  memo.set(value, copy);
  for (const key of Object.keys(value)) {
    Object.defineProperty(copy, key, { value: swap(value[key], out, memo), enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

function tokenOf(value, out) {
  const stub = stubStates.get(value);
  if (stub !== undefined) {
    live(stub);
    return stub.token;
  }
  const id = nextExport++;
  const [token, fresh] = host.rpcExport(id);
  exported.set(id, { target: value, ctxId: host.rpcCtx(), token, onRelease: null });
  out.exports.push(id);
  if (fresh) serveCallbacks();
  return token;
}

// `values` (an array) ready to send: as they are, or with their references
// swapped (`refs` the tokens, `exports` what this isolate exported).
function outgoing(values) {
  // The common call passes no object at all: no walk.
  if (!values.some(internal.isObject) || !holdsRefs(values, new Set())) return { values, refs: undefined, exports: [] };
  const out = { refs: [], exports: [] };
  const swapped = swap(values, out, new Map());
  return { values: swapped, refs: out.refs, exports: out.exports };
}

// The received `values` with each `{[REF]: i}` replaced by a stub of
// `refs[i]`, in place; the stubs pushed on `held`.
function incoming(values, refs, held, notify) {
  const stubs = refs.map((token) => makeStub(token, held, notify));
  const seen = new Set();
  const walk = (container) => {
    if (seen.has(container)) return;
    seen.add(container);
    for (const key of Object.keys(container)) {
      const value = container[key];
      if (!isContainer(value)) continue;
      const keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === REF) container[key] = stubs[value[REF]];
      else walk(value);
    }
  };
  walk(values);
  return values;
}

// Releases what a finished call's arguments exported.
function release(exports) {
  for (const id of exports) {
    const entry = exported.get(id);
    if (entry === undefined) continue;
    exported.delete(id);
    host.rpcRelease(entry.token, false);
  }
}

// A promise that settles once each of `exports` (a result's) is released.
function untilReleased(exports) {
  return Promise.all(exports.map((id) => new Promise((resolve) => {
    const entry = exported.get(id);
    if (entry === undefined) resolve();
    else entry.onRelease = resolve;
  })));
}

function live(state) {
  if (state.disposed) throw new Error('Attempted to use RPC stub after it has been disposed.');
}

function dispose(state) {
  if (state.disposed) return;
  state.disposed = true;
  if (state.notify) host.rpcRelease(state.token, true);
}

// The stubs received in results by the current request, disposed when it ends.
function heldHere() {
  const ctxId = host.rpcCtx();
  let held = heldByCtx.get(ctxId);
  if (held === undefined) heldByCtx.set(ctxId, held = []);
  return held;
}

function makeStub(token, held, notify) {
  const state = { token, disposed: false, notify };
  held.push(state);
  const members = new Map();
  const stub = internal.proxy(() => {}, {
    apply(_target, _self, args) { return stubCall(state, null, args); },
    get(_target, name) {
      if (name === DISPOSE) return () => dispose(state);
      if (typeof name !== 'string' || name === 'then') return undefined;
      let member = members.get(name);
      if (member === undefined) members.set(name, member = stubMember(state, name));
      return member;
    },
    has() { return false; },
    set() { return false; },
  });
  stubStates.set(stub, state);
  return stub;
}

// `stub.name`: called, a method call; awaited, a property's read.
function stubMember(state, name) {
  const member = (...args) => stubCall(state, name, args);
  member.then = (resolve, reject) => {
    const call = () => { live(state); return host.stubCall(state.token, name, host.serialize({ get: true })); };
    return internal.rpcWire.settle(call, []).then(resolve, reject);
  };
  return member;
}

async function stubCall(state, method, args) {
  live(state);
  const { bytes, exports } = await internal.rpcWire.encode(args);
  return internal.rpcWire.settle(() => host.stubCall(state.token, method, bytes), exports);
}

// ---- the exporter's side: the callbacks into this isolate ----

function serveCallbacks() {
  const ctxId = host.rpcCtx();
  if (serving.has(ctxId)) return;
  serving.add(ctxId);
  (async () => {
    for (;;) serveCallback(await host.rpcNext());
  })().then(undefined, (e) => internal.reportError(e));
}

function invoke(target, name, args) {
  if (name === null) {
    if (typeof target !== 'function') throw new TypeError('The RPC stub is not a function.');
    return Reflect.apply(target, undefined, args);
  }
  const value = internal.rpcMember(target, typeof target === 'function', name);
  if (args === undefined) return value;
  if (typeof value !== 'function') throw new TypeError(`"${name}" is not a function.`);
  return Reflect.apply(value, target, args);
}

async function serveCallback({ export: id, method, payload, reply }) {
  const entry = exported.get(id);
  if (reply === 0) {
    if (entry === undefined) return;
    exported.delete(id);
    entry.onRelease?.();
    return;
  }
  const { encode, decode, encodeError } = internal.rpcWire;
  const held = [];
  try {
    if (entry === undefined) throw new Error('Attempted to use RPC stub after it has been disposed.');
    const args = decode(payload, held, false);
    const result = await invoke(entry.target, method, args);
    host.rpcReply(reply, false, (await encode([result])).bytes);
  } catch (e) {
    host.rpcReply(reply, true, encodeError(e));
  } finally {
    for (const state of held) state.disposed = true;
  }
}

internal.requestEndHooks.add((ctxId) => {
  for (const state of heldByCtx.get(ctxId) ?? []) dispose(state);
  heldByCtx.delete(ctxId);
  serving.delete(ctxId);
  for (const [id, entry] of exported) if (entry.ctxId === ctxId) exported.delete(id);
});

internal.rpcRefs = { REF, outgoing, incoming, release, untilReleased, heldHere };
