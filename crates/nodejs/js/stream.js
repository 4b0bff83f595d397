// node:stream — Node's streams, written for Isolane from Node's documented
// behaviour: Readable (flowing and paused modes, 'readable', async
// iteration, pipe, Readable.from), Writable (buffering, drain, cork, final),
// Duplex, Transform, PassThrough, finished, pipeline and their promise
// forms (`stream/promises`). Events are delivered in microtasks, as
// process.nextTick is one here. Runs as function (host, internal, require,
// module, exports).

const EventEmitter = require('node:events');
const { Buffer } = require('node:buffer');
const { codedError, notImplemented } = require('node:internal/errors');

let defaultHighWaterMark = 16 * 1024;
const OBJECT_HIGH_WATER_MARK = 16;


const later = (fn) => queueMicrotask(fn);

function highWaterMark(options, objectMode, key) {
  const value = options[key] ?? options.highWaterMark;
  if (value === undefined) return objectMode ? OBJECT_HIGH_WATER_MARK : defaultHighWaterMark;
  if (!Number.isInteger(value) || value < 0) {
    throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property 'options.highWaterMark' is invalid. Received ${value}`);
  }
  return value;
}

// A chunk as a non-object stream keeps it: a Buffer (strings decoded by
// `encoding`), or the string itself when the stream keeps strings.
function toBuffer(chunk, encoding) {
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding);
  if (chunk instanceof Uint8Array) return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw codedError(TypeError, 'ERR_INVALID_ARG_TYPE', `The "chunk" argument must be of type string or an instance of Buffer or Uint8Array. Received ${chunk === null ? 'null' : typeof chunk}`);
}

// The old-style base class: an EventEmitter with pipe.
function Stream(options) {
  EventEmitter.call(this, options);
}
Object.setPrototypeOf(Stream.prototype, EventEmitter.prototype);
Object.setPrototypeOf(Stream, EventEmitter);

// What destroying means for any of them: once, then `_destroy`, then
// 'error' (if any) and 'close' in a later microtask.
function destroy(error, callback) {
  const r = this._readableState;
  const w = this._writableState;
  if (typeof error === 'function') { callback = error; error = undefined; }
  if ((r && r.destroyed) || (w && w.destroyed)) {
    if (callback) later(() => callback(error));
    return this;
  }
  for (const s of [r, w]) if (s) { s.destroyed = true; if (error && !s.errored) s.errored = error; }
  this._destroy(error || null, (failure) => {
    later(() => {
      if (failure) {
        for (const s of [r, w]) if (s && !s.errored) s.errored = failure;
        if (!(r || w).errorEmitted) { (r || w).errorEmitted = true; if (w) w.errorEmitted = true; this.emit('error', failure); }
      }
      for (const s of [r, w]) if (s) s.closed = true;
      if ((r || w).emitClose) this.emit('close');
      if (callback) callback(failure);
    });
  });
  return this;
}

// Readable ------------------------------------------------------------------

function ReadableState(options, stream, isDuplex) {
  this.objectMode = !!(options.objectMode || (isDuplex && options.readableObjectMode));
  this.highWaterMark = highWaterMark(options, this.objectMode, isDuplex ? 'readableHighWaterMark' : 'highWaterMark');
  this.buffer = [];
  this.length = 0;
  this.flowing = null;
  this.ended = false;
  this.endEmitted = false;
  this.reading = false;
  this.pushes = 0;
  this.consumed = false;
  this.needReadable = true;
  this.scheduled = false;
  this.resumeScheduled = false;
  this.destroyed = false;
  this.errored = null;
  this.closed = false;
  this.emitClose = options.emitClose !== false;
  this.autoDestroy = options.autoDestroy !== false;
  this.decoder = null;
  this.encoding = null;
  this.pipes = [];
}

function Readable(options = {}) {
  if (!(this instanceof Readable)) return new Readable(options);
  Stream.call(this, options);
  this._readableState = new ReadableState(options, this, this instanceof Duplex);
  if (options.encoding) this.setEncoding(options.encoding);
  if (typeof options.read === 'function') this._read = options.read;
  if (typeof options.destroy === 'function') this._destroy = options.destroy;
  if (options.signal) addAbortSignal(options.signal, this);
}
Object.setPrototypeOf(Readable.prototype, Stream.prototype);
Object.setPrototypeOf(Readable, Stream);

Readable.prototype._read = function () {
  throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', 'The _read() method is not implemented');
};
Readable.prototype._destroy = function (error, callback) { callback(error); };
Readable.prototype.destroy = destroy;

Readable.prototype.push = function (chunk, encoding) {
  return addChunk(this, chunk, encoding, false);
};

Readable.prototype.unshift = function (chunk, encoding) {
  return addChunk(this, chunk, encoding, true);
};

function addChunk(stream, chunk, encoding, front) {
  const s = stream._readableState;
  if (s.destroyed) return false;
  s.reading = false;
  if (chunk === null) {
    s.ended = true;
    schedule(stream);
    return false;
  }
  if (!s.objectMode) {
    if (typeof chunk === 'string' && s.decoder === null && encoding === s.encoding && s.encoding !== null) {
      // Kept as it is: the stream decodes to this encoding anyway.
    } else {
      chunk = toBuffer(chunk, encoding);
      if (s.decoder !== null) chunk = s.decoder.write(chunk);
    }
    if (chunk.length === 0) return s.length < s.highWaterMark;
  } else if (chunk === undefined) {
    return s.length < s.highWaterMark;
  }
  if (s.ended && !front) {
    stream.destroy(codedError(Error, 'ERR_STREAM_PUSH_AFTER_EOF', 'stream.push() after EOF'));
    return false;
  }
  if (front) s.buffer.unshift(chunk); else s.buffer.push(chunk);
  s.length += s.objectMode ? 1 : chunk.length;
  s.pushes++;
  schedule(stream);
  return s.length < s.highWaterMark;
}

// Takes `n` bytes (all there is when undefined; one object in object mode).
function take(s, n) {
  if (s.length === 0) return null;
  if (s.objectMode) { s.length--; return s.buffer.shift(); }
  if (n === undefined || n >= s.length) {
    if (n !== undefined && n > s.length && !s.ended) return null;
    const all = s.buffer;
    s.buffer = [];
    s.length = 0;
    if (all.length === 1) return all[0];
    return s.decoder !== null || s.encoding !== null ? all.join('') : Buffer.concat(all);
  }
  const parts = [];
  let left = n;
  while (left > 0) {
    const head = s.buffer[0];
    if (head.length <= left) {
      parts.push(s.buffer.shift());
      left -= head.length;
    } else {
      parts.push(head.slice(0, left));
      s.buffer[0] = head.slice(left);
      left = 0;
    }
  }
  s.length -= n;
  return typeof parts[0] === 'string' ? parts.join('') : Buffer.concat(parts);
}

function schedule(stream) {
  const s = stream._readableState;
  if (s.scheduled) return;
  s.scheduled = true;
  later(() => { s.scheduled = false; tick(stream); });
}

// Asks `_read` for more while there is room and it answers at once.
function fill(stream) {
  const s = stream._readableState;
  while (!s.ended && !s.reading && !s.destroyed && s.length < s.highWaterMark) {
    const before = s.pushes;
    s.reading = true;
    try {
      stream._read(s.highWaterMark);
    } catch (error) {
      stream.destroy(error);
      return;
    }
    if (s.reading || s.pushes === before) return;
  }
}

function tick(stream) {
  const s = stream._readableState;
  if (s.destroyed) return;
  fill(stream);
  // A resume() has queued its own flow: the data waits for it.
  if (s.resumeScheduled) return;
  while (s.flowing && !s.destroyed) {
    const chunk = take(s, undefined);
    if (chunk === null) break;
    stream.emit('data', chunk);
    fill(stream);
  }
  if (s.flowing === false && s.needReadable && (s.length > 0 || s.ended) && stream.listenerCount('readable') > 0) {
    s.needReadable = false;
    stream.emit('readable');
  }
  if (s.ended && s.length === 0 && !s.endEmitted && (s.flowing || s.consumed) && !s.destroyed) {
    s.endEmitted = true;
    stream.emit('end');
    const w = stream._writableState;
    if (s.autoDestroy && (!w || (w.finished && w.autoDestroy))) later(() => stream.destroy());
    else if (w && !stream.allowHalfOpen && !w.ending) stream.end();
  }
}

Readable.prototype.read = function (n) {
  const s = this._readableState;
  s.consumed = true;
  if (n === 0) { schedule(this); return null; }
  const chunk = take(s, n);
  s.needReadable = true;
  if (chunk !== null && s.flowing !== true) this.emit('data', chunk);
  schedule(this);
  return chunk;
};

Readable.prototype.on = function (event, listener) {
  const result = Stream.prototype.on.call(this, event, listener);
  const s = this._readableState;
  if (event === 'data' && s.flowing !== false) this.resume();
  else if (event === 'readable') { s.flowing = false; s.needReadable = true; schedule(this); }
  return result;
};
Readable.prototype.addListener = Readable.prototype.on;

// As in Node, a paused stream starts flowing in a microtask queued here:
// data buffered before runs in the AsyncLocalStorage context of the code
// that resumed it (attached 'data', piped), not in the one of the code
// that pushed it (React's SSR reads an RSC stream so).
Readable.prototype.resume = function () {
  const s = this._readableState;
  s.consumed = true;
  if (s.flowing !== true) {
    s.flowing = true;
    s.resumeScheduled = true;
    later(() => { s.resumeScheduled = false; tick(this); });
  } else {
    schedule(this);
  }
  this.emit('resume');
  return this;
};

Readable.prototype.pause = function () {
  const s = this._readableState;
  if (s.flowing !== false) { s.flowing = false; this.emit('pause'); }
  return this;
};

Readable.prototype.isPaused = function () {
  return this._readableState.flowing === false;
};

Readable.prototype.setEncoding = function (encoding) {
  const { StringDecoder } = require('node:string_decoder');
  const s = this._readableState;
  s.decoder = new StringDecoder(encoding);
  s.encoding = s.decoder.encoding;
  s.buffer = s.buffer.map((chunk) => (typeof chunk === 'string' ? chunk : s.decoder.write(chunk)));
  s.length = s.buffer.reduce((sum, chunk) => sum + chunk.length, 0);
  return this;
};

Readable.prototype.pipe = function (dest, options = {}) {
  const src = this;
  const s = this._readableState;
  const onData = (chunk) => {
    if (dest.write(chunk) === false) {
      src.pause();
      dest.once('drain', () => src.resume());
    }
  };
  const onEnd = () => dest.end();
  const entry = { dest, onData, onEnd };
  s.pipes.push(entry);
  src.on('data', onData);
  if (options.end !== false) src.once('end', onEnd);
  dest.emit('pipe', src);
  return dest;
};

Readable.prototype.unpipe = function (dest) {
  const s = this._readableState;
  for (const entry of s.pipes.filter((e) => dest === undefined || e.dest === dest)) {
    this.removeListener('data', entry.onData);
    this.removeListener('end', entry.onEnd);
    entry.dest.emit('unpipe', this);
  }
  s.pipes = s.pipes.filter((e) => dest !== undefined && e.dest !== dest);
  if (s.pipes.length === 0) this.pause();
  return this;
};

Readable.prototype.wrap = function (old) {
  old.on('data', (chunk) => { if (!this.push(chunk)) old.pause && old.pause(); });
  old.on('end', () => this.push(null));
  old.on('error', (error) => this.destroy(error));
  this._read = () => { if (old.resume) old.resume(); };
  return this;
};

Readable.prototype[Symbol.asyncIterator] = function () {
  return iterate(this);
};

Readable.prototype.iterator = function () {
  return iterate(this);
};

// Async iteration: read() until null, then wait for more, the end or an error.
function iterate(stream) {
  const s = stream._readableState;
  let wake = null;
  const signal = () => { if (wake) { const w = wake; wake = null; w(); } };
  stream.on('readable', signal);
  stream.on('end', signal);
  stream.on('error', signal);
  stream.on('close', signal);
  const done = () => {
    stream.removeListener('readable', signal);
    stream.removeListener('end', signal);
    stream.removeListener('error', signal);
    stream.removeListener('close', signal);
    return { value: undefined, done: true };
  };
  return {
    async next() {
      for (;;) {
        if (s.errored) { done(); throw s.errored; }
        const chunk = stream.read();
        if (chunk !== null) return { value: chunk, done: false };
        if (s.endEmitted || (s.ended && s.length === 0)) return done();
        if (s.destroyed) {
          done();
          throw codedError(Error, 'ERR_STREAM_PREMATURE_CLOSE', 'Premature close');
        }
        await new Promise((resolve) => { wake = resolve; });
      }
    },
    async return() {
      stream.destroy();
      return done();
    },
    [Symbol.asyncIterator]() { return this; },
  };
}

function defineGetters(Class, getters) {
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(Class.prototype, name, { get, configurable: true, enumerable: false });
  }
}

defineGetters(Readable, {
  readable() { const s = this._readableState; return !!s && !s.destroyed && !s.endEmitted && !s.errored; },
  readableEnded() { return this._readableState.endEmitted; },
  readableFlowing() { return this._readableState.flowing; },
  readableLength() { return this._readableState.length; },
  readableHighWaterMark() { return this._readableState.highWaterMark; },
  readableObjectMode() { return this._readableState.objectMode; },
  readableEncoding() { return this._readableState.encoding; },
  readableAborted() { const s = this._readableState; return s.destroyed && !s.endEmitted; },
  destroyed() { return (this._readableState || this._writableState).destroyed; },
  closed() { return (this._readableState || this._writableState).closed; },
  errored() { return (this._readableState || this._writableState).errored; },
});

// Readable.from(iterable): pulls one item per `_read`; strings and Buffers
// are one chunk.
Readable.from = function from(iterable, options) {
  if (typeof iterable === 'string' || iterable instanceof Uint8Array) {
    return new Readable({ objectMode: true, ...options, read() { this.push(iterable); this.push(null); } });
  }
  let iterator;
  let isAsync;
  if (iterable && typeof iterable[Symbol.asyncIterator] === 'function') {
    iterator = iterable[Symbol.asyncIterator]();
    isAsync = true;
  } else if (iterable && typeof iterable[Symbol.iterator] === 'function') {
    iterator = iterable[Symbol.iterator]();
    isAsync = false;
  } else {
    throw codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "iterable" argument must be an instance of Iterable.');
  }
  let busy = false;
  let again = false;
  let finished = false;
  // One pull at a time; a `_read` during one is answered when it is done.
  const pull = () => {
    busy = true;
    again = false;
    next().then(() => {
      busy = false;
      if (again) pull();
    }, (error) => { busy = false; readable.destroy(error); });
  };
  const readable = new Readable({
    objectMode: true,
    highWaterMark: 1,
    ...options,
    read() {
      if (busy) again = true;
      else pull();
    },
    destroy(error, callback) {
      if (finished || typeof iterator.return !== 'function') { callback(error); return; }
      finished = true;
      Promise.resolve().then(() => iterator.return()).then(() => callback(error), (e) => callback(error || e));
    },
  });
  async function next() {
    for (;;) {
      const step = isAsync ? await iterator.next() : iterator.next();
      if (step.done) { finished = true; readable.push(null); return; }
      const value = isAsync ? step.value : await step.value;
      if (value === null) throw codedError(TypeError, 'ERR_STREAM_NULL_VALUES', 'May not write null values to stream');
      if (!readable.push(value)) return;
    }
  }
  return readable;
};

Readable.fromWeb = function fromWeb(webStream, options) {
  const reader = webStream.getReader();
  return new Readable({
    objectMode: true,
    ...options,
    read() {
      reader.read().then(({ value, done }) => this.push(done ? null : value), (error) => this.destroy(error));
    },
    destroy(error, callback) {
      reader.cancel(error).then(() => callback(error), () => callback(error));
    },
  });
};

Readable.toWeb = function toWeb(readable) {
  const iterator = iterate(readable);
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(typeof value === 'string' ? Buffer.from(value) : value);
    },
    cancel() { readable.destroy(); },
  });
};

// Writable ------------------------------------------------------------------

function WritableState(options, isDuplex) {
  this.objectMode = !!(options.objectMode || (isDuplex && options.writableObjectMode));
  this.highWaterMark = highWaterMark(options, this.objectMode, isDuplex ? 'writableHighWaterMark' : 'highWaterMark');
  this.decodeStrings = options.decodeStrings !== false;
  this.defaultEncoding = options.defaultEncoding || 'utf8';
  this.queue = [];
  this.length = 0;
  this.writing = false;
  this.corked = 0;
  this.ending = false;
  this.finalCalled = false;
  this.finished = false;
  this.needDrain = false;
  this.destroyed = false;
  this.errored = null;
  this.errorEmitted = false;
  this.closed = false;
  this.emitClose = options.emitClose !== false;
  this.autoDestroy = options.autoDestroy !== false;
}

function Writable(options = {}) {
  if (!(this instanceof Writable)) return new Writable(options);
  Stream.call(this, options);
  initWritable(this, options, false);
}
Object.setPrototypeOf(Writable.prototype, Stream.prototype);
Object.setPrototypeOf(Writable, Stream);

function initWritable(stream, options, isDuplex) {
  stream._writableState = new WritableState(options, isDuplex);
  if (typeof options.write === 'function') stream._write = options.write;
  if (typeof options.writev === 'function') stream._writev = options.writev;
  if (typeof options.final === 'function') stream._final = options.final;
  if (typeof options.destroy === 'function') stream._destroy = options.destroy;
  if (!isDuplex && options.signal) addAbortSignal(options.signal, stream);
}

// A Duplex is a Writable too, though it inherits from Readable.
Object.defineProperty(Writable, Symbol.hasInstance, {
  value(object) {
    if (Function.prototype[Symbol.hasInstance].call(this, object)) return true;
    return this === Writable && !!object && object._writableState !== undefined;
  },
});

Writable.prototype._write = function (chunk, encoding, callback) {
  if (this._writev) this._writev([{ chunk, encoding }], callback);
  else throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', 'The _write() method is not implemented');
};
Writable.prototype._destroy = function (error, callback) { callback(error); };
Writable.prototype.destroy = destroy;

function failWrite(stream, error, callback) {
  later(() => callback(error));
  stream.destroy(error);
  return false;
}

Writable.prototype.write = function (chunk, encoding, callback) {
  const w = this._writableState;
  if (typeof encoding === 'function') { callback = encoding; encoding = null; }
  callback = callback || (() => {});
  encoding = encoding || w.defaultEncoding;
  if (chunk === null) return failWrite(this, codedError(TypeError, 'ERR_STREAM_NULL_VALUES', 'May not write null values to stream'), callback);
  if (w.ending) return failWrite(this, codedError(Error, 'ERR_STREAM_WRITE_AFTER_END', 'write after end'), callback);
  if (w.destroyed) return failWrite(this, codedError(Error, 'ERR_STREAM_DESTROYED', 'Cannot call write after a stream was destroyed'), callback);
  if (!w.objectMode) {
    if (typeof chunk === 'string') {
      if (w.decodeStrings) { chunk = Buffer.from(chunk, encoding); encoding = 'buffer'; }
    } else {
      chunk = toBuffer(chunk);
      encoding = 'buffer';
    }
  }
  w.length += w.objectMode ? 1 : chunk.length;
  const room = w.length < w.highWaterMark;
  if (!room) w.needDrain = true;
  const entry = { chunk, encoding, callback };
  if (w.writing || w.corked || w.queue.length > 0) w.queue.push(entry);
  else doWrite(this, entry);
  return room;
};

function doWrite(stream, entry) {
  const w = stream._writableState;
  w.writing = true;
  let sync = true;
  let called = false;
  const onWrite = (error) => {
    if (called) {
      stream.destroy(codedError(Error, 'ERR_MULTIPLE_CALLBACK', 'Callback called multiple times'));
      return;
    }
    called = true;
    w.writing = false;
    w.length -= w.objectMode ? 1 : entry.chunk.length;
    if (error) {
      later(() => entry.callback(error));
      stream.destroy(error);
      return;
    }
    const next = () => {
      entry.callback(null);
      afterWrite(stream);
    };
    if (sync) later(next); else next();
  };
  try {
    stream._write(entry.chunk, entry.encoding, onWrite);
  } catch (error) {
    onWrite(error);
  }
  sync = false;
}

function afterWrite(stream) {
  const w = stream._writableState;
  if (w.destroyed) return;
  if (w.queue.length > 0 && !w.writing && !w.corked) {
    doWrite(stream, w.queue.shift());
    return;
  }
  if (w.queue.length === 0 && !w.writing && w.needDrain && w.length === 0) {
    w.needDrain = false;
    stream.emit('drain');
  }
  maybeFinish(stream);
}

function maybeFinish(stream) {
  const w = stream._writableState;
  if (!w.ending || w.writing || w.queue.length > 0 || w.finalCalled || w.destroyed || w.corked) return;
  w.finalCalled = true;
  const finish = (error) => {
    if (error) { stream.destroy(error); return; }
    later(() => {
      if (w.destroyed) return;
      w.finished = true;
      stream.emit('finish');
      const r = stream._readableState;
      if (w.autoDestroy && (!r || (r.endEmitted && r.autoDestroy))) stream.destroy();
    });
  };
  if (typeof stream._final === 'function') {
    try {
      stream._final(finish);
    } catch (error) {
      finish(error);
    }
  } else {
    finish(null);
  }
}

Writable.prototype.end = function (chunk, encoding, callback) {
  const w = this._writableState;
  if (typeof chunk === 'function') { callback = chunk; chunk = null; encoding = null; }
  else if (typeof encoding === 'function') { callback = encoding; encoding = null; }
  if (chunk !== null && chunk !== undefined) this.write(chunk, encoding);
  if (w.corked) { w.corked = 1; this.uncork(); }
  if (callback) {
    if (w.finished) later(() => callback(null));
    else if (w.ending || w.destroyed) later(() => callback(codedError(Error, 'ERR_STREAM_ALREADY_FINISHED', 'Cannot call end after a stream was finished')));
    else {
      const onFinish = () => { this.removeListener('error', onError); callback(null); };
      const onError = (error) => { this.removeListener('finish', onFinish); callback(error); };
      this.once('finish', onFinish);
      this.once('error', onError);
    }
  }
  w.ending = true;
  maybeFinish(this);
  return this;
};

Writable.prototype.cork = function () { this._writableState.corked++; };

Writable.prototype.uncork = function () {
  const w = this._writableState;
  if (w.corked === 0) return;
  w.corked--;
  if (w.corked === 0 && !w.writing) afterWrite(this);
};

Writable.prototype.setDefaultEncoding = function (encoding) {
  this._writableState.defaultEncoding = String(encoding).toLowerCase();
  return this;
};

defineGetters(Writable, {
  writable() { const w = this._writableState; return !w.destroyed && !w.ending && !w.errored; },
  writableEnded() { return this._writableState.ending; },
  writableFinished() { return this._writableState.finished; },
  writableLength() { return this._writableState.length; },
  writableHighWaterMark() { return this._writableState.highWaterMark; },
  writableObjectMode() { return this._writableState.objectMode; },
  writableNeedDrain() { return this._writableState.needDrain; },
  writableCorked() { return this._writableState.corked; },
  destroyed() { return this._writableState.destroyed; },
  closed() { return this._writableState.closed; },
  errored() { return this._writableState.errored; },
});

Writable.fromWeb = function fromWeb(webStream, options) {
  const writer = webStream.getWriter();
  return new Writable({
    objectMode: true,
    ...options,
    write(chunk, encoding, callback) { writer.write(chunk).then(() => callback(), callback); },
    final(callback) { writer.close().then(() => callback(), callback); },
    destroy(error, callback) { writer.abort(error).then(() => callback(error), () => callback(error)); },
  });
};

Writable.toWeb = function toWeb(writable) {
  return new WritableStream({
    write(chunk) {
      return new Promise((resolve, reject) => writable.write(chunk, (error) => (error ? reject(error) : resolve())));
    },
    close() { return new Promise((resolve) => writable.end(resolve)); },
    abort(reason) { writable.destroy(reason); },
  });
};

// Duplex, Transform, PassThrough ------------------------------------------------

function Duplex(options = {}) {
  if (!(this instanceof Duplex)) return new Duplex(options);
  Readable.call(this, options);
  initWritable(this, options, true);
  this.allowHalfOpen = options.allowHalfOpen !== false;
  if (options.readable === false) { this._readableState.ended = true; this._readableState.endEmitted = true; }
  if (options.writable === false) { this._writableState.ending = true; this._writableState.finished = true; }
}
Object.setPrototypeOf(Duplex.prototype, Readable.prototype);
Object.setPrototypeOf(Duplex, Readable);
for (const name of ['write', 'end', 'cork', 'uncork', 'setDefaultEncoding']) {
  Duplex.prototype[name] = Writable.prototype[name];
}
Duplex.prototype._write = Writable.prototype._write;
for (const name of Object.getOwnPropertyNames(Writable.prototype)) {
  if (name.startsWith('writable')) Object.defineProperty(Duplex.prototype, name, Object.getOwnPropertyDescriptor(Writable.prototype, name));
}

function Transform(options = {}) {
  if (!(this instanceof Transform)) return new Transform(options);
  Duplex.call(this, options);
  if (typeof options.transform === 'function') this._transform = options.transform;
  if (typeof options.flush === 'function') this._flush = options.flush;
  this._waiting = null;
}
Object.setPrototypeOf(Transform.prototype, Duplex.prototype);
Object.setPrototypeOf(Transform, Duplex);

Transform.prototype._transform = function () {
  throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', 'The _transform() method is not implemented');
};

Transform.prototype._write = function (chunk, encoding, callback) {
  const r = this._readableState;
  this._transform(chunk, encoding, (error, data) => {
    if (error) { callback(error); return; }
    if (data !== undefined && data !== null) this.push(data);
    // Holds the writer back while the readable side is full.
    if (r.length < r.highWaterMark || r.ended) callback();
    else this._waiting = callback;
  });
};

Transform.prototype._read = function () {
  this._readableState.reading = false;
  const waiting = this._waiting;
  if (waiting !== null) { this._waiting = null; waiting(); }
};

Transform.prototype._final = function (callback) {
  const done = (error, data) => {
    if (error) { callback(error); return; }
    if (data !== undefined && data !== null) this.push(data);
    this.push(null);
    callback();
  };
  if (typeof this._flush === 'function') this._flush(done);
  else done(null);
};

function PassThrough(options) {
  if (!(this instanceof PassThrough)) return new PassThrough(options);
  Transform.call(this, options);
}
Object.setPrototypeOf(PassThrough.prototype, Transform.prototype);
Object.setPrototypeOf(PassThrough, Transform);
PassThrough.prototype._transform = function (chunk, encoding, callback) { callback(null, chunk); };

// finished, pipeline ------------------------------------------------------------

function isStream(value) {
  return !!value && typeof value.on === 'function' && (value._readableState !== undefined || value._writableState !== undefined || typeof value.pipe === 'function');
}

// Calls `callback` once `stream` has ended (readable), finished (writable),
// failed or closed too early; returns a function that stops listening.
function finished(stream, options, callback) {
  if (typeof options === 'function') { callback = options; options = {}; }
  options = options || {};
  const r = stream._readableState;
  const w = stream._writableState;
  const wantRead = options.readable !== false && !!r;
  const wantWrite = options.writable !== false && !!w;
  let done = false;
  const call = (error) => {
    if (done) return;
    done = true;
    cleanup();
    callback.call(stream, error);
  };
  const readDone = () => !wantRead || r.endEmitted;
  const writeDone = () => !wantWrite || w.finished;
  const onEnd = () => { if (readDone() && writeDone()) call(); };
  const onError = (error) => call(error);
  const onClose = () => {
    const error = (r && r.errored) || (w && w.errored);
    if (error) call(error);
    else if (readDone() && writeDone()) call();
    else call(codedError(Error, 'ERR_STREAM_PREMATURE_CLOSE', 'Premature close'));
  };
  stream.on('end', onEnd);
  stream.on('finish', onEnd);
  if (options.error !== false) stream.on('error', onError);
  stream.on('close', onClose);
  function cleanup() {
    stream.removeListener('end', onEnd);
    stream.removeListener('finish', onEnd);
    stream.removeListener('error', onError);
    stream.removeListener('close', onClose);
  }
  const state = r || w;
  if (state && state.closed) later(onClose);
  else if (state && (readDone() && writeDone()) && (r || w)) later(onEnd);
  return cleanup;
}

// pipeline(source, ...transforms, destination, callback): sources and
// transforms may be streams, iterables or async generator functions; the
// destination a stream or a function given the previous stage.
function pipeline(...streams) {
  const callback = streams.pop();
  if (typeof callback !== 'function') throw codedError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "callback" argument must be of type function');
  if (streams.length === 1 && Array.isArray(streams[0])) streams = streams[0];
  if (streams.length < 2) throw codedError(TypeError, 'ERR_MISSING_ARGS', 'The "streams" argument must be specified');
  const made = [];
  // Streams that ended or finished cleanly: a failure later in the line
  // leaves them be (as Node's pipeline does), since destroying one with the
  // error would emit it where nobody listens any more.
  const settled = new Set();
  let failed = false;
  let done = false;
  const finish = (error, value) => {
    if (done) return;
    done = true;
    if (error) for (const stream of made) if (!stream.destroyed && !settled.has(stream)) stream.destroy(error);
    later(() => callback(error || null, value));
  };
  const fail = (error) => { if (!failed) { failed = true; finish(error); } };
  let previous = null;
  streams.forEach((stage, i) => {
    const last = i === streams.length - 1;
    let stream;
    if (typeof stage === 'function') {
      const result = i === 0 ? stage() : stage(previous);
      if (last && !isStream(result)) {
        Promise.resolve(result).then((value) => finish(null, value), fail);
        previous = null;
        return;
      }
      stream = isStream(result) ? result : Readable.from(result);
    } else if (isStream(stage)) {
      stream = stage;
      if (previous !== null && stream !== previous) previous.pipe(stream);
    } else if (i === 0) {
      stream = Readable.from(stage);
    } else {
      throw codedError(TypeError, 'ERR_INVALID_ARG_TYPE', `pipeline: stage ${i} is not a stream, iterable or function`);
    }
    made.push(stream);
    finished(stream, { readable: !last || !stream._writableState, writable: i > 0 }, (error) => {
      if (error) { fail(error); return; }
      settled.add(stream);
      if (last) finish(null);
    });
    previous = stream;
  });
  return previous;
}

function addAbortSignal(signal, stream) {
  const abort = () => stream.destroy(signal.reason ?? new DOMException('The operation was aborted', 'AbortError'));
  if (signal.aborted) later(abort);
  else signal.addEventListener('abort', abort, { once: true });
  return stream;
}

// `stream/promises`' pipeline takes an options object last.
function isOptions(value) {
  return !!value && typeof value === 'object' && !isStream(value) && Object.getPrototypeOf(value) === Object.prototype;
}

const promises = {
  pipeline: (...streams) => new Promise((resolve, reject) => {
    const options = isOptions(streams[streams.length - 1]) ? streams.pop() : {};
    const last = pipeline(...streams, (error, value) => (error ? reject(error) : resolve(value)));
    if (options.signal && last) addAbortSignal(options.signal, last);
  }),
  finished: (stream, options) => new Promise((resolve, reject) => {
    finished(stream, options, (error) => (error ? reject(error) : resolve()));
  }),
};

// Two Duplex streams joined crosswise: what one writes, the other reads.
function duplexPair(options) {
  const sides = [];
  const side = (other) => new Duplex({
    ...options,
    read() {},
    write(chunk, encoding, callback) { sides[other].push(chunk); callback(); },
    final(callback) { sides[other].push(null); callback(); },
  });
  sides.push(side(1), side(0));
  return sides;
}

Object.assign(Stream, {
  Stream,
  Readable,
  Writable,
  Duplex,
  Transform,
  PassThrough,
  finished,
  pipeline,
  addAbortSignal,
  promises,
  compose: notImplemented('stream.compose'),
  destroy: (stream, error) => { stream?.destroy?.(error); },
  isDestroyed: (stream) => !!stream && !!(stream.destroyed || stream._readableState?.destroyed || stream._writableState?.destroyed),
  duplexPair,
  _isArrayBufferView: ArrayBuffer.isView,
  _isUint8Array: (value) => value instanceof Uint8Array,
  _uint8ArrayToBuffer: (chunk) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
  isReadable: (stream) => !!stream && !!stream._readableState && stream.readable,
  isWritable: (stream) => !!stream && !!stream._writableState && stream.writable,
  isErrored: (stream) => !!stream && !!(stream._readableState || stream._writableState || {}).errored,
  isDisturbed: (stream) => !!stream && !!stream._readableState && stream._readableState.consumed,
  getDefaultHighWaterMark: (objectMode) => (objectMode ? OBJECT_HIGH_WATER_MARK : defaultHighWaterMark),
  setDefaultHighWaterMark: (objectMode, value) => { if (!objectMode) defaultHighWaterMark = value; },
});

module.exports = Stream;
