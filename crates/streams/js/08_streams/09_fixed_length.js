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

