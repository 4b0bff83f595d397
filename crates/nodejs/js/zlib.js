// node:zlib — gzip, deflate, raw deflate, brotli and Zstandard in Node's
// sync, callback and stream forms, on the compression unit's codecs
// (`compressionNew`/`Write`/`End`: flate2, brotli, libzstd): each step reads
// and writes at most 64 KiB, so the CPU limit can stop a large job between
// steps, and every output chunk is a Buffer charged to the Worker. Honoured
// options: `level` (deflate), `params` quality and lgwin (brotli),
// compressionLevel, checksumFlag and windowLogMax (zstd; the decoder's
// window is 8 MiB unless raised), `maxOutputLength`; others (windowBits,
// memLevel, strategy, dictionary, zstd's tuning parameters, ...) are
// accepted and ignored. `crc32` is `zlibCrc32`. Runs as function (host, internal,
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
  ZSTD_ENCODE: 10, ZSTD_DECODE: 11, ZSTD_COMPRESS: 10, ZSTD_DECOMPRESS: 11,
  ZSTD_e_continue: 0, ZSTD_e_flush: 1, ZSTD_e_end: 2,
  ZSTD_c_compressionLevel: 100, ZSTD_c_windowLog: 101, ZSTD_c_hashLog: 102, ZSTD_c_chainLog: 103,
  ZSTD_c_searchLog: 104, ZSTD_c_minMatch: 105, ZSTD_c_targetLength: 106, ZSTD_c_strategy: 107,
  ZSTD_c_enableLongDistanceMatching: 160, ZSTD_c_ldmHashLog: 161, ZSTD_c_ldmMinMatch: 162,
  ZSTD_c_ldmBucketSizeLog: 163, ZSTD_c_ldmHashRateLog: 164, ZSTD_c_contentSizeFlag: 200,
  ZSTD_c_checksumFlag: 201, ZSTD_c_dictIDFlag: 202, ZSTD_c_nbWorkers: 400, ZSTD_c_jobSize: 401,
  ZSTD_c_overlapLog: 402, ZSTD_d_windowLogMax: 100,
  ZSTD_fast: 1, ZSTD_dfast: 2, ZSTD_greedy: 3, ZSTD_lazy: 4, ZSTD_lazy2: 5, ZSTD_btlazy2: 6,
  ZSTD_btopt: 7, ZSTD_btultra: 8, ZSTD_btultra2: 9, ZSTD_CLEVEL_DEFAULT: 3,
  ZSTD_error_no_error: 0, ZSTD_error_GENERIC: 1, ZSTD_error_prefix_unknown: 10,
  ZSTD_error_version_unsupported: 12, ZSTD_error_frameParameter_unsupported: 14,
  ZSTD_error_frameParameter_windowTooLarge: 16, ZSTD_error_corruption_detected: 20,
  ZSTD_error_checksum_wrong: 22, ZSTD_error_literals_headerWrong: 24, ZSTD_error_dictionary_corrupted: 30,
  ZSTD_error_dictionary_wrong: 32, ZSTD_error_dictionaryCreation_failed: 34,
  ZSTD_error_parameter_unsupported: 40, ZSTD_error_parameter_combination_unsupported: 41,
  ZSTD_error_parameter_outOfBound: 42, ZSTD_error_tableLog_tooLarge: 44,
  ZSTD_error_maxSymbolValue_tooLarge: 46, ZSTD_error_maxSymbolValue_tooSmall: 48,
  ZSTD_error_stabilityCondition_notRespected: 50, ZSTD_error_stage_wrong: 60, ZSTD_error_init_missing: 62,
  ZSTD_error_memory_allocation: 64, ZSTD_error_workSpace_tooSmall: 66, ZSTD_error_dstSize_tooSmall: 70,
  ZSTD_error_srcSize_wrong: 72, ZSTD_error_dstBuffer_null: 74, ZSTD_error_noForwardProgress_destFull: 80,
  ZSTD_error_noForwardProgress_inputEmpty: 82,
});

