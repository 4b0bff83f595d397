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

// =========================================================================
// ReadableStream
// =========================================================================

function newReadableRecord(pub) {
  return { pub, state: 'readable', reader: undefined, storedError: undefined, disturbed: false, controller: undefined, expectedLength: -1 };
}

function isReadableStreamLocked(s) { return s.reader !== undefined; }

function readableStreamAddReadRequest(s, rr) { s.reader.readRequests.push(rr); }
function readableStreamAddReadIntoRequest(s, rr) { s.reader.readIntoRequests.push(rr); }
function numReadRequests(s) { return s.reader.readRequests.length; }
function numReadIntoRequests(s) { return s.reader.readIntoRequests.length; }
function hasDefaultReader(s) { return s.reader !== undefined && !s.reader.byob; }
function hasBYOBReader(s) { return s.reader !== undefined && s.reader.byob; }

function readableStreamFulfillReadRequest(s, chunk, done) {
  const rr = s.reader.readRequests.shift();
  if (done) rr.close(); else rr.chunk(chunk);
}
function readableStreamFulfillReadIntoRequest(s, chunk, done) {
  const rr = s.reader.readIntoRequests.shift();
  if (done) rr.close(chunk); else rr.chunk(chunk);
}

function readableStreamCancel(s, reason) {
  s.disturbed = true;
  if (s.state === 'closed') return resolved(undefined);
  if (s.state === 'errored') return rejected(s.storedError);
  readableStreamClose(s);
  const reader = s.reader;
  if (reader !== undefined && reader.byob) {
    const list = reader.readIntoRequests;
    reader.readIntoRequests = [];
    for (const rr of list) rr.close(undefined);
  }
  const c = s.controller;
  return then(c.byte ? byteControllerCancelSteps(c, reason) : defaultControllerCancelSteps(c, reason), () => undefined);
}

function readableStreamClose(s) {
  s.state = 'closed';
  const reader = s.reader;
  if (reader === undefined) return;
  reader.closed.resolve(undefined);
  if (!reader.byob) {
    const list = reader.readRequests;
    reader.readRequests = [];
    for (const rr of list) rr.close();
  }
}

function readableStreamError(s, e) {
  s.state = 'errored';
  s.storedError = e;
  const reader = s.reader;
  if (reader === undefined) return;
  reader.closed.reject(e);
  markHandled(reader.closed.promise);
  if (reader.byob) {
    const list = reader.readIntoRequests;
    reader.readIntoRequests = [];
    for (const rr of list) rr.error(e);
  } else {
    const list = reader.readRequests;
    reader.readRequests = [];
    for (const rr of list) rr.error(e);
  }
}

// ---- readers (records) ----

function readerGenericInitialize(reader, s) {
  reader.stream = s;
  s.reader = reader;
  if (s.state === 'readable') {
    reader.closed = deferred();
  } else if (s.state === 'closed') {
    reader.closed = deferred();
    reader.closed.resolve(undefined);
  } else {
    reader.closed = deferred();
    reader.closed.reject(s.storedError);
    markHandled(reader.closed.promise);
  }
}

function readerGenericCancel(reader, reason) {
  return readableStreamCancel(reader.stream, reason);
}

function readerGenericRelease(reader) {
  const s = reader.stream;
  const e = new TypeError('This reader was released.');
  if (s.state === 'readable') {
    reader.closed.reject(e);
  } else {
    reader.closed = deferred();
    reader.closed.reject(e);
  }
  markHandled(reader.closed.promise);
  const c = s.controller;
  if (c.byte) byteControllerReleaseSteps(c);
  s.reader = undefined;
  reader.stream = undefined;
}

function newDefaultReaderRecord(s) {
  if (isReadableStreamLocked(s)) throw new TypeError('ReadableStream is locked to a reader.');
  const reader = { pub: undefined, byob: false, stream: undefined, closed: undefined, readRequests: [] };
  readerGenericInitialize(reader, s);
  return reader;
}

function newBYOBReaderRecord(s) {
  if (isReadableStreamLocked(s)) throw new TypeError('ReadableStream is locked to a reader.');
  if (!s.controller.byte) throw new TypeError('Cannot get a BYOB reader for a stream that is not a byte stream.');
  const reader = { pub: undefined, byob: true, stream: undefined, closed: undefined, readIntoRequests: [] };
  readerGenericInitialize(reader, s);
  return reader;
}

function readableStreamDefaultReaderRead(reader, rr) {
  const s = reader.stream;
  s.disturbed = true;
  if (s.state === 'closed') rr.close();
  else if (s.state === 'errored') rr.error(s.storedError);
  else if (s.controller.byte) byteControllerPullSteps(s.controller, rr);
  else defaultControllerPullSteps(s.controller, rr);
}

function readableStreamDefaultReaderRelease(reader) {
  readerGenericRelease(reader);
  const e = new TypeError('This reader was released.');
  const list = reader.readRequests;
  reader.readRequests = [];
  for (const rr of list) rr.error(e);
}

function readableStreamBYOBReaderRead(reader, view, min, rr) {
  const s = reader.stream;
  s.disturbed = true;
  if (s.state === 'errored') rr.error(s.storedError);
  else byteControllerPullInto(s.controller, view, min, rr);
}

function readableStreamBYOBReaderRelease(reader) {
  readerGenericRelease(reader);
  const e = new TypeError('This reader was released.');
  const list = reader.readIntoRequests;
  reader.readIntoRequests = [];
  for (const rr of list) rr.error(e);
}

// A read request resolving a promise with an iterator result.
function promiseReadRequest() {
  const d = deferred();
  return {
    promise: d.promise,
    chunk: (value) => d.resolve({ value, done: false }),
    close: () => d.resolve({ value: undefined, done: true }),
    error: (e) => d.reject(e),
  };
}

// ---- default controller ----

function setUpDefaultController(s, c, startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm, sizeAlgorithm) {
  c.stream = s;
  c.byte = false;
  resetQueue(c);
  c.started = c.closeRequested = c.pullAgain = c.pulling = false;
  c.strategySizeAlgorithm = sizeAlgorithm;
  c.strategyHWM = hwm;
  c.pullAlgorithm = pullAlgorithm;
  c.cancelAlgorithm = cancelAlgorithm;
  s.controller = c;
  const startResult = startAlgorithm();
  then(resolved(startResult), () => {
    c.started = true;
    defaultControllerCallPullIfNeeded(c);
  }, (r) => defaultControllerError(c, r));
}

function defaultControllerCanCloseOrEnqueue(c) {
  return !c.closeRequested && c.stream.state === 'readable';
}
function defaultControllerGetDesiredSize(c) {
  const state = c.stream.state;
  if (state === 'errored') return null;
  if (state === 'closed') return 0;
  return c.strategyHWM - c.queueTotalSize;
}
function defaultControllerHasBackpressure(c) { return !defaultControllerShouldCallPull(c); }
function defaultControllerClearAlgorithms(c) {
  c.pullAlgorithm = undefined;
  c.cancelAlgorithm = undefined;
  c.strategySizeAlgorithm = undefined;
}
function defaultControllerClose(c) {
  if (!defaultControllerCanCloseOrEnqueue(c)) return;
  c.closeRequested = true;
  if (c.queue.length === 0) {
    defaultControllerClearAlgorithms(c);
    readableStreamClose(c.stream);
  }
}
function defaultControllerEnqueue(c, chunk) {
  if (!defaultControllerCanCloseOrEnqueue(c)) return;
  const s = c.stream;
  if (isReadableStreamLocked(s) && hasDefaultReader(s) && numReadRequests(s) > 0) {
    readableStreamFulfillReadRequest(s, chunk, false);
  } else {
    let size;
    try {
      size = c.strategySizeAlgorithm(chunk);
    } catch (e) {
      defaultControllerError(c, e);
      throw e;
    }
    try {
      enqueueValueWithSize(c, chunk, size);
    } catch (e) {
      defaultControllerError(c, e);
      throw e;
    }
  }
  defaultControllerCallPullIfNeeded(c);
}
function defaultControllerError(c, e) {
  if (c.stream.state !== 'readable') return;
  resetQueue(c);
  defaultControllerClearAlgorithms(c);
  readableStreamError(c.stream, e);
}
function defaultControllerShouldCallPull(c) {
  if (!defaultControllerCanCloseOrEnqueue(c)) return false;
  if (!c.started) return false;
  const s = c.stream;
  if (isReadableStreamLocked(s) && hasDefaultReader(s) && numReadRequests(s) > 0) return true;
  return defaultControllerGetDesiredSize(c) > 0;
}
function defaultControllerCallPullIfNeeded(c) {
  if (!defaultControllerShouldCallPull(c)) return;
  if (c.pulling) { c.pullAgain = true; return; }
  c.pulling = true;
  then(c.pullAlgorithm(), () => {
    c.pulling = false;
    if (c.pullAgain) {
      c.pullAgain = false;
      defaultControllerCallPullIfNeeded(c);
    }
  }, (e) => defaultControllerError(c, e));
}
function defaultControllerCancelSteps(c, reason) {
  resetQueue(c);
  const result = c.cancelAlgorithm(reason);
  defaultControllerClearAlgorithms(c);
  return result;
}
function defaultControllerPullSteps(c, rr) {
  const s = c.stream;
  if (c.queue.length > 0) {
    const chunk = dequeueValue(c);
    if (c.closeRequested && c.queue.length === 0) {
      defaultControllerClearAlgorithms(c);
      readableStreamClose(s);
    } else {
      defaultControllerCallPullIfNeeded(c);
    }
    rr.chunk(chunk);
  } else {
    readableStreamAddReadRequest(s, rr);
    defaultControllerCallPullIfNeeded(c);
  }
}

// ---- byte stream controller ----

function setUpByteController(s, c, startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm, autoAllocateChunkSize) {
  c.stream = s;
  c.byte = true;
  c.pullAgain = c.pulling = false;
  c.byobRequest = null;
  resetQueue(c);
  c.closeRequested = c.started = false;
  c.strategyHWM = hwm;
  c.pullAlgorithm = pullAlgorithm;
  c.cancelAlgorithm = cancelAlgorithm;
  c.autoAllocateChunkSize = autoAllocateChunkSize;
  c.pendingPullIntos = [];
  s.controller = c;
  const startResult = startAlgorithm();
  then(resolved(startResult), () => {
    c.started = true;
    byteControllerCallPullIfNeeded(c);
  }, (r) => byteControllerError(c, r));
}

