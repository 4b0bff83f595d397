// node:string_decoder — StringDecoder: decodes a stream of byte chunks into
// strings without splitting a character across chunks (utf8, utf16le,
// base64, base64url keep the incomplete end for the next write). Runs as
// function (host, internal, require, module, exports).

const { Buffer } = require('node:buffer');

function normalize(encoding) {
  const normal = String(encoding ?? 'utf8').toLowerCase();
  switch (normal) {
    case 'utf8': case 'utf-8': return 'utf8';
    case 'ucs2': case 'ucs-2': case 'utf16le': case 'utf-16le': return 'utf16le';
    case 'latin1': case 'binary': return 'latin1';
    case 'base64': case 'base64url': case 'hex': case 'ascii': return normal;
    default: {
      const error = new TypeError(`Unknown encoding: ${encoding}`);
      error.code = 'ERR_UNKNOWN_ENCODING';
      throw error;
    }
  }
}

// How many bytes at the end of `bytes` start a UTF-8 character that is not
// complete yet (judged by the lead byte alone, as Node does).
function incompleteUtf8(bytes) {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back];
    if ((byte & 0xc0) === 0x80) continue;
    const need = byte >= 0xf8 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

// How many bytes to keep for the next write.
function keep(encoding, bytes) {
  switch (encoding) {
    case 'utf8': return incompleteUtf8(bytes);
    case 'utf16le': {
      let rest = bytes.length % 2;
      if (rest === 0 && bytes.length >= 2) {
        const unit = bytes[bytes.length - 2] | (bytes[bytes.length - 1] << 8);
        // A high surrogate waits for its low half.
        if (unit >= 0xd800 && unit <= 0xdbff) rest = 2;
      }
      return rest;
    }
    case 'base64': case 'base64url': return bytes.length % 3;
    default: return 0;
  }
}

class StringDecoder {
  #pending = new Uint8Array(0);

  constructor(encoding) {
    this.encoding = normalize(encoding);
  }

  write(chunk) {
    if (typeof chunk === 'string') return chunk;
    if (!ArrayBuffer.isView(chunk)) {
      const error = new TypeError('The "buf" argument must be an instance of Buffer, TypedArray, or DataView.');
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    const input = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const bytes = this.#pending.length === 0 ? input : Buffer.concat([this.#pending, input]);
    const kept = keep(this.encoding, bytes);
    this.#pending = bytes.slice(bytes.length - kept);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length - kept).toString(this.encoding);
  }

  end(chunk) {
    let out = chunk === undefined ? '' : this.write(chunk);
    const rest = this.#pending;
    this.#pending = new Uint8Array(0);
    if (rest.length === 0) return out;
    // A character cut short reads as toString reads it: U+FFFD for each
    // broken piece (utf8), the lone half (utf16le).
    out += Buffer.from(rest).toString(this.encoding);
    return out;
  }

  text(chunk, offset) {
    return this.write(chunk.subarray(offset));
  }

  get lastNeed() {
    return this.#pending.length;
  }
}

module.exports = { StringDecoder };
