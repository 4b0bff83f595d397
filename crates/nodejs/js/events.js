// node:events — EventEmitter, as Node (and workerd) have it: listeners
// called synchronously in order, `once`, `prepend*`, 'newListener' and
// 'removeListener' events, an 'error' event without a listener thrown,
// `errorMonitor`, and the static helpers `once`, `getEventListeners`,
// `listenerCount`, `addAbortListener`. Runs as function (host, internal, require, module,
// exports).

const kCapture = Symbol('kCapture');
const errorMonitor = Symbol('events.errorMonitor');
let defaultMaxListeners = 10;

const { abortError } = require('node:internal/errors');

function invalidArg(name, expected, value) {
  const error = new TypeError(`The "${name}" argument must be ${expected}. Received ${value === null ? 'null' : typeof value}`);
  error.code = 'ERR_INVALID_ARG_TYPE';
  return error;
}

function checkListener(listener) {
  if (typeof listener !== 'function') throw invalidArg('listener', 'of type function', listener);
}

function EventEmitter(options) {
  EventEmitter.init.call(this, options);
}

EventEmitter.init = function init(options) {
  if (this._events === undefined || this._events === Object.getPrototypeOf(this)._events) {
    this._events = Object.create(null);
    this._eventsCount = 0;
  }
  this._maxListeners = this._maxListeners || undefined;
  this[kCapture] = Boolean(options?.captureRejections);
};

EventEmitter.prototype._events = undefined;
EventEmitter.prototype._eventsCount = 0;
EventEmitter.prototype._maxListeners = undefined;

Object.defineProperty(EventEmitter, 'defaultMaxListeners', {
  enumerable: true,
  get() { return defaultMaxListeners; },
  set(n) {
    if (typeof n !== 'number' || n < 0 || Number.isNaN(n)) {
      const error = new RangeError(`The value of "defaultMaxListeners" is out of range. It must be a non-negative number. Received ${n}`);
      error.code = 'ERR_OUT_OF_RANGE';
      throw error;
    }
    defaultMaxListeners = n;
  },
});

const proto = EventEmitter.prototype;

proto.setMaxListeners = function setMaxListeners(n) {
  if (typeof n !== 'number' || n < 0 || Number.isNaN(n)) {
    const error = new RangeError(`The value of "n" is out of range. It must be a non-negative number. Received ${n}`);
    error.code = 'ERR_OUT_OF_RANGE';
    throw error;
  }
  this._maxListeners = n;
  return this;
};

// A plain object that borrowed EventEmitter.prototype.on has no
// getMaxListeners of its own, so the limit is read from it directly.
function maxListenersOf(target) {
  return target._maxListeners === undefined ? EventEmitter.defaultMaxListeners : target._maxListeners;
}

proto.getMaxListeners = function getMaxListeners() {
  return maxListenersOf(this);
};

function events(emitter) {
  if (emitter._events === undefined) {
    emitter._events = Object.create(null);
    emitter._eventsCount = 0;
  }
  return emitter._events;
}

function addTo(target, type, listener, prepend) {
  checkListener(listener);
  if (events(target).newListener !== undefined) {
    target.emit('newListener', type, listener.listener ?? listener);
  }
  // Read _events after the emit: a newListener listener that removed the
  // last listener left a new object there.
  const all = events(target);
  const existing = all[type];
  if (existing === undefined) {
    all[type] = listener;
    target._eventsCount++;
  } else if (typeof existing === 'function') {
    all[type] = prepend ? [listener, existing] : [existing, listener];
  } else if (prepend) {
    existing.unshift(listener);
  } else {
    existing.push(listener);
  }
  const list = all[type];
  const max = maxListenersOf(target);
  if (max > 0 && Array.isArray(list) && list.length > max && !list.warned) {
    list.warned = true;
    console.warn(`MaxListenersExceededWarning: Possible EventEmitter memory leak detected. ${list.length} ${String(type)} listeners added. Use emitter.setMaxListeners() to increase limit`);
  }
  return target;
}

proto.addListener = function addListener(type, listener) { return addTo(this, type, listener, false); };
proto.on = proto.addListener;
proto.prependListener = function prependListener(type, listener) { return addTo(this, type, listener, true); };

