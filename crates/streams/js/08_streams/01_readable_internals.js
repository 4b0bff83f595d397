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

// `quiet`: the runtime's own reader, whose `closed` nothing sees (a TypeError's stack costs ~30k instructions).
function readerGenericRelease(reader, quiet) {
  const s = reader.stream;
  if (!quiet) {
    const e = new TypeError('This reader was released.');
    if (s.state !== 'readable') reader.closed = deferred();
    reader.closed.reject(e);
    markHandled(reader.closed.promise);
  }
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

function readableStreamDefaultReaderRelease(reader, quiet = false) {
  readerGenericRelease(reader, quiet);
  const list = reader.readRequests;
  if (list.length === 0) return;
  const e = new TypeError('This reader was released.');
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
  readerGenericRelease(reader, false);
  const list = reader.readIntoRequests;
  if (list.length === 0) return;
  const e = new TypeError('This reader was released.');
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
// Both controllers pull alike (ReadableStream*ControllerCallPullIfNeeded).
function callPullIfNeeded(c, shouldPull, error) {
  if (!shouldPull(c)) return;
  if (c.pulling) { c.pullAgain = true; return; }
  c.pulling = true;
  then(c.pullAlgorithm(), () => {
    c.pulling = false;
    if (c.pullAgain) {
      c.pullAgain = false;
      callPullIfNeeded(c, shouldPull, error);
    }
  }, (e) => error(c, e));
}
function defaultControllerCallPullIfNeeded(c) { callPullIfNeeded(c, defaultControllerShouldCallPull, defaultControllerError); }
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
function byteControllerCallPullIfNeeded(c) { callPullIfNeeded(c, byteControllerShouldCallPull, byteControllerError); }
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

