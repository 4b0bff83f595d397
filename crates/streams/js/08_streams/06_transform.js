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
internal.enumerableMembers(TransformStream, ['readable', 'writable'], 'TransformStream');

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
internal.enumerableMembers(TransformStreamDefaultController, ['desiredSize', 'enqueue', 'error', 'terminate'], 'TransformStreamDefaultController');