function onceWrapper(target, type, listener) {
  const state = { fired: false, target, type, listener };
  const wrapped = function (...args) {
    if (state.fired) return undefined;
    state.fired = true;
    state.target.removeListener(state.type, wrapped);
    return Reflect.apply(state.listener, state.target, args);
  };
  wrapped.listener = listener;
  return wrapped;
}

proto.once = function once(type, listener) {
  checkListener(listener);
  return this.on(type, onceWrapper(this, type, listener));
};
proto.prependOnceListener = function prependOnceListener(type, listener) {
  checkListener(listener);
  return this.prependListener(type, onceWrapper(this, type, listener));
};

proto.removeListener = function removeListener(type, listener) {
  checkListener(listener);
  const all = this._events;
  if (all === undefined) return this;
  const list = all[type];
  if (list === undefined) return this;
  if (list === listener || list.listener === listener) {
    if (--this._eventsCount === 0) this._events = Object.create(null);
    else delete all[type];
    if (all.removeListener !== undefined) this.emit('removeListener', type, list.listener ?? listener);
    return this;
  }
  if (typeof list === 'function') return this;
  for (let i = list.length - 1; i >= 0; i--) {
    if (list[i] === listener || list[i].listener === listener) {
      const removed = list[i];
      list.splice(i, 1);
      if (list.length === 1) all[type] = list[0];
      if (all.removeListener !== undefined) this.emit('removeListener', type, removed.listener ?? removed);
      break;
    }
  }
  return this;
};
proto.off = proto.removeListener;

proto.removeAllListeners = function removeAllListeners(type) {
  const all = this._events;
  if (all === undefined) return this;
  if (all.removeListener === undefined) {
    if (arguments.length === 0) {
      this._events = Object.create(null);
      this._eventsCount = 0;
    } else if (all[type] !== undefined) {
      if (--this._eventsCount === 0) this._events = Object.create(null);
      else delete all[type];
    }
    return this;
  }
  if (arguments.length === 0) {
    for (const key of Reflect.ownKeys(all)) {
      if (key !== 'removeListener') this.removeAllListeners(key);
    }
    this.removeAllListeners('removeListener');
    this._events = Object.create(null);
    this._eventsCount = 0;
    return this;
  }
  const list = all[type];
  if (typeof list === 'function') this.removeListener(type, list);
  else if (list !== undefined) {
    for (let i = list.length - 1; i >= 0; i--) this.removeListener(type, list[i]);
  }
  return this;
};

proto.emit = function emit(type, ...args) {
  const all = this._events;
  if (type === 'error') {
    if (all !== undefined && all[errorMonitor] !== undefined) this.emit(errorMonitor, ...args);
    if (all === undefined || all.error === undefined) {
      const error = args[0];
      if (error instanceof Error) throw error;
      const wrapped = new Error(`Unhandled error. (${error === undefined ? 'undefined' : String(error)})`);
      wrapped.code = 'ERR_UNHANDLED_ERROR';
      wrapped.context = error;
      throw wrapped;
    }
  }
  if (all === undefined) return false;
  const handler = all[type];
  if (handler === undefined) return false;
  if (typeof handler === 'function') {
    Reflect.apply(handler, this, args);
  } else {
    // A copy: listeners added or removed while emitting wait for the next.
    for (const listener of handler.slice()) Reflect.apply(listener, this, args);
  }
  return true;
};

function listenersOf(target, type, unwrap) {
  const list = target._events?.[type];
  if (list === undefined) return [];
  if (typeof list === 'function') return unwrap ? [list.listener ?? list] : [list];
  return list.map((l) => (unwrap ? l.listener ?? l : l));
}

proto.listeners = function listeners(type) { return listenersOf(this, type, true); };
proto.rawListeners = function rawListeners(type) { return listenersOf(this, type, false); };
proto.listenerCount = function listenerCount(type, listener) {
  const list = listenersOf(this, type, true);
  return listener === undefined ? list.length : list.filter((l) => l === listener).length;
};
proto.eventNames = function eventNames() {
  return this._eventsCount > 0 ? Reflect.ownKeys(this._events) : [];
};