function byteControllerGetDesiredSize(c) { return defaultControllerGetDesiredSize(c); }
function byteControllerClearAlgorithms(c) { c.pullAlgorithm = undefined; c.cancelAlgorithm = undefined; }
function byteControllerInvalidateBYOBRequest(c) {
  if (c.byobRequest === null) return;
  internal.byobRequestInvalidate(c.byobRequest);
  c.byobRequest = null;
}
function byteControllerClearPendingPullIntos(c) {
  byteControllerInvalidateBYOBRequest(c);
  c.pendingPullIntos = [];
}
function byteControllerShouldCallPull(c) {
  const s = c.stream;
  if (s.state !== 'readable') return false;
  if (c.closeRequested) return false;
  if (!c.started) return false;
  if (hasDefaultReader(s) && numReadRequests(s) > 0) return true;
  if (hasBYOBReader(s) && numReadIntoRequests(s) > 0) return true;
  return byteControllerGetDesiredSize(c) > 0;
}
function byteControllerCallPullIfNeeded(c) {
  if (!byteControllerShouldCallPull(c)) return;
  if (c.pulling) { c.pullAgain = true; return; }
  c.pulling = true;
  then(c.pullAlgorithm(), () => {
    c.pulling = false;
    if (c.pullAgain) {
      c.pullAgain = false;
      byteControllerCallPullIfNeeded(c);
    }
  }, (e) => byteControllerError(c, e));
}
function byteControllerError(c, e) {
  const s = c.stream;
  if (s.state !== 'readable') return;
  byteControllerClearPendingPullIntos(c);
  resetQueue(c);
  byteControllerClearAlgorithms(c);
  readableStreamError(s, e);
}
function byteControllerClose(c) {
  const s = c.stream;
  if (c.closeRequested || s.state !== 'readable') return;
  if (c.queueTotalSize > 0) { c.closeRequested = true; return; }
  if (c.pendingPullIntos.length > 0) {
    const first = c.pendingPullIntos[0];
    if (first.bytesFilled % first.elementSize !== 0) {
      const e = new TypeError('Insufficient bytes to fill elements in the given buffer');
      byteControllerError(c, e);
      throw e;
    }
  }
  byteControllerClearAlgorithms(c);
  readableStreamClose(s);
}
function byteControllerEnqueueChunkToQueue(c, buffer, byteOffset, byteLength) {
  c.queue.push({ buffer, byteOffset, byteLength });
  c.queueTotalSize += byteLength;
}
function byteControllerEnqueueClonedChunkToQueue(c, buffer, byteOffset, byteLength) {
  let clone;
  try {
    clone = buffer.slice(byteOffset, byteOffset + byteLength);
  } catch (e) {
    byteControllerError(c, e);
    throw e;
  }
  byteControllerEnqueueChunkToQueue(c, clone, 0, byteLength);
}
function byteControllerEnqueueDetachedPullIntoToQueue(c, pid) {
  if (pid.bytesFilled > 0) byteControllerEnqueueClonedChunkToQueue(c, pid.buffer, pid.byteOffset, pid.bytesFilled);
  byteControllerShiftPendingPullInto(c);
}
function byteControllerShiftPendingPullInto(c) { return c.pendingPullIntos.shift(); }
function byteControllerHandleQueueDrain(c) {
  if (c.queueTotalSize === 0 && c.closeRequested) {
    byteControllerClearAlgorithms(c);
    readableStreamClose(c.stream);
  } else {
    byteControllerCallPullIfNeeded(c);
  }
}
function byteControllerFillReadRequestFromQueue(c, rr) {
  const entry = c.queue.shift();
  c.queueTotalSize -= entry.byteLength;
  byteControllerHandleQueueDrain(c);
  rr.chunk(new Uint8Array(entry.buffer, entry.byteOffset, entry.byteLength));
}
function byteControllerProcessReadRequestsUsingQueue(c) {
  const reader = c.stream.reader;
  while (reader.readRequests.length > 0) {
    if (c.queueTotalSize === 0) return;
    byteControllerFillReadRequestFromQueue(c, reader.readRequests.shift());
  }
}
function byteControllerFillHeadPullIntoDescriptor(c, size, pid) {
  pid.bytesFilled += size;
}
function byteControllerFillPullIntoDescriptorFromQueue(c, pid) {
  const maxBytesToCopy = Math.min(c.queueTotalSize, pid.byteLength - pid.bytesFilled);
  const maxBytesFilled = pid.bytesFilled + maxBytesToCopy;
  let totalBytesToCopyRemaining = maxBytesToCopy;
  let ready = false;
  const maxAlignedBytes = maxBytesFilled - (maxBytesFilled % pid.elementSize);
  if (maxAlignedBytes >= pid.minimumFill) {
    totalBytesToCopyRemaining = maxAlignedBytes - pid.bytesFilled;
    ready = true;
  }
  while (totalBytesToCopyRemaining > 0) {
    const head = c.queue[0];
    const bytesToCopy = Math.min(totalBytesToCopyRemaining, head.byteLength);
    copyBytes(pid.buffer, pid.byteOffset + pid.bytesFilled, head.buffer, head.byteOffset, bytesToCopy);
    if (head.byteLength === bytesToCopy) {
      c.queue.shift();
    } else {
      head.byteOffset += bytesToCopy;
      head.byteLength -= bytesToCopy;
    }
    c.queueTotalSize -= bytesToCopy;
    byteControllerFillHeadPullIntoDescriptor(c, bytesToCopy, pid);
    totalBytesToCopyRemaining -= bytesToCopy;
  }
  return ready;
}
function byteControllerConvertPullIntoDescriptor(pid) {
  const buffer = transferBuffer(pid.buffer);
  return new pid.viewConstructor(buffer, pid.byteOffset, pid.bytesFilled / pid.elementSize);
}
function byteControllerCommitPullIntoDescriptor(s, pid) {
  let done = false;
  if (s.state === 'closed') done = true;
  const filledView = byteControllerConvertPullIntoDescriptor(pid);
  if (pid.readerType === 'default') readableStreamFulfillReadRequest(s, filledView, done);
  else readableStreamFulfillReadIntoRequest(s, filledView, done);
}
function byteControllerProcessPullIntoDescriptorsUsingQueue(c) {
  const filled = [];
  while (c.pendingPullIntos.length > 0) {
    if (c.queueTotalSize === 0) break;
    const pid = c.pendingPullIntos[0];
    if (byteControllerFillPullIntoDescriptorFromQueue(c, pid)) {
      byteControllerShiftPendingPullInto(c);
      filled.push(pid);
    }
  }
  return filled;
}
function byteControllerEnqueue(c, chunk) {
  const s = c.stream;
  if (c.closeRequested || s.state !== 'readable') return;
  const { buffer, byteOffset, byteLength } = chunk;
  if (isDetached(buffer)) throw new TypeError('The chunk\'s buffer is detached.');
  const transferredBuffer = transferBuffer(buffer);
  if (c.pendingPullIntos.length > 0) {
    const first = c.pendingPullIntos[0];
    if (isDetached(first.buffer)) throw new TypeError('The BYOB request\'s buffer has been detached.');
    byteControllerInvalidateBYOBRequest(c);
    first.buffer = transferBuffer(first.buffer);
    if (first.readerType === 'none') byteControllerEnqueueDetachedPullIntoToQueue(c, first);
  }
  if (hasDefaultReader(s)) {
    byteControllerProcessReadRequestsUsingQueue(c);
    if (numReadRequests(s) === 0) {
      byteControllerEnqueueChunkToQueue(c, transferredBuffer, byteOffset, byteLength);
    } else {
      if (c.pendingPullIntos.length > 0) byteControllerShiftPendingPullInto(c);
      readableStreamFulfillReadRequest(s, new Uint8Array(transferredBuffer, byteOffset, byteLength), false);
    }
  } else if (hasBYOBReader(s)) {
    byteControllerEnqueueChunkToQueue(c, transferredBuffer, byteOffset, byteLength);
    for (const pid of byteControllerProcessPullIntoDescriptorsUsingQueue(c)) {
      byteControllerCommitPullIntoDescriptor(s, pid);
    }
  } else {
    byteControllerEnqueueChunkToQueue(c, transferredBuffer, byteOffset, byteLength);
  }
  byteControllerCallPullIfNeeded(c);
}
function byteControllerGetBYOBRequest(c) {
  if (c.byobRequest === null && c.pendingPullIntos.length > 0) {
    const first = c.pendingPullIntos[0];
    const view = new Uint8Array(first.buffer, first.byteOffset + first.bytesFilled, first.byteLength - first.bytesFilled);
    c.byobRequest = internal.newBYOBRequest(c, view);
  }
  return c.byobRequest;
}
function byteControllerPullInto(c, view, min, rr) {
  const s = c.stream;
  const { ctor, elementSize } = typedArrayInfo(view);
  const minimumFill = min * elementSize;
  const byteOffset = view.byteOffset;
  const byteLength = view.byteLength;
  let buffer;
  try {
    buffer = transferBuffer(view.buffer);
  } catch (e) {
    rr.error(e);
    return;
  }
  const pid = {
    buffer, bufferByteLength: buffer.byteLength, byteOffset, byteLength, bytesFilled: 0,
    minimumFill, elementSize, viewConstructor: ctor, readerType: 'byob',
  };
  if (c.pendingPullIntos.length > 0) {
    c.pendingPullIntos.push(pid);
    readableStreamAddReadIntoRequest(s, rr);
    return;
  }
  if (s.state === 'closed') {
    rr.close(new ctor(pid.buffer, pid.byteOffset, 0));
    return;
  }
  if (c.queueTotalSize > 0) {
    if (byteControllerFillPullIntoDescriptorFromQueue(c, pid)) {
      const filledView = byteControllerConvertPullIntoDescriptor(pid);
      byteControllerHandleQueueDrain(c);
      rr.chunk(filledView);
      return;
    }
    if (c.closeRequested) {
      const e = new TypeError('Insufficient bytes to fill elements in the given buffer');
      byteControllerError(c, e);
      rr.error(e);
      return;
    }
  }
  c.pendingPullIntos.push(pid);
  readableStreamAddReadIntoRequest(s, rr);
  byteControllerCallPullIfNeeded(c);
}
function byteControllerRespond(c, bytesWritten) {
  const first = c.pendingPullIntos[0];
  if (c.stream.state === 'closed') {
    if (bytesWritten !== 0) throw new TypeError('bytesWritten must be 0 when calling respond() on a closed stream');
  } else {
    if (bytesWritten === 0) throw new TypeError('bytesWritten must be greater than 0 when calling respond() on a readable stream');
    if (first.bytesFilled + bytesWritten > first.byteLength) throw new RangeError('bytesWritten out of range');
  }
  first.buffer = transferBuffer(first.buffer);
  byteControllerRespondInternal(c, bytesWritten);
}
function byteControllerRespondInClosedState(c, first) {
  if (first.readerType === 'none') byteControllerShiftPendingPullInto(c);
  const s = c.stream;
  if (hasBYOBReader(s)) {
    while (numReadIntoRequests(s) > 0) byteControllerCommitPullIntoDescriptor(s, byteControllerShiftPendingPullInto(c));
  }
}
function byteControllerRespondInReadableState(c, bytesWritten, pid) {
  byteControllerFillHeadPullIntoDescriptor(c, bytesWritten, pid);
  const s = c.stream;
  if (pid.readerType === 'none') {
    byteControllerEnqueueDetachedPullIntoToQueue(c, pid);
    for (const p of byteControllerProcessPullIntoDescriptorsUsingQueue(c)) byteControllerCommitPullIntoDescriptor(s, p);
    return;
  }
  if (pid.bytesFilled < pid.minimumFill) return;
  byteControllerShiftPendingPullInto(c);
  const remainderSize = pid.bytesFilled % pid.elementSize;
  if (remainderSize > 0) {
    const end = pid.byteOffset + pid.bytesFilled;
    byteControllerEnqueueClonedChunkToQueue(c, pid.buffer, end - remainderSize, remainderSize);
  }
  pid.bytesFilled -= remainderSize;
  const filled = byteControllerProcessPullIntoDescriptorsUsingQueue(c);
  byteControllerCommitPullIntoDescriptor(s, pid);
  for (const p of filled) byteControllerCommitPullIntoDescriptor(s, p);
}
function byteControllerRespondInternal(c, bytesWritten) {
  const first = c.pendingPullIntos[0];
  byteControllerInvalidateBYOBRequest(c);
  if (c.stream.state === 'closed') byteControllerRespondInClosedState(c, first);
  else byteControllerRespondInReadableState(c, bytesWritten, first);
  byteControllerCallPullIfNeeded(c);
}
function byteControllerRespondWithNewView(c, view) {
  const first = c.pendingPullIntos[0];
  if (c.stream.state === 'closed') {
    if (view.byteLength !== 0) throw new TypeError('The view\'s length must be 0 when calling respondWithNewView() on a closed stream');
  } else if (view.byteLength === 0) {
    throw new TypeError('The view\'s length must be greater than 0 when calling respondWithNewView() on a readable stream');
  }
  if (first.byteOffset + first.bytesFilled !== view.byteOffset) throw new RangeError('The region specified by view does not match byobRequest');
  if (first.bufferByteLength !== view.buffer.byteLength) throw new RangeError('The buffer of view has different capacity than byobRequest');
  if (first.bytesFilled + view.byteLength > first.byteLength) throw new RangeError('The region specified by view is larger than byobRequest');
  const viewByteLength = view.byteLength;
  first.buffer = transferBuffer(view.buffer);
  byteControllerRespondInternal(c, viewByteLength);
}
function byteControllerCancelSteps(c, reason) {
  byteControllerClearPendingPullIntos(c);
  resetQueue(c);
  const result = c.cancelAlgorithm(reason);
  byteControllerClearAlgorithms(c);
  return result;
}
function byteControllerPullSteps(c, rr) {
  const s = c.stream;
  if (c.queueTotalSize > 0) {
    byteControllerFillReadRequestFromQueue(c, rr);
    return;
  }
  const size = c.autoAllocateChunkSize;
  if (size !== undefined) {
    let buffer;
    try {
      buffer = new internal.NativeArrayBuffer(size);
    } catch (e) {
      rr.error(e);
      return;
    }
    c.pendingPullIntos.push({
      buffer, bufferByteLength: size, byteOffset: 0, byteLength: size, bytesFilled: 0,
      minimumFill: 1, elementSize: 1, viewConstructor: Uint8Array, readerType: 'default',
    });
  }
  readableStreamAddReadRequest(s, rr);
  byteControllerCallPullIfNeeded(c);
}
function byteControllerReleaseSteps(c) {
  if (c.pendingPullIntos.length > 0) {
    const first = c.pendingPullIntos[0];
    first.readerType = 'none';
    c.pendingPullIntos = [first];
  }
}

// Generic helpers over either controller kind.
function controllerEnqueue(c, chunk) { if (c.byte) byteControllerEnqueue(c, chunk); else defaultControllerEnqueue(c, chunk); }
function controllerClose(c) { if (c.byte) byteControllerClose(c); else defaultControllerClose(c); }
function controllerError(c, e) { if (c.byte) byteControllerError(c, e); else defaultControllerError(c, e); }

// ---- creating streams from algorithms ----

