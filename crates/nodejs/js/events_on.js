// events.on(emitter, name, { signal, close }): an async iterator of the
// arguments of each `name` event, in order, queued until read; an 'error'
// event rejects the next read and ends it; the `close` events, `return()`
// and the signal's abort end it too. Also for an EventTarget (each event
// yields `[event]`). Runs as function (host, internal, require, module,
// exports).

const { abortError } = require('node:internal/errors');

function listen(emitter, name, listener) {
  if (typeof emitter.on === 'function') {
    emitter.on(name, listener);
    return () => emitter.removeListener(name, listener);
  }
  const wrapped = (event) => listener(event);
  emitter.addEventListener(name, wrapped);
  return () => emitter.removeEventListener(name, wrapped);
}

function on(emitter, name, options = {}) {
  const signal = options?.signal;
  if (signal?.aborted) throw abortError(signal);
  const queue = [];
  const readers = [];
  let failure = null;
  let ended = false;
  const removers = [];
  const finish = () => {
    ended = true;
    removers.splice(0).forEach((remove) => remove());
    signal?.removeEventListener('abort', onAbort);
    readers.splice(0).forEach((reader) => reader.resolve({ value: undefined, done: true }));
  };
  const fail = (error) => {
    const reader = readers.shift();
    if (reader) reader.reject(error);
    else failure = error;
    finish();
  };
  const onAbort = () => fail(abortError(signal));
  removers.push(listen(emitter, name, (...args) => {
    const reader = readers.shift();
    if (reader) reader.resolve({ value: args, done: false });
    else queue.push(args);
  }));
  if (name !== 'error' && typeof emitter.on === 'function') removers.push(listen(emitter, 'error', fail));
  for (const closing of options?.close ?? []) removers.push(listen(emitter, closing, finish));
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    next() {
      if (queue.length > 0) return Promise.resolve({ value: queue.shift(), done: false });
      if (failure) {
        const error = failure;
        failure = null;
        return Promise.reject(error);
      }
      if (ended) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => readers.push({ resolve, reject }));
    },
    return() {
      finish();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error) {
      finish();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() { return this; },
  };
}

module.exports = on;
