// node:zlib — gzip, deflate, raw deflate and brotli in Node's sync, callback
// and stream forms, on the compression unit's codecs (`compressionNew`/
// `Write`/`End`: flate2, brotli): each step reads and writes at most 64 KiB,
// so the CPU limit can stop a large job between steps, and every output
// chunk is a Buffer charged to the Worker. Honoured options: `level`
// (deflate), `params` quality and lgwin (brotli), `maxOutputLength`; others
// (windowBits, memLevel, strategy, dictionary, ...) are accepted and
// ignored. `crc32` is `zlibCrc32`. Runs as function (host, internal,
// require, module, exports).

const { Buffer, kMaxLength } = require('node:buffer');
const { codedError, invalidArgType } = require('node:internal/errors');

const constants = Object.freeze({
  Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_BLOCK: 5,
  Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_ERRNO: -1, Z_STREAM_ERROR: -2, Z_DATA_ERROR: -3,
  Z_MEM_ERROR: -4, Z_BUF_ERROR: -5, Z_VERSION_ERROR: -6,
  Z_NO_COMPRESSION: 0, Z_BEST_SPEED: 1, Z_BEST_COMPRESSION: 9, Z_DEFAULT_COMPRESSION: -1,
  Z_FILTERED: 1, Z_HUFFMAN_ONLY: 2, Z_RLE: 3, Z_FIXED: 4, Z_DEFAULT_STRATEGY: 0,
  DEFLATE: 1, INFLATE: 2, GZIP: 3, GUNZIP: 4, DEFLATERAW: 5, INFLATERAW: 6, UNZIP: 7,
  Z_MIN_WINDOWBITS: 8, Z_MAX_WINDOWBITS: 15, Z_DEFAULT_WINDOWBITS: 15,
  Z_MIN_LEVEL: -1, Z_MAX_LEVEL: 9, Z_DEFAULT_LEVEL: -1, Z_DEFAULT_MEMLEVEL: 8,
  Z_DEFAULT_CHUNK: 16384,
  BROTLI_DECODE: 8, BROTLI_ENCODE: 9,
  BROTLI_OPERATION_PROCESS: 0, BROTLI_OPERATION_FLUSH: 1, BROTLI_OPERATION_FINISH: 2, BROTLI_OPERATION_EMIT_METADATA: 3,
  BROTLI_PARAM_MODE: 0, BROTLI_MODE_GENERIC: 0, BROTLI_MODE_TEXT: 1, BROTLI_MODE_FONT: 2, BROTLI_DEFAULT_MODE: 0,
  BROTLI_PARAM_QUALITY: 1, BROTLI_MIN_QUALITY: 0, BROTLI_MAX_QUALITY: 11, BROTLI_DEFAULT_QUALITY: 11,
  BROTLI_PARAM_LGWIN: 2, BROTLI_MIN_WINDOW_BITS: 10, BROTLI_MAX_WINDOW_BITS: 24, BROTLI_LARGE_MAX_WINDOW_BITS: 30,
  BROTLI_DEFAULT_WINDOW: 22, BROTLI_PARAM_LGBLOCK: 3, BROTLI_MIN_INPUT_BLOCK_BITS: 16, BROTLI_MAX_INPUT_BLOCK_BITS: 24,
  BROTLI_PARAM_DISABLE_LITERAL_CONTEXT_MODELING: 4, BROTLI_PARAM_SIZE_HINT: 5, BROTLI_PARAM_LARGE_WINDOW: 6,
  BROTLI_PARAM_NPOSTFIX: 7, BROTLI_PARAM_NDIRECT: 8,
  BROTLI_DECODER_RESULT_ERROR: 0, BROTLI_DECODER_RESULT_SUCCESS: 1, BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT: 2,
  BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: 3, BROTLI_DECODER_PARAM_DISABLE_RING_BUFFER_REALLOCATION: 0,
  BROTLI_DECODER_PARAM_LARGE_WINDOW: 1, BROTLI_DECODER_NO_ERROR: 0, BROTLI_DECODER_SUCCESS: 1,
  BROTLI_DECODER_NEEDS_MORE_INPUT: 2, BROTLI_DECODER_NEEDS_MORE_OUTPUT: 3,
});