// libzstd's error names (ZSTD_getErrorName) and their ZSTD_error_* codes.
const ZSTD_ERRORS = {
  'Unknown frame descriptor': 'ZSTD_error_prefix_unknown',
  'Version not supported': 'ZSTD_error_version_unsupported',
  'Unsupported frame parameter': 'ZSTD_error_frameParameter_unsupported',
  'Frame requires too much memory for decoding': 'ZSTD_error_frameParameter_windowTooLarge',
  'Data corruption detected': 'ZSTD_error_corruption_detected',
  'Restored data doesn\'t match checksum': 'ZSTD_error_checksum_wrong',
  'Header of Literals\' block doesn\'t respect format specification': 'ZSTD_error_literals_headerWrong',
};

function inputBytes(data) {
  if (typeof data === 'string') return Buffer.from(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  throw invalidArgType('buffer', 'of type string or an instance of Buffer, TypedArray, DataView or ArrayBuffer', data);
}

function dataError(message) {
  return zlibError('Z_DATA_ERROR', message);
}

function zlibError(code, message, errno = constants[code]) {
  const error = codedError(Error, code, message);
  error.errno = errno;
  return error;
}

// A codec's failure (`compressionWrite`/`End`'s TypeError) as Node reports
// it: input that ends early is Z_BUF_ERROR "unexpected end of file"; corrupt
// deflate data Z_DATA_ERROR with zlib's words ("incorrect header check",
// "invalid block type", "incorrect data check", ...); corrupt brotli data
// "Decompression failed" with brotli's error name and number.
function codecError(message) {
  if (/truncated/.test(message)) return zlibError('Z_BUF_ERROR', 'unexpected end of file');
  const what = message.replace(/^DecompressionStream: corrupt input \((.*)\)$/, '$1');
  const brotli = /^(ERROR_[A-Z0-9_]+) \((-\d+)\)$/.exec(what);
  if (brotli !== null) return zlibError(`ERR__${brotli[1]}`, 'Decompression failed', Number(brotli[2]));
  return dataError(what);
}

// A zstd failure as workerd words it ("Zstd decompression failed: ...",
// "unexpected end of file"), with the ZSTD_error_* code and number.
function zstdError(message) {
  const name = message.replace(/^DecompressionStream: corrupt input \((.*)\)$/, '$1');
  if (/truncated/.test(message)) return dataError('unexpected end of file');
  const code = ZSTD_ERRORS[name] || 'ZSTD_error_GENERIC';
  const error = codedError(Error, code, `Zstd decompression failed: ${name}`);
  error.errno = constants[code];
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

const ZSTD_C_PARAMS = new Set(Object.entries(constants).filter(([k]) => k.startsWith('ZSTD_c_')).map(([, v]) => v));

// [level, checksum] from a zstd encoder's `params`; [windowLogMax] from a
// decoder's. Unknown keys fail as in workerd; levels are clamped by libzstd.
function zstdOptions(kind, params) {
  if (kind === 'decompress') {
    const max = params[constants.ZSTD_d_windowLogMax];
    if (max !== undefined && !(Number.isInteger(max) && max >= 10 && max <= 31)) {
      throw new Error('Setting parameter failed: Parameter is out of bound');
    }
    return [undefined, max];
  }
  for (const key of Object.keys(params)) {
    if (!ZSTD_C_PARAMS.has(Number(key))) throw new Error(`Unsupported Zstd compression parameter: ${key}`);
  }
  const level = Number(params[constants.ZSTD_c_compressionLevel]);
  return [Number.isFinite(level) ? Math.trunc(level) : undefined, undefined, Boolean(params[constants.ZSTD_c_checksumFlag])];
}

// [level, window, checksum] for compressionNew: zlib's level, brotli's
// quality and lgwin from `params`, or zstd's (zstdOptions).
function codecOptions(kind, format, options) {
  if (options === undefined || options === null) return [undefined, undefined];
  if (format === 'zstd') return zstdOptions(kind, options.params || {});
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
  // `size`: the whole input's length, when known (the sync forms).
  constructor(kind, format, options, size) {
    const [level, window, checksum] = codecOptions(kind, format, options);
    this.format = format;
    this.handle = host.compressionNew(kind, format, level, window, checksum, size);
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
      throw this.format === 'zstd' ? zstdError(e.message) : codecError(e.message);
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
  const codec = new Codec(kind, formatOf(format, view), options, view.length);
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
  zstdCompress: ['compress', 'zstd'],
  zstdDecompress: ['decompress', 'zstd'],
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
