// 08_streams.js — ReadableStream (default and byte streams, default and BYOB
// readers), WritableStream, TransformStream, queuing strategies and the
// text encoding streams (WHATWG Streams Standard).
//
// The algorithms follow the standard's abstract operations and names. Each
// public object holds one private record (#r); the algorithms work on records.
'use strict';

const kInternal = Symbol('internal');
const AsyncIteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype);

// ---- promises ----

// The standard reacts to promises with PerformPromiseThen, which a worker
// cannot observe: the stream code uses the `Promise` and `then` it found at
// startup, never what a worker later puts on the global or on
// `Promise.prototype` (WPT streams/readable-streams/patched-global.any.js).
const { Promise } = globalThis;
const then = Function.prototype.call.bind(Promise.prototype.then);
// A promise with its resolving functions; `settled` tells whether either ran.
function deferred() {
  let resolve, reject;
  const d = { promise: undefined, resolve: undefined, reject: undefined, settled: false };
  d.promise = new Promise((a, b) => { resolve = a; reject = b; });
  d.resolve = (v) => { if (!d.settled) { d.settled = true; resolve(v); } };
  d.reject = (e) => { if (!d.settled) { d.settled = true; reject(e); } };
  return d;
}
const resolved = (v) => Promise.resolve(v);
const rejected = (e) => Promise.reject(e);
function markHandled(p) { then(p, undefined, () => {}); return p; }
function promiseCall(fn, thisArg, ...args) {
  try {
    return Promise.resolve(Reflect.apply(fn, thisArg, args));
  } catch (e) {
    return Promise.reject(e);
  }
}
function microtask(fn) { then(resolved(undefined), fn); }
// Settles like `Promise.all` (fulfilled with undefined), without looking up
// `then` on the promises.
function waitForAll(promises) {
  const all = deferred();
  let left = promises.length;
  if (left === 0) all.resolve(undefined);
  for (const p of promises) then(p, () => { if (--left === 0) all.resolve(undefined); }, all.reject);
  return all.promise;
}

// ---- buffers ----

const canTransfer = typeof ArrayBuffer.prototype.transfer === 'function';
function transferBuffer(buffer) { return canTransfer ? buffer.transfer() : buffer; }
function isDetached(buffer) { return buffer.detached === true; }
function copyBytes(dest, destOffset, src, srcOffset, n) {
  new Uint8Array(dest, destOffset, n).set(new Uint8Array(src, srcOffset, n));
}
function typedArrayInfo(view) {
  if (view instanceof DataView) return { ctor: DataView, elementSize: 1, length: view.byteLength };
  return { ctor: view.constructor, elementSize: view.BYTES_PER_ELEMENT, length: view.length };
}

// ---- queue-with-sizes ----

function dequeueValue(c) {
  const pair = c.queue.shift();
  c.queueTotalSize -= pair.size;
  if (c.queueTotalSize < 0) c.queueTotalSize = 0;
  return pair.value;
}
function enqueueValueWithSize(c, value, size) {
  if (typeof size !== 'number' || Number.isNaN(size) || size < 0 || size === Infinity) {
    throw new RangeError('The return value of a queuing strategy size function must be a finite, non-negative number.');
  }
  c.queue.push({ value, size });
  c.queueTotalSize += size;
}
function resetQueue(c) { c.queue = []; c.queueTotalSize = 0; }

// ---- strategies ----

function extractHighWaterMark(strategy, defaultHWM) {
  if (strategy.highWaterMark === undefined) return defaultHWM;
  const hwm = internal.toNumber(strategy.highWaterMark);
  if (Number.isNaN(hwm) || hwm < 0) throw new RangeError('Invalid highWaterMark: must be a non-negative number.');
  return hwm;
}
function extractSizeAlgorithm(strategy) {
  const size = strategy.size;
  if (size === undefined) return () => 1;
  if (typeof size !== 'function') throw new TypeError('The size member of a queuing strategy must be a function.');
  return (chunk) => size(chunk);
}
function optionalFunction(dict, name, what) {
  const v = dict[name];
  if (v !== undefined && typeof v !== 'function') throw new TypeError(`${what}.${name} must be a function.`);
  return v;
}

