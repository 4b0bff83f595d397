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
internal.enumerableMembers(ReadableStream, ['locked', 'cancel', 'getReader', 'pipeThrough', 'pipeTo', 'tee', 'values'], 'ReadableStream');

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
internal.enumerableMembers(ReadableStreamDefaultReader, ['closed', 'read', 'releaseLock', 'cancel'], 'ReadableStreamDefaultReader');

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
internal.enumerableMembers(ReadableStreamBYOBReader, ['closed', 'read', 'releaseLock', 'cancel'], 'ReadableStreamBYOBReader');

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
internal.enumerableMembers(ReadableStreamDefaultController, ['desiredSize', 'close', 'enqueue', 'error'], 'ReadableStreamDefaultController');

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
internal.enumerableMembers(ReadableByteStreamController, ['byobRequest', 'desiredSize', 'close', 'enqueue', 'error'], 'ReadableByteStreamController');

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
internal.enumerableMembers(ReadableStreamBYOBRequest, ['view', 'respond', 'respondWithNewView'], 'ReadableStreamBYOBRequest');

