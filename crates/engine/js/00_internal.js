// 00_internal.js — the `internal` object the engine calls into, plus small
// helpers shared by the later files (kept on `internal`, never global).
'use strict';

internal = {};
Object.defineProperty(globalThis, '__isolane_internal', {
  value: internal, writable: true, configurable: true, enumerable: false,
});

// The runtime's own code uses these, not the global `ArrayBuffer`, which
// 20_memory.js replaces with a proxy that charges resizable buffers: a
// proxy's property loads and `instanceof` are slow, and the request path
// uses both.
internal.NativeArrayBuffer = ArrayBuffer;
internal.isArrayBufferView = ArrayBuffer.isView;

// Where `defineGlobal` puts the globals of a lazy unit while its files run.
let lazyExports;

// Install a Web IDL-style global: writable, configurable, not enumerable.
internal.defineGlobal = function defineGlobal(name, value) {
  if (lazyExports !== undefined) {
    lazyExports[name] = value;
    return;
  }
  Object.defineProperty(globalThis, name, {
    value, writable: true, configurable: true, enumerable: false,
  });
};

// A lazy unit (src/host/lazy.rs): `files` are its files' functions, not
// yet run; `names` the globals they define. Returns, for each name, a thunk
// the engine's getter calls on the first read: the first of them runs the
// files once, in the Worker's context and possibly after its code patched
// built-ins (which can at worst break that Worker's own APIs), and gives
// each name its value. A name the files define but `names` lacks is an
// error, and so is a read of one while the files run.
internal.lazyGlobals = function lazyGlobals(files, names) {
  let exports;
  let loading = false;
  const load = () => {
    if (exports !== undefined) return exports;
    if (loading) throw new TypeError('a lazy global was read while its unit loads');
    const outer = lazyExports;
    const defined = { __proto__: null };
    lazyExports = defined;
    loading = true;
    try {
      for (let i = 0; i < files.length; i++) files[i](host, internal);
    } finally {
      lazyExports = outer;
      loading = false;
    }
    for (const name in defined) {
      let declared = false;
      for (let i = 0; i < names.length; i++) declared ||= names[i] === name;
      if (!declared) throw new Error(`a lazy unit defines the undeclared global ${name}`);
    }
    exports = defined;
    return exports;
  };
  const thunks = { __proto__: null };
  for (const name of names) thunks[name] = () => load()[name];
  return thunks;
};

// Make the given own properties of an object non-enumerable (class methods
// already are; this is for objects built from literals).
internal.hideAll = function hideAll(obj) {
  for (const key of Reflect.ownKeys(obj)) {
    const d = Object.getOwnPropertyDescriptor(obj, key);
    d.enumerable = false;
    Object.defineProperty(obj, key, d);
  }
  return obj;
};

// Web IDL accessors and operations are enumerable on the prototype; with
// `tag`, the prototype's Symbol.toStringTag is set too.
internal.enumerableMembers = function enumerableMembers(cls, names, tag = undefined) {
  const proto = cls.prototype;
  for (const name of names) {
    const d = Object.getOwnPropertyDescriptor(proto, name);
    if (d) { d.enumerable = true; Object.defineProperty(proto, name, d); }
  }
  if (tag !== undefined) internal.setToStringTag(proto, tag);
};

internal.setToStringTag = function setToStringTag(obj, tag) {
  Object.defineProperty(obj, Symbol.toStringTag, {
    value: tag, writable: false, enumerable: false, configurable: true,
  });
};

internal.illegalConstructor = function illegalConstructor() {
  throw new TypeError('Illegal constructor');
};

internal.requireArgs = function requireArgs(count, required, what) {
  if (count < required) {
    throw new TypeError(`${what}: ${required} argument${required === 1 ? '' : 's'} required, but only ${count} present.`);
  }
};

// Web IDL DOMString / USVString / ByteString conversions.
internal.toDOMString = function toDOMString(v) {
  if (typeof v === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
  return String(v);
};
internal.toUSVString = function toUSVString(v) {
  return internal.toDOMString(v).toWellFormed();
};
internal.toByteString = function toByteString(v, what) {
  const s = internal.toDOMString(v);
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 255) {
      throw new TypeError(`${what || 'Value'} contains a character outside the ByteString range (code point ${s.codePointAt(i)}).`);
    }
  }
  return s;
};

// Web IDL `unsigned long long` with [EnforceRange]-free semantics.
internal.toNumber = function toNumber(v) {
  if (typeof v === 'bigint') throw new TypeError('Cannot convert a BigInt value to a number');
  return Number(v);
};

// The runtime's own proxies (constructors that charge the Worker's memory,
// Durable Object stubs): their targets and handlers are the runtime's, and
// node:util's inspect must not show or hand them to a Worker (it treats them
// as the objects they stand for).
internal.runtimeProxies = new WeakSet();
internal.proxy = function proxy(target, handler) {
  const made = new Proxy(target, handler);
  internal.runtimeProxies.add(made);
  return made;
};

