// 24_compression.js — CompressionStream and DecompressionStream (Compression
// Standard) for `gzip`, `deflate` and `deflate-raw`, over a codec the host
// keeps (HOST.md, isolane-web: crates/web/src/compression.rs).
//
// Each stream is a writable/readable pair with TransformStream's shape (a
// writable of high-water mark 1, a readable of 0; canceling one side errors
// the other) built from the public constructors, because the pair must wait
// for its reader between output slices: the host hands back at most 64 KiB
// per step, and at most two slices wait for the reader before the pump
// waits for it (see `pump`). So a decompression bomb
// inflates only as fast as its output is read, each slice charged to the
// worker's memory, and every step is short (the watchdog can stop the loop).
'use strict';

const FORMATS = ['deflate', 'deflate-raw', 'gzip'];
const { ReadableStream: Readable, WritableStream: Writable } = globalThis;

function checkFormat(what, format) {
  internal.requireArgs(format === undefined ? 0 : 1, 1, `Failed to construct '${what}'`);
  const name = internal.toDOMString(format);
  if (!FORMATS.includes(name)) {
    throw new TypeError(`Failed to construct '${what}': Unsupported compression format: '${name}'`);
  }
  return name;
}

// The readable and writable sides of one codec. `kind` is 'compress' or
// 'decompress'.
function codecPair(what, kind, format) {
  let handle = null;      // made at the first write (a stream never written costs nothing)
  let ended = false;      // the codec was freed (end, error, cancel or abort)
  let rc;                 // the readable's controller
  let wc;                 // the writable's controller
  let wanted = null;      // deferred resolved when the reader pulls
  const codec = () => (handle ??= host.compressionNew(kind, format));
  const free = () => {
    if (ended) return;
    ended = true;
    if (handle !== null) host.codecFree(handle);
    handle = null;
    if (wanted !== null) wanted.resolve();
  };
  const fail = (error) => {
    free();
    try { rc.error(error); } catch { /* already closed or errored */ }
    return error;
  };
  // Waits until the reader wants more (a pull), when it has enough.
  async function readerWants() {
    if (rc.desiredSize > 0) return;
    wanted = internal.deferred();
    await wanted.promise;
    wanted = null;
  }
  // Steps the codec over `view` (or its end). A slice is enqueued once the
  // next step has made another (or found nothing more), and before making
  // a third the pump waits for the reader: at most two slices wait for it,
  // and, as with a TransformStream, a write whose output fits one slice
  // completes without a reader.
  async function pump(view) {
    let at = 0;
    let held = null;
    for (;;) {
      if (ended) throw new TypeError(`${what}: the stream was canceled`);
      let out;
      try {
        if (view === null) {
          out = host.compressionEnd(codec());
        } else {
          const [used, produced] = host.compressionWrite(codec(), view.subarray(at));
          at += used;
          out = produced;
        }
      } catch (e) {
        const error = new TypeError(e.message);
        // The output before the error is delivered first (WPT's
        // decompression-extra-input), then the next read fails.
        if (held !== null && !ended) {
          rc.enqueue(held);
          await readerWants();
        }
        throw fail(error);
      }
      if (out === null) {
        // The host takes at most 64 KiB of input per step: null means that
        // step's input is used up.
        if (view !== null && at < view.length) continue;
        if (held !== null && !ended) rc.enqueue(held);
        return;
      }
      if (held !== null) {
        rc.enqueue(held);
        await readerWants();
      }
      held = out;
    }
  }
  const readable = new Readable({
    start(c) { rc = c; },
    pull() { if (wanted !== null) wanted.resolve(); },
    cancel(reason) {
      free();
      wc.error(reason);
    },
  }, { highWaterMark: 0 });
  const writable = new Writable({
    start(c) { wc = c; },
    write(chunk) {
      const view = internal.bufferSourceView(chunk);
      if (view === null) {
        throw fail(new TypeError(`${what}: chunk is not an ArrayBuffer or ArrayBufferView.`));
      }
      return pump(view);
    },
    async close() {
      await pump(null);
      free();
      rc.close();
    },
    abort(reason) { fail(reason); },
  }, { highWaterMark: 1 });
  return { readable, writable };
}

class CompressionStream {
  #pair;
  constructor(format) {
    this.#pair = codecPair('CompressionStream', 'compress', checkFormat('CompressionStream', format));
  }
  static #check(self) {
    if (!internal.isObject(self) || !(#pair in self)) throw new TypeError('Illegal invocation');
    return self.#pair;
  }
  get readable() { return CompressionStream.#check(this).readable; }
  get writable() { return CompressionStream.#check(this).writable; }
}
internal.enumerableMembers(CompressionStream, ['readable', 'writable']);
internal.setToStringTag(CompressionStream.prototype, 'CompressionStream');

class DecompressionStream {
  #pair;
  constructor(format) {
    this.#pair = codecPair('DecompressionStream', 'decompress', checkFormat('DecompressionStream', format));
  }
  static #check(self) {
    if (!internal.isObject(self) || !(#pair in self)) throw new TypeError('Illegal invocation');
    return self.#pair;
  }
  get readable() { return DecompressionStream.#check(this).readable; }
  get writable() { return DecompressionStream.#check(this).writable; }
}
internal.enumerableMembers(DecompressionStream, ['readable', 'writable']);
internal.setToStringTag(DecompressionStream.prototype, 'DecompressionStream');

internal.defineGlobal('CompressionStream', CompressionStream);
internal.defineGlobal('DecompressionStream', DecompressionStream);