function inputBytes(data) {
  if (typeof data === 'string') return Buffer.from(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw invalidArgType('buffer', 'of type string or an instance of Buffer, TypedArray, DataView or ArrayBuffer', data);
}

function dataError(message) {
  const error = codedError(Error, 'Z_DATA_ERROR', message);
  error.errno = constants.Z_DATA_ERROR;
  return error;
}

function tooLarge(max) {
  return codedError(RangeError, 'ERR_BUFFER_TOO_LARGE', `Cannot create a Buffer larger than ${max} bytes`);
}

function outOfRange(name, range, value) {
  return codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be >= ${range[0]} and <= ${range[1]}. Received ${value}`);
}

// A checked integer option in `range`; undefined when not given.
function intOption(value, name, range) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') throw invalidArgType(name, 'of type number', value);
  if (!Number.isInteger(value) || value < range[0] || value > range[1]) throw outOfRange(name, range, value);
  return value;
}

// [level, window] for compressionNew: zlib's level, or brotli's quality and
// lgwin from `params`.
function codecOptions(format, options) {
  if (options === undefined || options === null) return [undefined, undefined];
  if (format !== 'brotli') {
    const level = intOption(options.level, 'options.level', [-1, 9]);
    return [level === -1 ? undefined : level, undefined];
  }
  const params = options.params || {};
  return [
    intOption(params[constants.BROTLI_PARAM_QUALITY], 'options.params[key]', [0, 11]),
    intOption(params[constants.BROTLI_PARAM_LGWIN], 'options.params[key]', [10, 24]),
  ];
}

// A codec on one handle: `write` feeds input, `end` flushes; both hand each
// output chunk to `push`.
class Codec {
  constructor(kind, format, options) {
    const [level, window] = codecOptions(format, options);
    this.handle = host.compressionNew(kind, format, level, window);
  }

  write(view, push) {
    let at = 0;
    for (;;) {
      const [used, out] = this.call(() => host.compressionWrite(this.handle, view.subarray(at)));
      at += used;
      if (out !== null) push(out);
      else if (at >= view.length) return;
    }
  }

  end(push) {
    for (;;) {
      const out = this.call(() => host.compressionEnd(this.handle));
      if (out === null) break;
      push(out);
    }
    this.free();
  }

  call(step) {
    try {
      return step();
    } catch (e) {
      this.free();
      throw dataError(e.message);
    }
  }

  free() {
    if (this.handle !== null) host.codecFree(this.handle);
    this.handle = null;
  }
}

// `unzip` reads either header: gzip's magic bytes, else zlib's.
function formatOf(format, view) {
  if (format !== 'auto') return format;
  return view.length >= 2 && view[0] === 0x1f && view[1] === 0x8b ? 'gzip' : 'deflate';
}

function runSync(kind, format, data, options) {
  const view = inputBytes(data);
  const max = (options && options.maxOutputLength) || kMaxLength;
  const codec = new Codec(kind, formatOf(format, view), options);
  const chunks = [];
  let total = 0;
  const push = (out) => {
    total += out.length;
    if (total > max) { codec.free(); throw tooLarge(max); }
    chunks.push(out);
  };
  codec.write(view, push);
  codec.end(push);
  return Buffer.concat(chunks, total);
}

const KINDS = {
  gzip: ['compress', 'gzip'],
  gunzip: ['decompress', 'gzip'],
  deflate: ['compress', 'deflate'],
  inflate: ['decompress', 'deflate'],
  deflateRaw: ['compress', 'deflate-raw'],
  inflateRaw: ['decompress', 'deflate-raw'],
  unzip: ['decompress', 'auto'],
  brotliCompress: ['compress', 'brotli'],
  brotliDecompress: ['decompress', 'brotli'],
};

const zlib = { constants, codes: { Z_OK: 0, Z_STREAM_END: 1, Z_NEED_DICT: 2, Z_DATA_ERROR: -3 } };
Object.assign(zlib, constants);

for (const [name, [kind, format]] of Object.entries(KINDS)) {
  const sync = (data, options) => runSync(kind, format, data, options);
  zlib[`${name}Sync`] = sync;
  // The callback form answers in a later microtask.
  zlib[name] = (data, options, callback) => {
    if (typeof options === 'function') { callback = options; options = undefined; }
    if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
    let result;
    let failure = null;
    try { result = sync(data, options); } catch (e) { failure = e; }
    queueMicrotask(() => callback(failure, result));
  };
  const Class = name.charAt(0).toUpperCase() + name.slice(1);
  const create = (options) => new (streamClass(Class, kind, format))(options);
  zlib[`create${Class}`] = create;
  Object.defineProperty(zlib, Class, {
    enumerable: true,
    get: () => streamClass(Class, kind, format),
  });
}

// The stream forms are Transforms of node:stream, loaded when first used.
const classes = new Map();
function streamClass(name, kind, format) {
  let Class = classes.get(name);
  if (Class !== undefined) return Class;
  const { Transform } = require('node:stream');
  Class = class extends Transform {
    constructor(options) {
      super(options);
      this._options = options;
      this._codec = null;
      this._format = format;
      this.bytesWritten = 0;
    }

    _transform(chunk, encoding, callback) {
      try {
        const view = inputBytes(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
        this._codec ??= new Codec(kind, formatOf(this._format, view), this._options);
        this.bytesWritten += view.length;
        this._codec.write(view, (out) => this.push(Buffer.from(out.buffer, out.byteOffset, out.length)));
        callback();
      } catch (error) {
        callback(error);
      }
    }

    _flush(callback) {
      try {
        this._codec ??= new Codec(kind, this._format === 'auto' ? 'deflate' : this._format, this._options);
        this._codec.end((out) => this.push(Buffer.from(out.buffer, out.byteOffset, out.length)));
        callback();
      } catch (error) {
        callback(error);
      }
    }

    _destroy(error, callback) {
      if (this._codec !== null) this._codec.free();
      callback(error);
    }

    close(callback) {
      if (callback) this.once('close', callback);
      this.destroy();
    }
  };
  Object.defineProperty(Class, 'name', { value: name });
  classes.set(name, Class);
  return Class;
}

// crc32(data, value = 0): the CRC-32 of a string (UTF-8) or bytes.
zlib.crc32 = (data, value = 0) => {
  const view = typeof data === 'string' ? Buffer.from(data) : data;
  if (!ArrayBuffer.isView(view)) throw invalidArgType('data', 'of type string or an instance of Buffer, TypedArray, or DataView', data);
  if (typeof value !== 'number') throw invalidArgType('value', 'of type number', value);
  return host.zlibCrc32(view, value);
};

module.exports = zlib;