// events.once(emitter, name, { signal }): a promise of the next event's
// arguments; rejected by an 'error' event first (unless name is 'error').
function once(emitter, name, options = {}) {
  const signal = options?.signal;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    if (typeof emitter.addEventListener === 'function' && typeof emitter.on !== 'function') {
      const listener = (event) => { signal?.removeEventListener('abort', onAbort); resolve([event]); };
      const onAbort = () => { emitter.removeEventListener(name, listener); reject(abortError(signal)); };
      emitter.addEventListener(name, listener, { once: true });
      signal?.addEventListener('abort', onAbort, { once: true });
      return;
    }
    const cleanup = () => {
      emitter.removeListener(name, onEvent);
      if (name !== 'error') emitter.removeListener('error', onError);
      signal?.removeEventListener('abort', onAbort);
    };
    const onEvent = (...args) => { cleanup(); resolve(args); };
    const onError = (error) => { cleanup(); reject(error); };
    const onAbort = () => { cleanup(); reject(abortError(signal)); };
    emitter.once(name, onEvent);
    if (name !== 'error') emitter.once('error', onError);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function getEventListeners(target, type) {
  if (typeof target.listeners === 'function') return target.listeners(type);
  return [];
}

function listenerCount(emitter, type) {
  return emitter.listenerCount(type);
}

// Listens once to `signal`'s abort (at once, in a microtask, when it has
// already aborted); the returned object's dispose removes the listener.
function addAbortListener(signal, listener) {
  if (signal === null || typeof signal !== 'object' || typeof signal.addEventListener !== 'function') {
    throw invalidArg('signal', 'an instance of AbortSignal', signal);
  }
  if (typeof listener !== 'function') throw invalidArg('listener', 'of type function', listener);
  let remove = () => {};
  if (signal.aborted) {
    queueMicrotask(() => listener());
  } else {
    signal.addEventListener('abort', listener, { once: true });
    remove = () => signal.removeEventListener('abort', listener);
  }
  return { __proto__: null, [Symbol.dispose ?? Symbol.for('nodejs.dispose')]: remove };
}

function setMaxListeners(n = defaultMaxListeners, ...targets) {
  if (targets.length === 0) EventEmitter.defaultMaxListeners = n;
  for (const target of targets) target.setMaxListeners?.(n);
}

// Node's EventEmitter that carries an AsyncResource for its listeners.
function asyncResourceEmitter() {
  const { AsyncResource } = require('node:async_hooks');
  return class EventEmitterAsyncResource extends EventEmitter {
    constructor(options) {
      super(options);
      this.asyncResource = new AsyncResource(options?.name ?? new.target.name, options);
    }
    emit(...args) { return this.asyncResource.runInAsyncScope(() => super.emit(...args)); }
    emitDestroy() {}
    get asyncId() { return this.asyncResource.asyncId(); }
    get triggerAsyncId() { return this.asyncResource.triggerAsyncId(); }
  };
}

EventEmitter.EventEmitter = EventEmitter;
EventEmitter.once = once;
EventEmitter.on = function on(emitter, name, options) {
  return require('node:internal/events_on')(emitter, name, options);
};
EventEmitter.getMaxListeners = function getMaxListeners(target) {
  return typeof target?.getMaxListeners === 'function' ? target.getMaxListeners() : EventEmitter.defaultMaxListeners;
};
let EventEmitterAsyncResource;
Object.defineProperty(EventEmitter, 'EventEmitterAsyncResource', {
  enumerable: true,
  get: () => (EventEmitterAsyncResource ??= asyncResourceEmitter()),
});
EventEmitter.errorMonitor = errorMonitor;
EventEmitter.captureRejectionSymbol = Symbol.for('nodejs.rejection');
EventEmitter.getEventListeners = getEventListeners;
EventEmitter.listenerCount = listenerCount;
EventEmitter.setMaxListeners = setMaxListeners;
EventEmitter.addAbortListener = addAbortListener;
EventEmitter.usingDomains = false;
Object.defineProperty(EventEmitter, 'captureRejections', { value: false, writable: true, enumerable: true });

module.exports = EventEmitter;
