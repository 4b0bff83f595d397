// node:async_hooks — AsyncLocalStorage and AsyncResource, built as workerd
// builds them: the current "frame" (a Map from storage to store, never
// mutated once made) is V8's continuation-preserved embedder data
// (host.asyncContextGet / host.asyncContextSet), which V8 itself carries
// into every promise reaction (await, then). Timers carry it through
// `internal.asyncContext` (js/15_timers.js), and each request starts with
// none (js/19_worker.js). Runs as function (host, internal, require,
// module, exports).

const NativeMap = Map;
const context = {
  get() {
    const frame = host.asyncContextGet();
    return frame instanceof NativeMap ? frame : undefined;
  },
  set: (frame) => host.asyncContextSet(frame),
  // Calls fn with `frame` current, then puts the caller's back.
  run(frame, fn, thisArg, args) {
    const previous = host.asyncContextGet();
    host.asyncContextSet(frame);
    try {
      return Reflect.apply(fn, thisArg, args);
    } finally {
      host.asyncContextSet(previous);
    }
  },
};
// Timers capture and restore the frame only once this module has loaded.
internal.asyncContext = context;

function withStore(frame, storage, store) {
  const next = new NativeMap(frame);
  next.set(storage, store);
  return next;
}

function withoutStore(frame, storage) {
  if (frame === undefined || !frame.has(storage)) return frame;
  const next = new NativeMap(frame);
  next.delete(storage);
  return next.size === 0 ? undefined : next;
}

function invalidArg(name, expected, value) {
  const error = new TypeError(`The "${name}" argument must be ${expected}. Received ${typeof value}`);
  error.code = 'ERR_INVALID_ARG_TYPE';
  return error;
}

class AsyncLocalStorage {
  #defaultValue;
  #name;

  constructor(options = {}) {
    this.#defaultValue = options?.defaultValue;
    this.#name = options?.name ?? '';
  }

  get name() { return this.#name; }

  static bind(fn) {
    return AsyncResource.bind(fn);
  }

  static snapshot() {
    const frame = context.get();
    return function runInAsyncScope(fn, ...args) {
      return context.run(frame, fn, this, args);
    };
  }

  run(store, fn, ...args) {
    if (typeof fn !== 'function') throw invalidArg('fn', 'of type function', fn);
    return context.run(withStore(context.get(), this, store), fn, undefined, args);
  }

  exit(fn, ...args) {
    if (typeof fn !== 'function') throw invalidArg('fn', 'of type function', fn);
    return context.run(withoutStore(context.get(), this), fn, undefined, args);
  }

  getStore() {
    const frame = context.get();
    if (frame === undefined || !frame.has(this)) return this.#defaultValue;
    return frame.get(this);
  }

  enterWith(store) {
    context.set(withStore(context.get(), this, store));
  }

  disable() {
    context.set(withoutStore(context.get(), this));
  }
}

let nextAsyncId = 1;

class AsyncResource {
  #frame;
  #type;
  #asyncId;
  #triggerAsyncId;

  constructor(type, options = {}) {
    if (typeof type !== 'string') throw invalidArg('type', 'of type string', type);
    this.#type = type;
    this.#frame = context.get();
    this.#asyncId = nextAsyncId++;
    const trigger = typeof options === 'number' ? options : options?.triggerAsyncId;
    this.#triggerAsyncId = trigger ?? 0;
  }

  static bind(fn, type, thisArg) {
    return new AsyncResource(type || fn?.name || 'bound-anonymous-fn').bind(fn, thisArg);
  }

  runInAsyncScope(fn, thisArg, ...args) {
    return context.run(this.#frame, fn, thisArg, args);
  }

  bind(fn, thisArg) {
    if (typeof fn !== 'function') throw invalidArg('fn', 'of type function', fn);
    const resource = this;
    const bound = function (...args) {
      return resource.runInAsyncScope(fn, thisArg === undefined ? this : thisArg, ...args);
    };
    Object.defineProperties(bound, {
      length: { value: fn.length, configurable: true },
      asyncResource: { value: this, configurable: true, enumerable: true, writable: true },
    });
    return bound;
  }

  emitDestroy() { return this; }
  asyncId() { return this.#asyncId; }
  triggerAsyncId() { return this.#triggerAsyncId; }
  get type() { return this.#type; }
}

// The rest of async_hooks: present so that code that touches it loads;
// hooks never fire (as in workerd).
function createHook() {
  return { enable() { return this; }, disable() { return this; } };
}

module.exports = {
  AsyncLocalStorage,
  AsyncResource,
  createHook,
  executionAsyncId: () => 0,
  triggerAsyncId: () => 0,
  executionAsyncResource: () => ({}),
  asyncWrapProviders: {},
};
