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
    release() { if (reader.stream !== undefined) readableStreamDefaultReaderRelease(reader, true); },
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
  ByteLengthQueuingStrategy, CountQueuingStrategy, IdentityTransformStream, FixedLengthStream,
})) {
  internal.defineGlobal(name, value);
}

// Error a stream as its controller would (used by fetch on abort).
internal.streamError = (pub, e) => {
  const s = internal.readableRecord(pub);
  if (s.state === 'readable') controllerError(s.controller, e);
};