function createReadableStream(startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm = 1, sizeAlgorithm = () => 1) {
  const pub = new ReadableStream(kInternal);
  const s = internal.readableRecord(pub);
  setUpDefaultController(s, { pub: undefined }, startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm, sizeAlgorithm);
  return pub;
}
function createReadableByteStream(startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm = 0, autoAllocateChunkSize = undefined) {
  const pub = new ReadableStream(kInternal);
  const s = internal.readableRecord(pub);
  setUpByteController(s, { pub: undefined }, startAlgorithm, pullAlgorithm, cancelAlgorithm, hwm, autoAllocateChunkSize);
  return pub;
}

// ---- tee ----

function readableStreamTee(s) {
  if (s.controller.byte) return readableByteStreamTee(s);
  const reader = newDefaultReaderRecord(s);
  let reading = false, readAgain = false, canceled1 = false, canceled2 = false;
  let reason1, reason2, branch1, branch2;
  const cancelPromise = deferred();
  const pullAlgorithm = () => {
    if (reading) { readAgain = true; return resolved(undefined); }
    reading = true;
    readableStreamDefaultReaderRead(reader, {
      chunk: (chunk) => microtask(() => {
        readAgain = false;
        if (!canceled1) defaultControllerEnqueue(b1.controller, chunk);
        if (!canceled2) defaultControllerEnqueue(b2.controller, chunk);
        reading = false;
        if (readAgain) pullAlgorithm();
      }),
      close: () => {
        reading = false;
        if (!canceled1) defaultControllerClose(b1.controller);
        if (!canceled2) defaultControllerClose(b2.controller);
        if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
    return resolved(undefined);
  };
  const cancel1 = (reason) => {
    canceled1 = true;
    reason1 = reason;
    if (canceled2) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const cancel2 = (reason) => {
    canceled2 = true;
    reason2 = reason;
    if (canceled1) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const start = () => undefined;
  branch1 = createReadableStream(start, pullAlgorithm, cancel1);
  branch2 = createReadableStream(start, pullAlgorithm, cancel2);
  const b1 = internal.readableRecord(branch1), b2 = internal.readableRecord(branch2);
  then(reader.closed.promise, undefined, (r) => {
    defaultControllerError(b1.controller, r);
    defaultControllerError(b2.controller, r);
    if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
  });
  return [branch1, branch2];
}

// ReadableByteStreamTee: a branch with a pending BYOB read pulls from the
// source with a BYOB reader into that read's view (so `read(view, { min })`
// on one branch reaches the source as it is), a branch without one through
// a default reader; the other branch gets a copy.
function readableByteStreamTee(s) {
  let reader = newDefaultReaderRecord(s);
  let reading = false, readAgain1 = false, readAgain2 = false, canceled1 = false, canceled2 = false;
  let reason1, reason2, b1, b2;
  const cancelPromise = deferred();
  const forwardReaderError = (thisReader) => {
    then(thisReader.closed.promise, undefined, (r) => {
      if (thisReader !== reader) return;
      byteControllerError(b1.controller, r);
      byteControllerError(b2.controller, r);
      if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
    });
  };
  // CloneAsUint8Array; a failure errors both branches and cancels the source
  const cloneOrFail = (chunk) => {
    try {
      return new Uint8Array(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
    } catch (e) {
      byteControllerError(b1.controller, e);
      byteControllerError(b2.controller, e);
      cancelPromise.resolve(readableStreamCancel(s, e));
      return null;
    }
  };
  const readAgain = () => {
    if (readAgain1) pull1();
    else if (readAgain2) pull2();
  };
  const pullWithDefaultReader = () => {
    if (reader.byob) {
      readableStreamBYOBReaderRelease(reader);
      reader = newDefaultReaderRecord(s);
      forwardReaderError(reader);
    }
    readableStreamDefaultReaderRead(reader, {
      chunk: (chunk) => microtask(() => {
        readAgain1 = false;
        readAgain2 = false;
        let chunk2 = chunk;
        if (!canceled1 && !canceled2) {
          chunk2 = cloneOrFail(chunk);
          if (chunk2 === null) return;
        }
        if (!canceled1) byteControllerEnqueue(b1.controller, chunk);
        if (!canceled2) byteControllerEnqueue(b2.controller, chunk2);
        reading = false;
        readAgain();
      }),
      close: () => {
        reading = false;
        if (!canceled1) byteControllerClose(b1.controller);
        if (!canceled2) byteControllerClose(b2.controller);
        if (b1.controller.pendingPullIntos.length > 0) byteControllerRespond(b1.controller, 0);
        if (b2.controller.pendingPullIntos.length > 0) byteControllerRespond(b2.controller, 0);
        if (!canceled1 || !canceled2) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
  };
  const pullWithBYOBReader = (view, forBranch2) => {
    if (!reader.byob) {
      readableStreamDefaultReaderRelease(reader);
      reader = newBYOBReaderRecord(s);
      forwardReaderError(reader);
    }
    const byobBranch = forBranch2 ? b2 : b1;
    const otherBranch = forBranch2 ? b1 : b2;
    readableStreamBYOBReaderRead(reader, view, 1, {
      chunk: (chunk) => microtask(() => {
        readAgain1 = false;
        readAgain2 = false;
        const byobCanceled = forBranch2 ? canceled2 : canceled1;
        const otherCanceled = forBranch2 ? canceled1 : canceled2;
        if (!otherCanceled) {
          const cloned = cloneOrFail(chunk);
          if (cloned === null) return;
          if (!byobCanceled) byteControllerRespondWithNewView(byobBranch.controller, chunk);
          byteControllerEnqueue(otherBranch.controller, cloned);
        } else if (!byobCanceled) {
          byteControllerRespondWithNewView(byobBranch.controller, chunk);
        }
        reading = false;
        readAgain();
      }),
      close: (chunk) => {
        reading = false;
        const byobCanceled = forBranch2 ? canceled2 : canceled1;
        const otherCanceled = forBranch2 ? canceled1 : canceled2;
        if (!byobCanceled) byteControllerClose(byobBranch.controller);
        if (!otherCanceled) byteControllerClose(otherBranch.controller);
        if (chunk !== undefined) {
          if (!byobCanceled) byteControllerRespondWithNewView(byobBranch.controller, chunk);
          if (!otherCanceled && otherBranch.controller.pendingPullIntos.length > 0) byteControllerRespond(otherBranch.controller, 0);
        }
        if (!byobCanceled || !otherCanceled) cancelPromise.resolve(undefined);
      },
      error: () => { reading = false; },
    });
  };
  const pull = (branch, forBranch2) => {
    reading = true;
    const request = byteControllerGetBYOBRequest(branch.controller);
    if (request === null) pullWithDefaultReader();
    else pullWithBYOBReader(internal.byobRequestView(request), forBranch2);
    return resolved(undefined);
  };
  const pull1 = () => {
    if (reading) { readAgain1 = true; return resolved(undefined); }
    return pull(b1, false);
  };
  const pull2 = () => {
    if (reading) { readAgain2 = true; return resolved(undefined); }
    return pull(b2, true);
  };
  const cancel1 = (reason) => {
    canceled1 = true;
    reason1 = reason;
    if (canceled2) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const cancel2 = (reason) => {
    canceled2 = true;
    reason2 = reason;
    if (canceled1) cancelPromise.resolve(readableStreamCancel(s, [reason1, reason2]));
    return cancelPromise.promise;
  };
  const start = () => undefined;
  const branch1 = createReadableByteStream(start, pull1, cancel1);
  const branch2 = createReadableByteStream(start, pull2, cancel2);
  b1 = internal.readableRecord(branch1);
  b2 = internal.readableRecord(branch2);
  forwardReaderError(reader);
  return [branch1, branch2];
}

// ---- pipeTo ----

function readableStreamPipeTo(source, dest, preventClose, preventAbort, preventCancel, signal) {
  const reader = newDefaultReaderRecord(source);
  const writer = newWriterRecord(dest);
  source.disturbed = true;
  let shuttingDown = false;
  const result = deferred();
  let currentWrite = resolved(undefined);
  let removeAbort = () => {};

  const finalize = (isError, error) => {
    writableStreamDefaultWriterRelease(writer);
    readableStreamDefaultReaderRelease(reader);
    removeAbort();
    if (isError) result.reject(error); else result.resolve(undefined);
  };
  // Calls `k` once every chunk read so far has been written.
  const waitForWritesToFinish = (k) => {
    const old = currentWrite;
    then(old, () => (old !== currentWrite ? waitForWritesToFinish(k) : k()));
  };
  const shutdownWithAction = (action, originalIsError, originalError) => {
    if (shuttingDown) return;
    shuttingDown = true;
    const doTheRest = () => {
      then(action(), () => finalize(originalIsError, originalError), (newError) => finalize(true, newError));
    };
    if (dest.state === 'writable' && !writableStreamCloseQueuedOrInFlight(dest)) waitForWritesToFinish(doTheRest);
    else doTheRest();
  };
  const shutdown = (isError, error) => {
    if (shuttingDown) return;
    shuttingDown = true;
    if (dest.state === 'writable' && !writableStreamCloseQueuedOrInFlight(dest)) {
      waitForWritesToFinish(() => finalize(isError, error));
    } else {
      finalize(isError, error);
    }
  };

  if (signal !== undefined) {
    const abortAlgorithm = () => {
      const error = signal.reason;
      const actions = [];
      if (!preventAbort) actions.push(() => (dest.state === 'writable' ? writableStreamAbort(dest, error) : resolved(undefined)));
      if (!preventCancel) actions.push(() => (source.state === 'readable' ? readableStreamCancel(source, error) : resolved(undefined)));
      shutdownWithAction(() => waitForAll(actions.map((a) => a())), true, error);
    };
    if (signal.aborted) {
      abortAlgorithm();
      return result.promise;
    }
    removeAbort = internal.abortSignalAdd(signal, abortAlgorithm);
  }

  // error and close propagation
  const sourceErrored = (e) => {
    if (!preventAbort) shutdownWithAction(() => writableStreamAbort(dest, e), true, e);
    else shutdown(true, e);
  };
  const destErrored = (e) => {
    if (!preventCancel) shutdownWithAction(() => readableStreamCancel(source, e), true, e);
    else shutdown(true, e);
  };
  const sourceClosed = () => {
    if (!preventClose) shutdownWithAction(() => writableStreamDefaultWriterCloseWithErrorPropagation(writer));
    else shutdown();
  };
  if (source.state === 'errored') sourceErrored(source.storedError);
  else then(reader.closed.promise, undefined, (e) => { if (!shuttingDown) sourceErrored(e); });
  if (dest.state === 'errored') destErrored(dest.storedError);
  else then(writer.closed.promise, undefined, (e) => { if (!shuttingDown) destErrored(e); });
  if (source.state === 'closed') sourceClosed();
  else then(reader.closed.promise, () => { if (!shuttingDown) sourceClosed(); }, () => {});
  if (!shuttingDown && (writableStreamCloseQueuedOrInFlight(dest) || dest.state === 'closed')) {
    const destClosed = new TypeError('the destination writable stream closed before all data could be piped to it');
    if (!preventCancel) shutdownWithAction(() => readableStreamCancel(source, destClosed), true, destClosed);
    else shutdown(true, destClosed);
  }

  // the loop
  const step = () => {
    if (shuttingDown) return;
    then(writer.ready.promise, () => {
      if (shuttingDown) return;
      readableStreamDefaultReaderRead(reader, {
        // The write waits for a microtask, so enqueue() on the source never
        // runs the sink's write() synchronously (whatwg/streams#1243; WPT
        // streams/piping/general-addition.any.js).
        chunk: (chunk) => {
          const written = deferred();
          currentWrite = written.promise;
          microtask(() => {
            if (writer.stream === undefined) written.resolve(undefined); // released by a shutdown meanwhile
            else then(writableStreamDefaultWriterWrite(writer, chunk), () => written.resolve(undefined), () => written.resolve(undefined));
            step();
          });
        },
        close: () => {},
        error: () => {},
      });
    }, () => {});
  };
  step();
  return result.promise;
}

// ---- ReadableStream class ----

class ReadableStream {
  #r;

  constructor(underlyingSource = undefined, strategy = undefined) {
    this.#r = newReadableRecord(this);
    if (underlyingSource === kInternal) return;
    if (underlyingSource === null) {
      throw new TypeError("Failed to construct 'ReadableStream': parameter 1 is not of type 'object'.");
    }
    const source = underlyingSource === undefined ? {} : underlyingSource;
    if (!internal.isObject(source)) {
      throw new TypeError("Failed to construct 'ReadableStream': parameter 1 is not of type 'object'.");
    }
    const strat = internal.toDictionary(strategy, 'QueuingStrategy');
    // dictionary members, in Web IDL (lexicographic) order
    const autoAllocateChunkSize = source.autoAllocateChunkSize;
    const cancel = optionalFunction(source, 'cancel', 'underlyingSource');
    const pull = optionalFunction(source, 'pull', 'underlyingSource');
    const start = optionalFunction(source, 'start', 'underlyingSource');
    const type = source.type === undefined ? undefined : internal.toDOMString(source.type);
    if (type !== undefined && type !== 'bytes') {
      throw new TypeError(`Failed to construct 'ReadableStream': The provided value '${type}' is not a valid enum value of type ReadableStreamType.`);
    }
    const startAlgorithm = (c) => (start === undefined ? undefined : Reflect.apply(start, source, [c]));
    const pullAlgorithm = (c) => (pull === undefined ? resolved(undefined) : promiseCall(pull, source, c));
    const cancelAlgorithm = (reason) => (cancel === undefined ? resolved(undefined) : promiseCall(cancel, source, reason));
    if (type === 'bytes') {
      if (strat.size !== undefined) {
        throw new RangeError("Failed to construct 'ReadableStream': Cannot create a byte stream with a size() function in its queuing strategy.");
      }
      const hwm = extractHighWaterMark(strat, 0);
      let chunkSize;
      if (autoAllocateChunkSize !== undefined) {
        chunkSize = internal.toNumber(autoAllocateChunkSize);
        if (!Number.isFinite(chunkSize) || chunkSize < 0) throw new TypeError('autoAllocateChunkSize is out of range.');
        chunkSize = Math.trunc(chunkSize);
        if (chunkSize === 0) throw new TypeError('autoAllocateChunkSize must be greater than 0.');
      }
      const c = { pub: undefined };
      c.pub = new ReadableByteStreamController(kInternal, c);
      setUpByteController(this.#r, c, () => startAlgorithm(c.pub), () => pullAlgorithm(c.pub), cancelAlgorithm, hwm, chunkSize);
    } else {
      const size = extractSizeAlgorithm(strat);
      const hwm = extractHighWaterMark(strat, 1);
      const c = { pub: undefined };
      c.pub = new ReadableStreamDefaultController(kInternal, c);
      setUpDefaultController(this.#r, c, () => startAlgorithm(c.pub), () => pullAlgorithm(c.pub), cancelAlgorithm, hwm, size);
    }
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#r in self)) throw new TypeError('Illegal invocation');
    return self.#r;
  }

  get locked() { return isReadableStreamLocked(ReadableStream.#rec(this)); }

  cancel(reason = undefined) {
    let s;
    try { s = ReadableStream.#rec(this); } catch (e) { return rejected(e); }
    if (isReadableStreamLocked(s)) return rejected(new TypeError('Cannot cancel a ReadableStream that is locked to a reader.'));
    return readableStreamCancel(s, reason);
  }

  getReader(options = undefined) {
    const s = ReadableStream.#rec(this);
    const opts = internal.toDictionary(options, 'ReadableStreamGetReaderOptions');
    if (opts.mode === undefined) return new ReadableStreamDefaultReader(this);
    const mode = internal.toDOMString(opts.mode);
    if (mode !== 'byob') {
      throw new TypeError(`Failed to execute 'getReader' on 'ReadableStream': The provided value '${mode}' is not a valid enum value of type ReadableStreamReaderMode.`);
    }
    void s;
    return new ReadableStreamBYOBReader(this);
  }

  pipeThrough(transform, options = undefined) {
    const s = ReadableStream.#rec(this);
    if (!internal.isObject(transform)) throw new TypeError("Failed to execute 'pipeThrough' on 'ReadableStream': parameter 1 is not of type 'ReadableWritablePair'.");
    const readable = transform.readable;
    if (!internal.isReadableStream(readable)) throw new TypeError("Failed to execute 'pipeThrough' on 'ReadableStream': readable is not a ReadableStream.");
    const writable = transform.writable;
    if (!internal.isWritableStream(writable)) throw new TypeError("Failed to execute 'pipeThrough' on 'ReadableStream': writable is not a WritableStream.");
    const { preventClose, preventAbort, preventCancel, signal } = pipeOptions(options);
    if (isReadableStreamLocked(s)) throw new TypeError('Cannot pipe a ReadableStream that is locked to a reader.');
    const w = internal.writableRecord(writable);
    if (isWritableStreamLocked(w)) throw new TypeError('Cannot pipe to a WritableStream that is locked to a writer.');
    markHandled(readableStreamPipeTo(s, w, preventClose, preventAbort, preventCancel, signal));
    return readable;
  }

  pipeTo(destination, options = undefined) {
    try {
      const s = ReadableStream.#rec(this);
      if (!internal.isWritableStream(destination)) {
        throw new TypeError("Failed to execute 'pipeTo' on 'ReadableStream': parameter 1 is not of type 'WritableStream'.");
      }
      const { preventClose, preventAbort, preventCancel, signal } = pipeOptions(options);
      if (isReadableStreamLocked(s)) throw new TypeError('Cannot pipe a ReadableStream that is locked to a reader.');
      const w = internal.writableRecord(destination);
      if (isWritableStreamLocked(w)) throw new TypeError('Cannot pipe to a WritableStream that is locked to a writer.');
      return readableStreamPipeTo(s, w, preventClose, preventAbort, preventCancel, signal);
    } catch (e) {
      return rejected(e);
    }
  }

  tee() {
    return readableStreamTee(ReadableStream.#rec(this));
  }

  values(options = undefined) {
    const s = ReadableStream.#rec(this);
    const opts = internal.toDictionary(options, 'ReadableStreamIteratorOptions');
    return newAsyncIterator(s, !!opts.preventCancel);
  }

  static from(asyncIterable) {
    return readableStreamFromIterable(asyncIterable);
  }

  static {
    internal.readableRecord = (pub) => pub.#r;
    internal.isReadableStream = (v) => internal.isObject(v) && #r in v;
  }
}
Object.defineProperty(ReadableStream.prototype, Symbol.asyncIterator, {
  value: ReadableStream.prototype.values, writable: true, enumerable: false, configurable: true,
});
internal.enumerableMembers(ReadableStream, ['locked', 'cancel', 'getReader', 'pipeThrough', 'pipeTo', 'tee', 'values']);
internal.setToStringTag(ReadableStream.prototype, 'ReadableStream');

function pipeOptions(options) {
  const o = internal.toDictionary(options, 'StreamPipeOptions');
  // dictionary members, in Web IDL (lexicographic) order; a getter that
  // throws stops the conversion there
  const preventAbort = !!o.preventAbort;
  const preventCancel = !!o.preventCancel;
  const preventClose = !!o.preventClose;
  const signal = o.signal;
  if (signal !== undefined && !internal.isAbortSignal(signal)) {
    throw new TypeError("Failed to execute 'pipeTo' on 'ReadableStream': Failed to read the 'signal' property from 'StreamPipeOptions': Failed to convert value to 'AbortSignal'.");
  }
  return { preventAbort, preventCancel, preventClose, signal };
}

// ---- async iteration ----

const AsyncIterProto = Object.create(AsyncIteratorPrototype);
const iterState = new WeakMap();
function newAsyncIterator(s, preventCancel) {
  const reader = newDefaultReaderRecord(s);
  const it = Object.create(AsyncIterProto);
  iterState.set(it, { reader, preventCancel, finished: false, ongoing: undefined });
  return it;
}
function iterNextSteps(st) {
  if (st.finished) return resolved({ value: undefined, done: true });
  const d = deferred();
  readableStreamDefaultReaderRead(st.reader, {
    chunk: (value) => d.resolve({ value, done: false }),
    close: () => {
      st.finished = true;
      readableStreamDefaultReaderRelease(st.reader);
      d.resolve({ value: undefined, done: true });
    },
    error: (e) => {
      st.finished = true;
      readableStreamDefaultReaderRelease(st.reader);
      d.reject(e);
    },
  });
  return d.promise;
}
function iterReturnSteps(st, value) {
  if (st.finished) return resolved({ value, done: true });
  st.finished = true;
  if (!st.preventCancel) {
    const result = readerGenericCancel(st.reader, value);
    readableStreamDefaultReaderRelease(st.reader);
    return then(result, () => ({ value, done: true }));
  }
  readableStreamDefaultReaderRelease(st.reader);
  return resolved({ value, done: true });
}
Object.defineProperties(AsyncIterProto, {
  next: {
    value: function next() {
      const st = iterState.get(this);
      if (st === undefined) return rejected(new TypeError('Illegal invocation'));
      const step = () => iterNextSteps(st);
      st.ongoing = st.ongoing ? then(st.ongoing, step, step) : step();
      return st.ongoing;
    },
    writable: true, enumerable: true, configurable: true,
  },
  return: {
    value: function (value = undefined) {
      const st = iterState.get(this);
      if (st === undefined) return rejected(new TypeError('Illegal invocation'));
      const step = () => iterReturnSteps(st, value);
      st.ongoing = st.ongoing ? then(st.ongoing, step, step) : step();
      return st.ongoing;
    },
    writable: true, enumerable: true, configurable: true,
  },
});
internal.setToStringTag(AsyncIterProto, 'ReadableStream AsyncIterator');

// ---- ReadableStream.from ----

function readableStreamFromIterable(asyncIterable) {
  if (asyncIterable === null || asyncIterable === undefined) {
    throw new TypeError('ReadableStream.from: the argument is not async iterable.');
  }
  let iterator, nextMethod;
  const asyncMethod = asyncIterable[Symbol.asyncIterator];
  if (asyncMethod !== undefined && asyncMethod !== null) {
    if (typeof asyncMethod !== 'function') throw new TypeError('ReadableStream.from: @@asyncIterator is not a function.');
    iterator = Reflect.apply(asyncMethod, asyncIterable, []);
    if (!internal.isObject(iterator)) throw new TypeError('ReadableStream.from: the iterator is not an object.');
    nextMethod = iterator.next;
  } else {
    const syncMethod = asyncIterable[Symbol.iterator];
    if (typeof syncMethod !== 'function') throw new TypeError('ReadableStream.from: the argument is not async iterable.');
    const syncIterator = Reflect.apply(syncMethod, asyncIterable, []);
    if (!internal.isObject(syncIterator)) throw new TypeError('ReadableStream.from: the iterator is not an object.');
    const syncNext = syncIterator.next;
    iterator = {
      next() {
        const r = Reflect.apply(syncNext, syncIterator, []);
        if (!internal.isObject(r)) throw new TypeError('iterator result is not an object');
        return then(resolved(r.value), (value) => ({ value, done: !!r.done }));
      },
      return(v) {
        const ret = syncIterator.return;
        if (ret === undefined || ret === null) return resolved({ value: v, done: true });
        return resolved(Reflect.apply(ret, syncIterator, [v]));
      },
    };
    nextMethod = iterator.next;
  }
  let stream;
  const pullAlgorithm = () => {
    let nextResult;
    try {
      nextResult = Reflect.apply(nextMethod, iterator, []);
    } catch (e) {
      return rejected(e);
    }
    return then(resolved(nextResult), (r) => {
      if (!internal.isObject(r)) throw new TypeError('ReadableStream.from: the iterator result is not an object.');
      if (r.done) defaultControllerClose(internal.readableRecord(stream).controller);
      else defaultControllerEnqueue(internal.readableRecord(stream).controller, r.value);
    });
  };
  const cancelAlgorithm = (reason) => {
    let ret;
    try {
      ret = iterator.return;
    } catch (e) {
      return rejected(e);
    }
    if (ret === undefined || ret === null) return resolved(undefined);
    let returnResult;
    try {
      returnResult = Reflect.apply(ret, iterator, [reason]);
    } catch (e) {
      return rejected(e);
    }
    return then(resolved(returnResult), (r) => {
      if (!internal.isObject(r)) throw new TypeError('ReadableStream.from: the iterator return() result is not an object.');
    });
  };
  stream = createReadableStream(() => undefined, pullAlgorithm, cancelAlgorithm, 0);
  return stream;
}

// ---- readers (public) ----

class ReadableStreamDefaultReader {
  #r;

  constructor(stream) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'ReadableStreamDefaultReader'");
    if (!internal.isReadableStream(stream)) {
      throw new TypeError("Failed to construct 'ReadableStreamDefaultReader': parameter 1 is not of type 'ReadableStream'.");
    }
    this.#r = newDefaultReaderRecord(internal.readableRecord(stream));
    this.#r.pub = this;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#r in self)) throw new TypeError('Illegal invocation');
    return self.#r;
  }

  get closed() {
    try { return ReadableStreamDefaultReader.#rec(this).closed.promise; } catch (e) { return rejected(e); }
  }

  read() {
    let reader;
    try { reader = ReadableStreamDefaultReader.#rec(this); } catch (e) { return rejected(e); }
    if (reader.stream === undefined) return rejected(new TypeError('This reader has been released.'));
    const rr = promiseReadRequest();
    readableStreamDefaultReaderRead(reader, rr);
    return rr.promise;
  }

  releaseLock() {
    const reader = ReadableStreamDefaultReader.#rec(this);
    if (reader.stream === undefined) return;
    readableStreamDefaultReaderRelease(reader);
  }

  cancel(reason = undefined) {
    let reader;
    try { reader = ReadableStreamDefaultReader.#rec(this); } catch (e) { return rejected(e); }
    if (reader.stream === undefined) return rejected(new TypeError('This reader has been released.'));
    return readerGenericCancel(reader, reason);
  }
}
internal.enumerableMembers(ReadableStreamDefaultReader, ['closed', 'read', 'releaseLock', 'cancel']);
internal.setToStringTag(ReadableStreamDefaultReader.prototype, 'ReadableStreamDefaultReader');

class ReadableStreamBYOBReader {
  #r;

  constructor(stream) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'ReadableStreamBYOBReader'");
    if (!internal.isReadableStream(stream)) {
      throw new TypeError("Failed to construct 'ReadableStreamBYOBReader': parameter 1 is not of type 'ReadableStream'.");
    }
    this.#r = newBYOBReaderRecord(internal.readableRecord(stream));
    this.#r.pub = this;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#r in self)) throw new TypeError('Illegal invocation');
    return self.#r;
  }

  get closed() {
    try { return ReadableStreamBYOBReader.#rec(this).closed.promise; } catch (e) { return rejected(e); }
  }

  read(view, options = undefined) {
    let reader;
    try {
      reader = ReadableStreamBYOBReader.#rec(this);
      if (!internal.isArrayBufferView(view)) {
        throw new TypeError("Failed to execute 'read' on 'ReadableStreamBYOBReader': parameter 1 is not of type 'ArrayBufferView'.");
      }
      if (view.byteLength === 0) throw new TypeError('This readable stream reader cannot be used to read as the view has byte length equal to 0.');
      if (view.buffer.byteLength === 0) throw new TypeError("This readable stream reader cannot be used to read as the viewed array buffer is a zero-length ArrayBuffer.");
      if (isDetached(view.buffer)) throw new TypeError('The view\'s buffer has been detached.');
      const opts = internal.toDictionary(options, 'ReadableStreamBYOBReaderReadOptions');
      let min = opts.min === undefined ? 1 : internal.toNumber(opts.min);
      if (!Number.isFinite(min) || min < 0) throw new TypeError('min is out of range.');
      min = Math.trunc(min);
      if (min === 0) throw new TypeError('min must be greater than 0.');
      if (view instanceof DataView) {
        if (min > view.byteLength) throw new RangeError('min is greater than the view\'s byte length.');
      } else if (min > view.length) {
        throw new RangeError('min is greater than the view\'s length.');
      }
      if (reader.stream === undefined) throw new TypeError('This reader has been released.');
      const d = deferred();
      readableStreamBYOBReaderRead(reader, view, min, {
        chunk: (value) => d.resolve({ value, done: false }),
        close: (value) => d.resolve({ value, done: true }),
        error: (e) => d.reject(e),
      });
      return d.promise;
    } catch (e) {
      return rejected(e);
    }
  }

  releaseLock() {
    const reader = ReadableStreamBYOBReader.#rec(this);
    if (reader.stream === undefined) return;
    readableStreamBYOBReaderRelease(reader);
  }

  cancel(reason = undefined) {
    let reader;
    try { reader = ReadableStreamBYOBReader.#rec(this); } catch (e) { return rejected(e); }
    if (reader.stream === undefined) return rejected(new TypeError('This reader has been released.'));
    return readerGenericCancel(reader, reason);
  }
}
internal.enumerableMembers(ReadableStreamBYOBReader, ['closed', 'read', 'releaseLock', 'cancel']);
internal.setToStringTag(ReadableStreamBYOBReader.prototype, 'ReadableStreamBYOBReader');

// ---- controllers (public) ----

class ReadableStreamDefaultController {
  #c;

  constructor(key = undefined, c = undefined) {
    if (key !== kInternal) internal.illegalConstructor();
    this.#c = c;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
    return self.#c;
  }

  get desiredSize() { return defaultControllerGetDesiredSize(ReadableStreamDefaultController.#rec(this)); }

  close() {
    const c = ReadableStreamDefaultController.#rec(this);
    if (!defaultControllerCanCloseOrEnqueue(c)) throw new TypeError('The stream is not in a state that permits close.');
    defaultControllerClose(c);
  }

  enqueue(chunk = undefined) {
    const c = ReadableStreamDefaultController.#rec(this);
    if (!defaultControllerCanCloseOrEnqueue(c)) throw new TypeError('The stream is not in a state that permits enqueue.');
    defaultControllerEnqueue(c, chunk);
  }

  error(e = undefined) {
    defaultControllerError(ReadableStreamDefaultController.#rec(this), e);
  }
}
internal.enumerableMembers(ReadableStreamDefaultController, ['desiredSize', 'close', 'enqueue', 'error']);
internal.setToStringTag(ReadableStreamDefaultController.prototype, 'ReadableStreamDefaultController');

class ReadableByteStreamController {
  #c;

  constructor(key = undefined, c = undefined) {
    if (key !== kInternal) internal.illegalConstructor();
    this.#c = c;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
    return self.#c;
  }

  get byobRequest() { return byteControllerGetBYOBRequest(ReadableByteStreamController.#rec(this)); }
  get desiredSize() { return byteControllerGetDesiredSize(ReadableByteStreamController.#rec(this)); }

  close() {
    const c = ReadableByteStreamController.#rec(this);
    if (c.closeRequested) throw new TypeError('The stream has already been closed.');
    if (c.stream.state !== 'readable') throw new TypeError('The stream is not in a state that permits close.');
    byteControllerClose(c);
  }

  enqueue(chunk) {
    const c = ReadableByteStreamController.#rec(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'enqueue' on 'ReadableByteStreamController'");
    if (!internal.isArrayBufferView(chunk)) {
      throw new TypeError("Failed to execute 'enqueue' on 'ReadableByteStreamController': parameter 1 is not of type 'ArrayBufferView'.");
    }
    if (chunk.byteLength === 0) throw new TypeError('chunk must have non-zero byteLength');
    if (chunk.buffer.byteLength === 0) throw new TypeError('chunk\'s buffer must have non-zero byteLength');
    if (c.closeRequested) throw new TypeError('The stream has already been closed.');
    if (c.stream.state !== 'readable') throw new TypeError('The stream is not in a state that permits enqueue.');
    byteControllerEnqueue(c, chunk);
  }

  error(e = undefined) {
    byteControllerError(ReadableByteStreamController.#rec(this), e);
  }
}
internal.enumerableMembers(ReadableByteStreamController, ['byobRequest', 'desiredSize', 'close', 'enqueue', 'error']);
internal.setToStringTag(ReadableByteStreamController.prototype, 'ReadableByteStreamController');

class ReadableStreamBYOBRequest {
  #c;
  #view;

  constructor(key = undefined, c = undefined, view = undefined) {
    if (key !== kInternal) internal.illegalConstructor();
    this.#c = c;
    this.#view = view;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
  }

  get view() { ReadableStreamBYOBRequest.#check(this); return this.#view; }

  respond(bytesWritten) {
    ReadableStreamBYOBRequest.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'respond' on 'ReadableStreamBYOBRequest'");
    let n = internal.toNumber(bytesWritten);
    if (!Number.isFinite(n) || n < 0) throw new TypeError('bytesWritten is out of range.');
    n = Math.trunc(n);
    if (this.#c === undefined) throw new TypeError('This BYOB request has been invalidated');
    if (isDetached(this.#view.buffer)) throw new TypeError('The BYOB request\'s buffer has been detached.');
    byteControllerRespond(this.#c, n);
  }

  respondWithNewView(view) {
    ReadableStreamBYOBRequest.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'respondWithNewView' on 'ReadableStreamBYOBRequest'");
    if (!internal.isArrayBufferView(view)) throw new TypeError("Failed to execute 'respondWithNewView': parameter 1 is not of type 'ArrayBufferView'.");
    if (this.#c === undefined) throw new TypeError('This BYOB request has been invalidated');
    if (isDetached(view.buffer)) throw new TypeError('The given view\'s buffer has been detached.');
    byteControllerRespondWithNewView(this.#c, view);
  }

  static {
    internal.newBYOBRequest = (c, view) => new ReadableStreamBYOBRequest(kInternal, c, view);
    internal.byobRequestInvalidate = (r) => { r.#c = undefined; r.#view = null; };
    internal.byobRequestView = (r) => r.#view;
  }
}
internal.enumerableMembers(ReadableStreamBYOBRequest, ['view', 'respond', 'respondWithNewView']);
internal.setToStringTag(ReadableStreamBYOBRequest.prototype, 'ReadableStreamBYOBRequest');

// =========================================================================
// WritableStream
// =========================================================================

const closeSentinel = Symbol('close');

function newWritableRecord(pub) {
  return {
    pub, state: 'writable', storedError: undefined, writer: undefined, controller: undefined,
    inFlightWriteRequest: undefined, closeRequest: undefined, inFlightCloseRequest: undefined,
    pendingAbortRequest: undefined, writeRequests: [], backpressure: false,
  };
}
function isWritableStreamLocked(w) { return w.writer !== undefined; }

function writableStreamAbort(w, reason) {
  if (w.state === 'closed' || w.state === 'errored') return resolved(undefined);
  internal.signalAbort(w.controller.abortController.signal, reason);
  const state = w.state;
  if (state === 'closed' || state === 'errored') return resolved(undefined);
  if (w.pendingAbortRequest !== undefined) return w.pendingAbortRequest.promise.promise;
  let wasAlreadyErroring = false;
  if (state === 'erroring') { wasAlreadyErroring = true; reason = undefined; }
  const promise = deferred();
  w.pendingAbortRequest = { promise, reason, wasAlreadyErroring };
  if (!wasAlreadyErroring) writableStreamStartErroring(w, reason);
  return promise.promise;
}
function writableStreamClose(w) {
  const state = w.state;
  if (state === 'closed' || state === 'errored') {
    return rejected(new TypeError(`Cannot close a stream that is ${state}.`));
  }
  const promise = deferred();
  w.closeRequest = promise;
  const writer = w.writer;
  if (writer !== undefined && w.backpressure && state === 'writable') writer.ready.resolve(undefined);
  writableControllerClose(w.controller);
  return promise.promise;
}
function writableStreamAddWriteRequest(w) {
  const d = deferred();
  w.writeRequests.push(d);
  return d.promise;
}
function writableStreamCloseQueuedOrInFlight(w) {
  return w.closeRequest !== undefined || w.inFlightCloseRequest !== undefined;
}
function writableStreamDealWithRejection(w, error) {
  if (w.state === 'writable') { writableStreamStartErroring(w, error); return; }
  writableStreamFinishErroring(w);
}
function writableStreamStartErroring(w, reason) {
  const c = w.controller;
  w.state = 'erroring';
  w.storedError = reason;
  if (w.writer !== undefined) writerEnsureReadyPromiseRejected(w.writer, reason);
  if (!writableStreamHasOperationMarkedInFlight(w) && c.started) writableStreamFinishErroring(w);
}
function writableStreamFinishErroring(w) {
  w.state = 'errored';
  resetQueue(w.controller);
  const storedError = w.storedError;
  for (const d of w.writeRequests) d.reject(storedError);
  w.writeRequests = [];
  if (w.pendingAbortRequest === undefined) {
    writableStreamRejectCloseAndClosedPromiseIfNeeded(w);
    return;
  }
  const abortRequest = w.pendingAbortRequest;
  w.pendingAbortRequest = undefined;
  if (abortRequest.wasAlreadyErroring) {
    abortRequest.promise.reject(storedError);
    writableStreamRejectCloseAndClosedPromiseIfNeeded(w);
    return;
  }
  const c = w.controller;
  const promise = c.abortAlgorithm(abortRequest.reason);
  writableControllerClearAlgorithms(c);
  then(promise, () => {
    abortRequest.promise.resolve(undefined);
    writableStreamRejectCloseAndClosedPromiseIfNeeded(w);
  }, (r) => {
    abortRequest.promise.reject(r);
    writableStreamRejectCloseAndClosedPromiseIfNeeded(w);
  });
}
function writableStreamFinishInFlightWrite(w) {
  w.inFlightWriteRequest.resolve(undefined);
  w.inFlightWriteRequest = undefined;
}
function writableStreamFinishInFlightWriteWithError(w, error) {
  w.inFlightWriteRequest.reject(error);
  w.inFlightWriteRequest = undefined;
  writableStreamDealWithRejection(w, error);
}
function writableStreamFinishInFlightClose(w) {
  w.inFlightCloseRequest.resolve(undefined);
  w.inFlightCloseRequest = undefined;
  if (w.state === 'erroring') {
    w.storedError = undefined;
    if (w.pendingAbortRequest !== undefined) {
      w.pendingAbortRequest.promise.resolve(undefined);
      w.pendingAbortRequest = undefined;
    }
  }
  w.state = 'closed';
  if (w.writer !== undefined) w.writer.closed.resolve(undefined);
}
function writableStreamFinishInFlightCloseWithError(w, error) {
  w.inFlightCloseRequest.reject(error);
  w.inFlightCloseRequest = undefined;
  if (w.pendingAbortRequest !== undefined) {
    w.pendingAbortRequest.promise.reject(error);
    w.pendingAbortRequest = undefined;
  }
  writableStreamDealWithRejection(w, error);
}
function writableStreamHasOperationMarkedInFlight(w) {
  return w.inFlightWriteRequest !== undefined || w.inFlightCloseRequest !== undefined;
}
function writableStreamRejectCloseAndClosedPromiseIfNeeded(w) {
  if (w.closeRequest !== undefined) {
    w.closeRequest.reject(w.storedError);
    w.closeRequest = undefined;
  }
  const writer = w.writer;
  if (writer !== undefined) {
    writer.closed.reject(w.storedError);
    markHandled(writer.closed.promise);
  }
}
function writableStreamUpdateBackpressure(w, backpressure) {
  const writer = w.writer;
  if (writer !== undefined && backpressure !== w.backpressure) {
    if (backpressure) writer.ready = deferred();
    else writer.ready.resolve(undefined);
  }
  w.backpressure = backpressure;
}

// ---- writer (records) ----

function newWriterRecord(w) {
  if (isWritableStreamLocked(w)) throw new TypeError('WritableStream is locked to a writer.');
  const writer = { pub: undefined, stream: w, ready: undefined, closed: undefined };
  w.writer = writer;
  const state = w.state;
  if (state === 'writable') {
    writer.ready = deferred();
    if (writableStreamCloseQueuedOrInFlight(w) || !w.backpressure) writer.ready.resolve(undefined);
    writer.closed = deferred();
  } else if (state === 'erroring') {
    writer.ready = deferred();
    writer.ready.reject(w.storedError);
    markHandled(writer.ready.promise);
    writer.closed = deferred();
  } else if (state === 'closed') {
    writer.ready = deferred();
    writer.ready.resolve(undefined);
    writer.closed = deferred();
    writer.closed.resolve(undefined);
  } else {
    writer.ready = deferred();
    writer.ready.reject(w.storedError);
    markHandled(writer.ready.promise);
    writer.closed = deferred();
    writer.closed.reject(w.storedError);
    markHandled(writer.closed.promise);
  }
  return writer;
}
function writerEnsureClosedPromiseRejected(writer, error) {
  if (writer.closed.settled) writer.closed = deferred();
  writer.closed.reject(error);
  markHandled(writer.closed.promise);
}
function writerEnsureReadyPromiseRejected(writer, error) {
  if (writer.ready.settled) writer.ready = deferred();
  writer.ready.reject(error);
  markHandled(writer.ready.promise);
}

function writerGetDesiredSize(writer) {
  const w = writer.stream;
  if (w.state === 'errored' || w.state === 'erroring') return null;
  if (w.state === 'closed') return 0;
  return w.controller.strategyHWM - w.controller.queueTotalSize;
}
function writableStreamDefaultWriterCloseWithErrorPropagation(writer) {
  const w = writer.stream;
  if (writableStreamCloseQueuedOrInFlight(w) || w.state === 'closed') return resolved(undefined);
  if (w.state === 'errored') return rejected(w.storedError);
  return writableStreamClose(w);
}
function writableStreamDefaultWriterRelease(writer) {
  const w = writer.stream;
  const e = new TypeError('This writer has been released.');
  writerEnsureReadyPromiseRejected(writer, e);
  writerEnsureClosedPromiseRejected(writer, e);
  w.writer = undefined;
  writer.stream = undefined;
}
function writableStreamDefaultWriterWrite(writer, chunk) {
  const w = writer.stream;
  const c = w.controller;
  const chunkSize = writableControllerGetChunkSize(c, chunk);
  if (w !== writer.stream) return rejected(new TypeError('This writer has been released.'));
  const state = w.state;
  if (state === 'errored') return rejected(w.storedError);
  if (writableStreamCloseQueuedOrInFlight(w) || state === 'closed') {
    return rejected(new TypeError('Cannot write to a stream that is closing or closed.'));
  }
  if (state === 'erroring') return rejected(w.storedError);
  const promise = writableStreamAddWriteRequest(w);
  writableControllerWrite(c, chunk, chunkSize);
  return promise;
}

// ---- writable controller ----

function setUpWritableController(w, c, startAlgorithm, writeAlgorithm, closeAlgorithm, abortAlgorithm, hwm, sizeAlgorithm) {
  c.stream = w;
  w.controller = c;
  resetQueue(c);
  c.abortController = new AbortController();
  c.started = false;
  c.strategySizeAlgorithm = sizeAlgorithm;
  c.strategyHWM = hwm;
  c.writeAlgorithm = writeAlgorithm;
  c.closeAlgorithm = closeAlgorithm;
  c.abortAlgorithm = abortAlgorithm;
  writableStreamUpdateBackpressure(w, writableControllerGetBackpressure(c));
  const startResult = startAlgorithm();
  then(resolved(startResult), () => {
    c.started = true;
    writableControllerAdvanceQueueIfNeeded(c);
  }, (r) => {
    c.started = true;
    writableStreamDealWithRejection(w, r);
  });
}
function writableControllerClearAlgorithms(c) {
  c.writeAlgorithm = undefined;
  c.closeAlgorithm = undefined;
  c.abortAlgorithm = undefined;
  c.strategySizeAlgorithm = undefined;
}
function writableControllerClose(c) {
  enqueueValueWithSize(c, closeSentinel, 0);
  writableControllerAdvanceQueueIfNeeded(c);
}
function writableControllerGetChunkSize(c, chunk) {
  if (c.strategySizeAlgorithm === undefined) return 1;
  try {
    return c.strategySizeAlgorithm(chunk);
  } catch (e) {
    writableControllerErrorIfNeeded(c, e);
    return 1;
  }
}
function writableControllerGetDesiredSize(c) { return c.strategyHWM - c.queueTotalSize; }
function writableControllerWrite(c, chunk, chunkSize) {
  try {
    enqueueValueWithSize(c, chunk, chunkSize);
  } catch (e) {
    writableControllerErrorIfNeeded(c, e);
    return;
  }
  const w = c.stream;
  if (!writableStreamCloseQueuedOrInFlight(w) && w.state === 'writable') {
    writableStreamUpdateBackpressure(w, writableControllerGetBackpressure(c));
  }
  writableControllerAdvanceQueueIfNeeded(c);
}
function writableControllerAdvanceQueueIfNeeded(c) {
  const w = c.stream;
  if (!c.started) return;
  if (w.inFlightWriteRequest !== undefined) return;
  const state = w.state;
  if (state === 'closed' || state === 'errored') return;
  if (state === 'erroring') { writableStreamFinishErroring(w); return; }
  if (c.queue.length === 0) return;
  const value = c.queue[0].value;
  if (value === closeSentinel) writableControllerProcessClose(c);
  else writableControllerProcessWrite(c, value);
}
function writableControllerErrorIfNeeded(c, error) {
  if (c.stream.state === 'writable') writableControllerError(c, error);
}
function writableControllerProcessClose(c) {
  const w = c.stream;
  w.inFlightCloseRequest = w.closeRequest;
  w.closeRequest = undefined;
  dequeueValue(c);
  const sinkClosePromise = c.closeAlgorithm();
  writableControllerClearAlgorithms(c);
  then(sinkClosePromise, () => writableStreamFinishInFlightClose(w), (r) => writableStreamFinishInFlightCloseWithError(w, r));
}
function writableControllerProcessWrite(c, chunk) {
  const w = c.stream;
  w.inFlightWriteRequest = w.writeRequests.shift();
  then(c.writeAlgorithm(chunk), () => {
    writableStreamFinishInFlightWrite(w);
    const state = w.state;
    dequeueValue(c);
    if (!writableStreamCloseQueuedOrInFlight(w) && state === 'writable') {
      writableStreamUpdateBackpressure(w, writableControllerGetBackpressure(c));
    }
    writableControllerAdvanceQueueIfNeeded(c);
  }, (reason) => {
    if (w.state === 'writable') writableControllerClearAlgorithms(c);
    writableStreamFinishInFlightWriteWithError(w, reason);
  });
}
function writableControllerGetBackpressure(c) { return writableControllerGetDesiredSize(c) <= 0; }
function writableControllerError(c, error) {
  writableControllerClearAlgorithms(c);
  writableStreamStartErroring(c.stream, error);
}

function createWritableStream(startAlgorithm, writeAlgorithm, closeAlgorithm, abortAlgorithm, hwm = 1, sizeAlgorithm = () => 1) {
  const pub = new WritableStream(kInternal);
  const w = internal.writableRecord(pub);
  const c = { pub: undefined };
  c.pub = new WritableStreamDefaultController(kInternal, c);
  setUpWritableController(w, c, startAlgorithm, writeAlgorithm, closeAlgorithm, abortAlgorithm, hwm, sizeAlgorithm);
  return pub;
}

class WritableStream {
  #r;

  constructor(underlyingSink = undefined, strategy = undefined) {
    this.#r = newWritableRecord(this);
    if (underlyingSink === kInternal) return;
    if (underlyingSink === null) {
      throw new TypeError("Failed to construct 'WritableStream': parameter 1 is not of type 'object'.");
    }
    const sink = underlyingSink === undefined ? {} : underlyingSink;
    if (!internal.isObject(sink)) throw new TypeError("Failed to construct 'WritableStream': parameter 1 is not of type 'object'.");
    const strat = internal.toDictionary(strategy, 'QueuingStrategy');
    const abort = optionalFunction(sink, 'abort', 'underlyingSink');
    const close = optionalFunction(sink, 'close', 'underlyingSink');
    const start = optionalFunction(sink, 'start', 'underlyingSink');
    const type = sink.type;
    const write = optionalFunction(sink, 'write', 'underlyingSink');
    if (type !== undefined) throw new RangeError("Failed to construct 'WritableStream': Invalid type is specified");
    const size = extractSizeAlgorithm(strat);
    const hwm = extractHighWaterMark(strat, 1);
    const c = { pub: undefined };
    c.pub = new WritableStreamDefaultController(kInternal, c);
    setUpWritableController(this.#r, c,
      () => (start === undefined ? undefined : Reflect.apply(start, sink, [c.pub])),
      (chunk) => (write === undefined ? resolved(undefined) : promiseCall(write, sink, chunk, c.pub)),
      () => (close === undefined ? resolved(undefined) : promiseCall(close, sink)),
      (reason) => (abort === undefined ? resolved(undefined) : promiseCall(abort, sink, reason)),
      hwm, size);
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#r in self)) throw new TypeError('Illegal invocation');
    return self.#r;
  }

  get locked() { return isWritableStreamLocked(WritableStream.#rec(this)); }

  abort(reason = undefined) {
    let w;
    try { w = WritableStream.#rec(this); } catch (e) { return rejected(e); }
    if (isWritableStreamLocked(w)) return rejected(new TypeError('Cannot abort a stream that is locked to a writer.'));
    return writableStreamAbort(w, reason);
  }

  close() {
    let w;
    try { w = WritableStream.#rec(this); } catch (e) { return rejected(e); }
    if (isWritableStreamLocked(w)) return rejected(new TypeError('Cannot close a stream that is locked to a writer.'));
    if (writableStreamCloseQueuedOrInFlight(w)) return rejected(new TypeError('Cannot close a stream that is already closing.'));
    return writableStreamClose(w);
  }

  getWriter() {
    WritableStream.#rec(this);
    return new WritableStreamDefaultWriter(this);
  }

  static {
    internal.writableRecord = (pub) => pub.#r;
    internal.isWritableStream = (v) => internal.isObject(v) && #r in v;
  }
}
internal.enumerableMembers(WritableStream, ['locked', 'abort', 'close', 'getWriter']);
internal.setToStringTag(WritableStream.prototype, 'WritableStream');

class WritableStreamDefaultWriter {
  #r;

  constructor(stream) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'WritableStreamDefaultWriter'");
    if (!internal.isWritableStream(stream)) {
      throw new TypeError("Failed to construct 'WritableStreamDefaultWriter': parameter 1 is not of type 'WritableStream'.");
    }
    this.#r = newWriterRecord(internal.writableRecord(stream));
    this.#r.pub = this;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#r in self)) throw new TypeError('Illegal invocation');
    return self.#r;
  }

  get closed() {
    try { return WritableStreamDefaultWriter.#rec(this).closed.promise; } catch (e) { return rejected(e); }
  }
  get ready() {
    try { return WritableStreamDefaultWriter.#rec(this).ready.promise; } catch (e) { return rejected(e); }
  }
  get desiredSize() {
    const writer = WritableStreamDefaultWriter.#rec(this);
    if (writer.stream === undefined) throw new TypeError('This writer has been released.');
    return writerGetDesiredSize(writer);
  }

  abort(reason = undefined) {
    let writer;
    try { writer = WritableStreamDefaultWriter.#rec(this); } catch (e) { return rejected(e); }
    if (writer.stream === undefined) return rejected(new TypeError('This writer has been released.'));
    return writableStreamAbort(writer.stream, reason);
  }

  close() {
    let writer;
    try { writer = WritableStreamDefaultWriter.#rec(this); } catch (e) { return rejected(e); }
    const w = writer.stream;
    if (w === undefined) return rejected(new TypeError('This writer has been released.'));
    if (writableStreamCloseQueuedOrInFlight(w)) return rejected(new TypeError('Cannot close a stream that is already closing.'));
    return writableStreamClose(w);
  }

  releaseLock() {
    const writer = WritableStreamDefaultWriter.#rec(this);
    if (writer.stream === undefined) return;
    writableStreamDefaultWriterRelease(writer);
  }

  write(chunk = undefined) {
    let writer;
    try { writer = WritableStreamDefaultWriter.#rec(this); } catch (e) { return rejected(e); }
    if (writer.stream === undefined) return rejected(new TypeError('This writer has been released.'));
    return writableStreamDefaultWriterWrite(writer, chunk);
  }
}
internal.enumerableMembers(WritableStreamDefaultWriter, ['closed', 'ready', 'desiredSize', 'abort', 'close', 'releaseLock', 'write']);
internal.setToStringTag(WritableStreamDefaultWriter.prototype, 'WritableStreamDefaultWriter');

class WritableStreamDefaultController {
  #c;

  constructor(key = undefined, c = undefined) {
    if (key !== kInternal) internal.illegalConstructor();
    this.#c = c;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
    return self.#c;
  }

  get signal() { return WritableStreamDefaultController.#rec(this).abortController.signal; }

  error(e = undefined) {
    const c = WritableStreamDefaultController.#rec(this);
    if (c.stream.state !== 'writable') return;
    writableControllerError(c, e);
  }
}
internal.enumerableMembers(WritableStreamDefaultController, ['signal', 'error']);
internal.setToStringTag(WritableStreamDefaultController.prototype, 'WritableStreamDefaultController');

// =========================================================================
// TransformStream
// =========================================================================

function transformStreamSetBackpressure(t, backpressure) {
  if (t.backpressureChangePromise !== undefined) t.backpressureChangePromise.resolve(undefined);
  t.backpressureChangePromise = deferred();
  t.backpressure = backpressure;
}
function transformStreamUnblockWrite(t) {
  if (t.backpressure) transformStreamSetBackpressure(t, false);
}
function transformStreamErrorWritableAndUnblockWrite(t, e) {
  transformControllerClearAlgorithms(t.controller);
  writableControllerErrorIfNeeded(internal.writableRecord(t.writable).controller, e);
  transformStreamUnblockWrite(t);
}
function transformStreamError(t, e) {
  defaultControllerError(internal.readableRecord(t.readable).controller, e);
  transformStreamErrorWritableAndUnblockWrite(t, e);
}
function transformControllerClearAlgorithms(c) {
  c.transformAlgorithm = undefined;
  c.flushAlgorithm = undefined;
  c.cancelAlgorithm = undefined;
}
function transformControllerEnqueue(c, chunk) {
  const t = c.stream;
  const rc = internal.readableRecord(t.readable).controller;
  if (!defaultControllerCanCloseOrEnqueue(rc)) throw new TypeError('Readable side is not in a state that permits enqueue');
  try {
    defaultControllerEnqueue(rc, chunk);
  } catch (e) {
    transformStreamErrorWritableAndUnblockWrite(t, e);
    throw internal.readableRecord(t.readable).storedError;
  }
  const backpressure = defaultControllerHasBackpressure(rc);
  if (backpressure !== t.backpressure) transformStreamSetBackpressure(t, true);
}
function transformControllerTerminate(c) {
  const t = c.stream;
  defaultControllerClose(internal.readableRecord(t.readable).controller);
  transformStreamErrorWritableAndUnblockWrite(t, new TypeError('The transform stream has been terminated'));
}
function transformControllerPerformTransform(c, chunk) {
  return then(c.transformAlgorithm(chunk), undefined, (r) => {
    transformStreamError(c.stream, r);
    throw r;
  });
}
function transformSinkWrite(t, chunk) {
  const c = t.controller;
  if (t.backpressure) {
    return then(t.backpressureChangePromise.promise, () => {
      const w = internal.writableRecord(t.writable);
      if (w.state === 'erroring') throw w.storedError;
      return transformControllerPerformTransform(c, chunk);
    });
  }
  return transformControllerPerformTransform(c, chunk);
}
function transformSinkAbort(t, reason) {
  const c = t.controller;
  if (c.finishPromise !== undefined) return c.finishPromise.promise;
  const r = internal.readableRecord(t.readable);
  c.finishPromise = deferred();
  const cancelPromise = c.cancelAlgorithm(reason);
  transformControllerClearAlgorithms(c);
  then(cancelPromise, () => {
    if (r.state === 'errored') c.finishPromise.reject(r.storedError);
    else {
      defaultControllerError(r.controller, reason);
      c.finishPromise.resolve(undefined);
    }
  }, (e) => {
    defaultControllerError(r.controller, e);
    c.finishPromise.reject(e);
  });
  return c.finishPromise.promise;
}
function transformSinkClose(t) {
  const c = t.controller;
  if (c.finishPromise !== undefined) return c.finishPromise.promise;
  const r = internal.readableRecord(t.readable);
  c.finishPromise = deferred();
  const flushPromise = c.flushAlgorithm();
  transformControllerClearAlgorithms(c);
  then(flushPromise, () => {
    if (r.state === 'errored') c.finishPromise.reject(r.storedError);
    else {
      defaultControllerClose(r.controller);
      c.finishPromise.resolve(undefined);
    }
  }, (e) => {
    defaultControllerError(r.controller, e);
    c.finishPromise.reject(e);
  });
  return c.finishPromise.promise;
}
function transformSourcePull(t) {
  transformStreamSetBackpressure(t, false);
  return t.backpressureChangePromise.promise;
}
function transformSourceCancel(t, reason) {
  const c = t.controller;
  if (c.finishPromise !== undefined) return c.finishPromise.promise;
  const w = internal.writableRecord(t.writable);
  c.finishPromise = deferred();
  const cancelPromise = c.cancelAlgorithm(reason);
  transformControllerClearAlgorithms(c);
  then(cancelPromise, () => {
    if (w.state === 'errored') c.finishPromise.reject(w.storedError);
    else {
      writableControllerErrorIfNeeded(w.controller, reason);
      transformStreamUnblockWrite(t);
      c.finishPromise.resolve(undefined);
    }
  }, (e) => {
    writableControllerErrorIfNeeded(w.controller, e);
    transformStreamUnblockWrite(t);
    c.finishPromise.reject(e);
  });
  return c.finishPromise.promise;
}

class TransformStream {
  #t;

  constructor(transformer = undefined, writableStrategy = undefined, readableStrategy = undefined) {
    // A subclass of this file's (IdentityTransformStream) hands over its own pair.
    if (transformer === kInternal) { this.#t = writableStrategy; return; }
    if (transformer === null) throw new TypeError("Failed to construct 'TransformStream': parameter 1 is not of type 'object'.");
    const tr = transformer === undefined ? {} : transformer;
    if (!internal.isObject(tr)) throw new TypeError("Failed to construct 'TransformStream': parameter 1 is not of type 'object'.");
    const ws = internal.toDictionary(writableStrategy, 'QueuingStrategy');
    const rs = internal.toDictionary(readableStrategy, 'QueuingStrategy');
    const cancel = optionalFunction(tr, 'cancel', 'transformer');
    const flush = optionalFunction(tr, 'flush', 'transformer');
    const readableType = tr.readableType;
    const start = optionalFunction(tr, 'start', 'transformer');
    const transform = optionalFunction(tr, 'transform', 'transformer');
    const writableType = tr.writableType;
    if (readableType !== undefined) throw new RangeError("Failed to construct 'TransformStream': Invalid readableType is specified");
    if (writableType !== undefined) throw new RangeError("Failed to construct 'TransformStream': Invalid writableType is specified");
    const readableHWM = extractHighWaterMark(rs, 0);
    const readableSize = extractSizeAlgorithm(rs);
    const writableHWM = extractHighWaterMark(ws, 1);
    const writableSize = extractSizeAlgorithm(ws);
    const startPromise = deferred();
    const t = { readable: undefined, writable: undefined, backpressure: undefined, backpressureChangePromise: undefined, controller: undefined };
    this.#t = t;
    const startAlgorithm = () => startPromise.promise;
    t.writable = createWritableStream(startAlgorithm, (chunk) => transformSinkWrite(t, chunk),
      () => transformSinkClose(t), (reason) => transformSinkAbort(t, reason), writableHWM, writableSize);
    t.readable = createReadableStream(startAlgorithm, () => transformSourcePull(t),
      (reason) => transformSourceCancel(t, reason), readableHWM, readableSize);
    transformStreamSetBackpressure(t, true);
    const c = { stream: t, pub: undefined, finishPromise: undefined };
    c.pub = new TransformStreamDefaultController(kInternal, c);
    t.controller = c;
    c.transformAlgorithm = transform === undefined
      ? (chunk) => {
        try {
          transformControllerEnqueue(c, chunk);
          return resolved(undefined);
        } catch (e) {
          return rejected(e);
        }
      }
      : (chunk) => promiseCall(transform, tr, chunk, c.pub);
    c.flushAlgorithm = flush === undefined ? () => resolved(undefined) : () => promiseCall(flush, tr, c.pub);
    c.cancelAlgorithm = cancel === undefined ? () => resolved(undefined) : (reason) => promiseCall(cancel, tr, reason);
    startPromise.resolve(start === undefined ? undefined : Reflect.apply(start, tr, [c.pub]));
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#t in self)) throw new TypeError('Illegal invocation');
    return self.#t;
  }

  get readable() { return TransformStream.#rec(this).readable; }
  get writable() { return TransformStream.#rec(this).writable; }

  static {
    internal.isTransformStream = (v) => internal.isObject(v) && #t in v;
  }
}
internal.enumerableMembers(TransformStream, ['readable', 'writable']);
internal.setToStringTag(TransformStream.prototype, 'TransformStream');

class TransformStreamDefaultController {
  #c;

  constructor(key = undefined, c = undefined) {
    if (key !== kInternal) internal.illegalConstructor();
    this.#c = c;
  }

  static #rec(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
    return self.#c;
  }

  get desiredSize() {
    const c = TransformStreamDefaultController.#rec(this);
    return defaultControllerGetDesiredSize(internal.readableRecord(c.stream.readable).controller);
  }
  enqueue(chunk = undefined) { transformControllerEnqueue(TransformStreamDefaultController.#rec(this), chunk); }
  error(reason = undefined) { transformStreamError(TransformStreamDefaultController.#rec(this).stream, reason); }
  terminate() { transformControllerTerminate(TransformStreamDefaultController.#rec(this)); }
}
internal.enumerableMembers(TransformStreamDefaultController, ['desiredSize', 'enqueue', 'error', 'terminate']);
internal.setToStringTag(TransformStreamDefaultController.prototype, 'TransformStreamDefaultController');

// =========================================================================
// Queuing strategies
// =========================================================================

const byteLengthSize = function size(chunk) { return chunk.byteLength; };
const countSize = function size() { return 1; };

class ByteLengthQueuingStrategy {
  #hwm;
  constructor(init) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'ByteLengthQueuingStrategy'");
    if (!internal.isObject(init) || init.highWaterMark === undefined) {
      throw new TypeError("Failed to construct 'ByteLengthQueuingStrategy': required member highWaterMark is undefined.");
    }
    this.#hwm = internal.toNumber(init.highWaterMark);
  }
  get highWaterMark() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return this.#hwm;
  }
  get size() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return byteLengthSize;
  }
}
internal.enumerableMembers(ByteLengthQueuingStrategy, ['highWaterMark', 'size']);
internal.setToStringTag(ByteLengthQueuingStrategy.prototype, 'ByteLengthQueuingStrategy');

class CountQueuingStrategy {
  #hwm;
  constructor(init) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'CountQueuingStrategy'");
    if (!internal.isObject(init) || init.highWaterMark === undefined) {
      throw new TypeError("Failed to construct 'CountQueuingStrategy': required member highWaterMark is undefined.");
    }
    this.#hwm = internal.toNumber(init.highWaterMark);
  }
  get highWaterMark() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return this.#hwm;
  }
  get size() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return countSize;
  }
}
internal.enumerableMembers(CountQueuingStrategy, ['highWaterMark', 'size']);
internal.setToStringTag(CountQueuingStrategy.prototype, 'CountQueuingStrategy');

// =========================================================================
// TextEncoderStream / TextDecoderStream (Encoding Standard)
// =========================================================================

class TextEncoderStream {
  #t;
  constructor() {
    let pendingHighSurrogate = null;
    this.#t = new TransformStream({
      transform(chunk, controller) {
        let s = internal.toDOMString(chunk);
        if (pendingHighSurrogate !== null) { s = pendingHighSurrogate + s; pendingHighSurrogate = null; }
        if (s.length > 0) {
          const last = s.charCodeAt(s.length - 1);
          if (last >= 0xd800 && last <= 0xdbff) { pendingHighSurrogate = s[s.length - 1]; s = s.slice(0, -1); }
        }
        if (s.length > 0) controller.enqueue(host.utf8Encode(s));
      },
      flush(controller) {
        if (pendingHighSurrogate !== null) controller.enqueue(new Uint8Array([0xef, 0xbf, 0xbd]));
      },
    });
  }
  static #rec(self) {
    if (!internal.isObject(self) || !(#t in self)) throw new TypeError('Illegal invocation');
    return self.#t;
  }
  get encoding() { TextEncoderStream.#rec(this); return 'utf-8'; }
  get readable() { return TextEncoderStream.#rec(this).readable; }
  get writable() { return TextEncoderStream.#rec(this).writable; }
}
internal.enumerableMembers(TextEncoderStream, ['encoding', 'readable', 'writable']);
internal.setToStringTag(TextEncoderStream.prototype, 'TextEncoderStream');

class TextDecoderStream {
  #t;
  #decoder;
  constructor(label = 'utf-8', options = undefined) {
    const decoder = new TextDecoder(label, options);
    this.#decoder = decoder;
    this.#t = new TransformStream({
      transform(chunk, controller) {
        if (internal.bufferSourceView(chunk) === null) {
          throw new TypeError('TextDecoderStream: chunk is not an ArrayBuffer or ArrayBufferView.');
        }
        const s = decoder.decode(chunk, { stream: true });
        if (s) controller.enqueue(s);
      },
      flush(controller) {
        const s = decoder.decode();
        if (s) controller.enqueue(s);
      },
    });
  }
  static #rec(self) {
    if (!internal.isObject(self) || !(#t in self)) throw new TypeError('Illegal invocation');
    return self;
  }
  get encoding() { return TextDecoderStream.#rec(this).#decoder.encoding; }
  get fatal() { return TextDecoderStream.#rec(this).#decoder.fatal; }
  get ignoreBOM() { return TextDecoderStream.#rec(this).#decoder.ignoreBOM; }
  get readable() { return TextDecoderStream.#rec(this).#t.readable; }
  get writable() { return TextDecoderStream.#rec(this).#t.writable; }
}
internal.enumerableMembers(TextDecoderStream, ['encoding', 'fatal', 'ignoreBOM', 'readable', 'writable']);
internal.setToStringTag(TextDecoderStream.prototype, 'TextDecoderStream');

// =========================================================================
// IdentityTransformStream / FixedLengthStream (Cloudflare Workers)
// =========================================================================
//
// A byte stream pair as workerd has it: the readable side is a byte stream
// (BYOB readers work); the writable side takes ArrayBuffers, views and
// strings (UTF-8, as workerd does), copies them (the writer's buffer is not
// detached) and resolves a write once a reader has taken its bytes. A
// FixedLengthStream also errors both sides when more or fewer bytes than
// declared go through, and gives a Response body made from its readable a
// Content-Length (internal.streamExpectedLength) instead of chunked encoding.

const NOT_BYTES = 'This TransformStream is being used as a byte stream, but received an object of non-ArrayBuffer/ArrayBufferView type on its writable side.';
const TOO_MANY = 'Attempt to write too many bytes through a FixedLengthStream.';
const TOO_FEW = 'FixedLengthStream did not see all expected bytes before close().';

function workersChunkBytes(chunk) {
  if (typeof chunk === 'string') return host.utf8Encode(chunk);
  const view = internal.bufferSourceView(chunk);
  if (view === null) throw new TypeError(NOT_BYTES);
  return view.slice();
}

function workersChunkSize(chunk) {
  if (typeof chunk === 'string') return chunk.length;
  const view = internal.bufferSourceView(chunk);
  return view === null ? 1 : view.byteLength;
}

// `expected`: the FixedLengthStream's length, or -1. Returns the record a
// TransformStream holds: { readable, writable }.
function byteTransformPair(expected, writableHWM) {
  let seen = 0;
  let waiting = null; // the deferred of the write whose bytes wait for a reader
  let rc, wc;
  const release = () => { const d = waiting; waiting = null; if (d !== null) d.resolve(undefined); };
  const fail = (e) => {
    const d = waiting;
    waiting = null;
    if (d !== null) d.reject(e);
    if (rc.stream.state === 'readable') byteControllerError(rc, e);
    writableControllerErrorIfNeeded(wc, e);
  };
  // The readable's high-water mark is one byte: once a reader has taken
  // every queued byte the controller pulls, and the pull releases the write.
  const readable = createReadableByteStream(() => undefined, () => { release(); return resolved(undefined); }, (reason) => {
    const d = waiting;
    waiting = null;
    if (d !== null) d.reject(reason);
    writableControllerErrorIfNeeded(wc, reason);
    return resolved(undefined);
  }, 1);
  rc = internal.readableRecord(readable).controller;
  const writable = createWritableStream(() => undefined, (chunk) => {
    let bytes;
    try {
      bytes = workersChunkBytes(chunk);
    } catch (e) {
      fail(e);
      return rejected(e);
    }
    if (rc.stream.state !== 'readable' || rc.closeRequested) {
      return rejected(rc.stream.state === 'errored' ? rc.stream.storedError : new TypeError('The readable side was canceled.'));
    }
    if (expected >= 0 && bytes.byteLength > expected - seen) {
      const e = new TypeError(TOO_MANY);
      fail(e);
      return rejected(e);
    }
    seen += bytes.byteLength;
    if (bytes.byteLength === 0) return resolved(undefined);
    const d = deferred();
    waiting = d;
    byteControllerEnqueue(rc, bytes);
    // Taken at once by a waiting read: nothing is left to wait for.
    if (rc.queueTotalSize === 0 && waiting === d) release();
    return d.promise;
  }, () => {
    if (expected >= 0 && seen < expected) {
      const e = new TypeError(TOO_FEW);
      fail(e);
      return rejected(e);
    }
    try {
      byteControllerClose(rc);
    } catch (e) {
      return rejected(e);
    }
    if (rc.pendingPullIntos.length > 0 && rc.stream.state === 'closed') byteControllerRespond(rc, 0);
    return resolved(undefined);
  }, (reason) => {
    const d = waiting;
    waiting = null;
    if (d !== null) d.reject(reason);
    if (rc.stream.state === 'readable') byteControllerError(rc, reason);
    return resolved(undefined);
  }, writableHWM, workersChunkSize);
  wc = internal.writableRecord(writable).controller;
  if (expected >= 0) internal.readableRecord(readable).expectedLength = expected;
  return { readable, writable, backpressure: undefined, backpressureChangePromise: undefined, controller: undefined };
}

class IdentityTransformStream extends TransformStream {
  constructor(options = undefined, key = undefined, expected = -1) {
    const opts = internal.toDictionary(options, 'QueuingStrategy');
    const hwm = opts.highWaterMark === undefined ? 1 : extractHighWaterMark(opts, 1);
    super(kInternal, byteTransformPair(key === kInternal ? expected : -1, hwm));
  }
}
internal.setToStringTag(IdentityTransformStream.prototype, 'IdentityTransformStream');

// The expected length as workerd takes it: a number or BigInt, truncated,
// 0 ≤ n < 2^53.
function expectedLength(v) {
  if (v === undefined) throw new TypeError("Failed to construct 'FixedLengthStream': constructor parameter 1 is not of type 'bigint'.");
  const n = typeof v === 'bigint' ? Number(v) : internal.toNumber(v);
  if (Number.isNaN(n)) throw new TypeError('FixedLengthStream: the expected length is not an integer.');
  if (n < 0) throw new TypeError('FixedLengthStream: the expected length is negative.');
  if (n >= 2 ** 53) throw new TypeError('FixedLengthStream requires an integer expected length less than 2^53.');
  return Math.trunc(n);
}

class FixedLengthStream extends IdentityTransformStream {
  constructor(expected, options = undefined) {
    const length = expectedLength(expected);
    super(options, kInternal, length);
  }
}
internal.setToStringTag(FixedLengthStream.prototype, 'FixedLengthStream');

// =========================================================================
// For the other runtime files
// =========================================================================

// A byte stream that yields `bytes` (a Uint8Array, copied) and closes.
internal.streamFromBytes = (bytes) => {
  let stream;
  let done = false;
  stream = createReadableByteStream(() => undefined, () => {
    if (!done) {
      done = true;
      const c = internal.readableRecord(stream).controller;
      if (bytes.byteLength > 0) byteControllerEnqueue(c, bytes.slice());
      byteControllerClose(c);
      if (c.pendingPullIntos.length > 0 && c.stream.state === 'closed') byteControllerRespond(c, 0);
    }
    return resolved(undefined);
  }, () => resolved(undefined));
  return stream;
};

// A byte stream over a host body (host.bodyRead / host.bodyCancel).
internal.streamFromHostBody = (bodyId) => {
  let stream;
  let finished = false;
  stream = createReadableByteStream(() => undefined, () => then(host.bodyRead(bodyId), (read) => {
    const c = internal.readableRecord(stream).controller;
    if (read === null) {
      finished = true;
      byteControllerClose(c);
      if (c.pendingPullIntos.length > 0 && c.stream.state === 'closed') byteControllerRespond(c, 0);
    } else {
      byteControllerEnqueue(c, read.chunk);
    }
  }), () => {
    if (!finished) { finished = true; host.bodyCancel(bodyId); }
    return resolved(undefined);
  });
  return stream;
};

internal.streamIsDisturbed = (pub) => internal.readableRecord(pub).disturbed;
// A FixedLengthStream's readable: the length it declared (-1 for any other stream).
internal.streamExpectedLength = (pub) => internal.readableRecord(pub).expectedLength;
internal.streamIsLocked = (pub) => isReadableStreamLocked(internal.readableRecord(pub));
internal.streamIsErrored = (pub) => internal.readableRecord(pub).state === 'errored';
internal.streamTee = (pub) => readableStreamTee(internal.readableRecord(pub));
internal.streamCancel = (pub, reason) => readableStreamCancel(internal.readableRecord(pub), reason);
internal.createReadableStream = createReadableStream;
internal.deferred = deferred;

// A reader the runtime uses to consume a stream, immune to user patching of
// the public prototypes: { read(), value, done, release(), cancel(reason) }.
// `read()` resolves with nothing once `value` (the chunk) and `done` are set:
// resolving a promise with an object looks up its `then`, which a worker can
// patch on Object.prototype to inject chunks into (or break) a body read.
internal.acquireReader = (pub) => {
  const reader = newDefaultReaderRecord(internal.readableRecord(pub));
  const r = {
    value: undefined,
    done: false,
    read() {
      const d = deferred();
      readableStreamDefaultReaderRead(reader, {
        chunk: (value) => { r.value = value; r.done = false; d.resolve(undefined); },
        close: () => { r.value = undefined; r.done = true; d.resolve(undefined); },
        error: (e) => d.reject(e),
      });
      return d.promise;
    },
    release() { if (reader.stream !== undefined) readableStreamDefaultReaderRelease(reader); },
    cancel(reason) { return reader.stream === undefined ? resolved(undefined) : readerGenericCancel(reader, reason); },
  };
  return r;
};

// A body chunk as bytes (a view, no copy): ArrayBuffer or any view, as
// workerd takes them; `strings` also takes strings (as UTF-8). Null otherwise.
internal.chunkBytes = (value, strings) => {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return strings ? host.utf8Encode(value) : null;
  return internal.bufferSourceView(value);
};

// Read a whole stream of byte chunks; resolves with nothing once
// `box.bytes` holds them (one Uint8Array). The stream stays locked, as the
// Fetch Standard's "fully read" leaves it.
internal.readAllBytes = async (pub, box) => {
  const reader = internal.acquireReader(pub);
  const chunks = [];
  let total = 0;
  for (;;) {
    await reader.read();
    if (reader.done) break;
    const bytes = internal.chunkBytes(reader.value, false);
    if (bytes === null) {
      const e = new TypeError('This ReadableStream did not return bytes.');
      await then(reader.cancel(e), undefined, () => {});
      throw e;
    }
    chunks.push(bytes);
    total += bytes.byteLength;
  }
  if (chunks.length === 1) {
    box.bytes = chunks[0];
    return;
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.byteLength; }
  box.bytes = out;
};

for (const [name, value] of Object.entries({
  ReadableStream, ReadableStreamDefaultReader, ReadableStreamBYOBReader, ReadableStreamDefaultController,
  ReadableByteStreamController, ReadableStreamBYOBRequest, WritableStream, WritableStreamDefaultWriter,
  WritableStreamDefaultController, TransformStream, TransformStreamDefaultController,
  ByteLengthQueuingStrategy, CountQueuingStrategy, TextEncoderStream, TextDecoderStream,
  IdentityTransformStream, FixedLengthStream,
})) {
  internal.defineGlobal(name, value);
}

// Error a stream as its controller would (used by fetch on abort).
internal.streamError = (pub, e) => {
  const s = internal.readableRecord(pub);
  if (s.state === 'readable') controllerError(s.controller, e);
};