internal.isObject = function isObject(v) {
  return (typeof v === 'object' && v !== null) || typeof v === 'function';
};

// Dictionaries: undefined or null mean "empty", anything else must be an object.
internal.toDictionary = function toDictionary(v, what) {
  if (v === undefined || v === null) return {};
  if (!internal.isObject(v)) throw new TypeError(`${what} must be an object.`);
  return v;
};

// BufferSource -> a Uint8Array view over the same memory (no copy).
internal.bufferSourceView = function bufferSourceView(v) {
  if (internal.isArrayBufferView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof internal.NativeArrayBuffer) return new Uint8Array(v);
  return null;
};
// BufferSource -> a fresh copy.
internal.bufferSourceCopy = function bufferSourceCopy(v) {
  const view = internal.bufferSourceView(v);
  return view === null ? null : view.slice();
};

// Report an uncaught error (queueMicrotask, timers, listeners). isolane-web's
// 17_console.js replaces `internal.formatError` with its inspector.
internal.formatError = function formatError(e) {
  try {
    if (e instanceof Error && typeof e.stack === 'string') return e.stack;
    return String(e);
  } catch {
    return '[unprintable error]';
  }
};
// It is the invocation's exception (its tail's `exceptions`), not a console line.
internal.reportError = function reportError(e) {
  let message;
  let stack = '';
  try {
    if (e instanceof Error) {
      message = `${e.name}: ${e.message}`;
      if (typeof e.stack === 'string') stack = e.stack;
    } else {
      message = 'Uncaught ' + internal.formatError(e);
    }
  } catch {
    message = 'Uncaught exception';
  }
  host.exception(message, stack);
};

// Iterators over a live list of pairs, for Headers and URLSearchParams
// (Web IDL "pair iterator"): `getPairs(obj)` returns the current list.
const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
internal.makePairIterable = function makePairIterable(cls, name, getPairs, brandCheck) {
  const iterProto = Object.create(IteratorPrototype);
  const state = new WeakMap();
  Object.defineProperty(iterProto, 'next', {
    value: function next() {
      const s = state.get(this);
      if (s === undefined) throw new TypeError(`next() called on an object that is not a ${name} Iterator`);
      const pairs = getPairs(s.target);
      if (s.index >= pairs.length) return { value: undefined, done: true };
      const pair = pairs[s.index++];
      if (s.kind === 'key') return { value: pair[0], done: false };
      if (s.kind === 'value') return { value: pair[1], done: false };
      return { value: [pair[0], pair[1]], done: false };
    },
    writable: true, enumerable: true, configurable: true,
  });
  internal.setToStringTag(iterProto, `${name} Iterator`);
  const make = (target, kind) => {
    const it = Object.create(iterProto);
    state.set(it, { target, kind, index: 0 });
    return it;
  };
  const methods = {
    entries() { brandCheck(this); return make(this, 'key+value'); },
    keys() { brandCheck(this); return make(this, 'key'); },
    values() { brandCheck(this); return make(this, 'value'); },
  };
  // forEach is live: the list is re-read after every callback
  const forEachImpl = function forEach(callback, thisArg = undefined) {
    brandCheck(this);
    if (typeof callback !== 'function') {
      throw new TypeError(`Failed to execute 'forEach' on '${name}': parameter 1 is not of type 'Function'.`);
    }
    for (let i = 0; ; i++) {
      const pairs = getPairs(this);
      if (i >= pairs.length) break;
      callback.call(thisArg, pairs[i][1], pairs[i][0], this);
    }
  };
  const proto = cls.prototype;
  for (const key of ['entries', 'keys', 'values']) {
    Object.defineProperty(proto, key, { value: methods[key], writable: true, enumerable: true, configurable: true });
  }
  Object.defineProperty(proto, 'forEach', { value: forEachImpl, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(proto, Symbol.iterator, { value: methods.entries, writable: true, enumerable: false, configurable: true });
};

// UTF-8 both ways for the core's bodies (the text unit's host functions;
// TextEncoder and TextDecoder are isolane-web's).
internal.utf8Encode = (s) => host.utf8Encode(s);
internal.utf8Decode = (u8) => (u8.length === 0 ? '' : host.utf8Decode(u8, false, false));

// The URL parser (the url_parser unit's host function) for the core's
// Request, Response and fetch: the component array of HOST.md, or null. The
// URL and URLSearchParams objects are isolane-web's (06_url.js), which
// replaces isURLSearchParams; without that family no body is one.
internal.parseURL = (s, base) => (base === undefined ? host.urlParse(s) : host.urlParse(s, base));
internal.isURLSearchParams = () => false;
// A due timer (isolane-web's 15_timers.js replaces it; without it none is armed).
internal.timerFired = () => {};
