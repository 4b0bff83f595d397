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
internal.enumerableMembers(WritableStream, ['locked', 'abort', 'close', 'getWriter'], 'WritableStream');

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
internal.enumerableMembers(WritableStreamDefaultWriter, ['closed', 'ready', 'desiredSize', 'abort', 'close', 'releaseLock', 'write'], 'WritableStreamDefaultWriter');

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
internal.enumerableMembers(WritableStreamDefaultController, ['signal', 'error'], 'WritableStreamDefaultController');

