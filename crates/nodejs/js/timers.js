// node:timers and node:timers/promises over the runtime's timers.
// setTimeout and setInterval return Timeout objects (ref, unref, hasRef,
// refresh, close, and a number when coerced) as in Node; ref and unref
// change nothing, a Worker's timers never keep a process alive.
// setImmediate is a zero-delay timer. Runs as function (host, internal,
// require, module, exports).

// The runtime's Web timers (internal's: the globals may be these very
// functions, under enable_nodejs_global_timers).
const {
  setTimeout: schedule, clearTimeout: cancel, setInterval: repeat, clearInterval: cancelRepeat,
} = internal.webTimers;

const { invalidArgType } = require('node:internal/errors');

const invalidCallback = (callback) => invalidArgType('callback', 'of type function', callback);

class Timeout {
  #id;
  #start;
  #repeats;
  #refed = true;

  constructor(start, repeats) {
    this.#start = start;
    this.#repeats = repeats;
    this.#id = start();
  }

  ref() { this.#refed = true; return this; }
  unref() { this.#refed = false; return this; }
  hasRef() { return this.#refed; }

  refresh() {
    this.close();
    this.#id = this.#start();
    return this;
  }

  close() {
    if (this.#repeats) cancelRepeat(this.#id); else cancel(this.#id);
    return this;
  }

  [Symbol.toPrimitive]() { return this.#id; }
}

class Immediate {
  #id;
  constructor(id) { this.#id = id; }
  ref() { return this; }
  unref() { return this; }
  hasRef() { return true; }
  [Symbol.toPrimitive]() { return this.#id; }
}

function setTimeout(callback, delay, ...args) {
  if (typeof callback !== 'function') throw invalidCallback(callback);
  return new Timeout(() => schedule(callback, delay, ...args), false);
}

function setInterval(callback, delay, ...args) {
  if (typeof callback !== 'function') throw invalidCallback(callback);
  return new Timeout(() => repeat(callback, delay, ...args), true);
}

function setImmediate(callback, ...args) {
  if (typeof callback !== 'function') throw invalidCallback(callback);
  return new Immediate(schedule(callback, 0, ...args));
}

function clear(timer) {
  if (timer instanceof Timeout) timer.close();
  else if (timer !== undefined && timer !== null) cancel(Number(timer));
}

function abortError(signal) {
  const error = new DOMException('The operation was aborted', 'AbortError');
  error.cause = signal.reason;
  return error;
}

// A promise for `value` after `delay`, rejected with an AbortError when
// `signal` aborts first.
function later(delay, value, options = {}) {
  const { signal } = options;
  if (signal && signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => { cancel(id); reject(abortError(signal)); };
    const id = schedule(() => {
      if (signal) signal.removeEventListener('abort', onAbort);
      resolve(value);
    }, delay);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
  });
}

// An async iterator yielding `value` every `delay` ms.
async function* every(delay, value, options = {}) {
  const { signal } = options;
  for (;;) {
    yield await later(delay, value, { signal });
  }
}

const promises = {
  setTimeout: (delay, value, options) => later(delay, value, options),
  setImmediate: (value, options) => later(0, value, options),
  setInterval: every,
  scheduler: {
    wait: (delay, options) => later(delay, undefined, options),
    yield: () => later(0, undefined),
  },
};

module.exports = {
  setTimeout,
  clearTimeout: clear,
  setInterval,
  clearInterval: clear,
  setImmediate,
  clearImmediate: clear,
  promises,
};
