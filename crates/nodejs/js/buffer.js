// node:buffer — Buffer, as Node (and workerd) have it: a Uint8Array whose
// prototype carries Node's methods. Encodings: utf8 through the encoding
// unit's host functions, hex/base64/base64url/latin1/ascii/utf16le through
// host.bufferFromString / host.bufferToString (src/host/node/buffer.rs).
// Runs as function (host, internal, require, module, exports).

const kMaxLength = 2 ** 32;
const kStringMaxLength = (1 << 29) - 24;

function normalizeEncoding(encoding) {
  if (encoding === undefined || encoding === null || encoding === '') return 'utf8';
  switch (String(encoding).toLowerCase()) {
    case 'utf8': case 'utf-8': return 'utf8';
    case 'hex': return 'hex';
    case 'base64': return 'base64';
    case 'base64url': return 'base64url';
    case 'latin1': case 'binary': return 'latin1';
    case 'ascii': return 'ascii';
    case 'ucs2': case 'ucs-2': case 'utf16le': case 'utf-16le': return 'utf16le';
    default: return undefined;
  }
}

function encodingOf(encoding) {
  const normal = normalizeEncoding(encoding);
  if (normal === undefined) {
    const error = new TypeError(`Unknown encoding: ${encoding}`);
    error.code = 'ERR_UNKNOWN_ENCODING';
    throw error;
  }
  return normal;
}

const { invalidArgType: invalidArg } = require('node:internal/errors');

// An integer number in [min, max], as Node's validateOffset has it.
function validateOffset(value, name, min = 0, max = kMaxLength) {
  if (typeof value !== 'number') throw invalidArg(name, 'of type number', value);
  if (!Number.isInteger(value)) throw outOfRange(name, 'an integer', value);
  if (value < min || value > max) throw outOfRange(name, `>= ${min} && <= ${max}`, value);
  return value;
}

function outOfBounds(name) {
  const error = new RangeError(name ? `"${name}" is outside of buffer bounds` : 'Attempt to access memory outside buffer bounds');
  error.code = 'ERR_BUFFER_OUT_OF_BOUNDS';
  return error;
}

function outOfRange(name, range, value) {
  const error = new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${value}`);
  error.code = 'ERR_OUT_OF_RANGE';
  return error;
}

// The bytes of `string` in `encoding` (normalised), as a Uint8Array.
function bytesOf(string, encoding) {
  switch (encoding) {
    case 'utf8': return host.utf8Encode(string);
    case 'latin1': case 'ascii': {
      const out = new Uint8Array(string.length);
      for (let i = 0; i < string.length; i++) out[i] = string.charCodeAt(i) & 0xff;
      return out;
    }
    case 'utf16le': {
      const out = new Uint8Array(string.length * 2);
      for (let i = 0; i < string.length; i++) {
        const unit = string.charCodeAt(i);
        out[i * 2] = unit & 0xff;
        out[i * 2 + 1] = unit >> 8;
      }
      return out;
    }
    default: return host.bufferFromString(string, encoding);
  }
}

function stringOf(view, encoding) {
  if (view.length === 0) return '';
  if (encoding === 'utf8') return host.utf8Decode(view, false, true);
  return host.bufferToString(view, encoding);
}

class FastBuffer extends Uint8Array {
  // eslint-disable-next-line no-useless-constructor
  constructor(bufferOrLength, byteOffset, length) { super(bufferOrLength, byteOffset, length); }
}

// The deprecated constructor: Buffer(n) and new Buffer(x) still work.
function Buffer(arg, encodingOrOffset, length) {
  if (typeof arg === 'number') {
    if (typeof encodingOrOffset === 'string') {
      throw invalidArg('string', 'of type string', arg);
    }
    return Buffer.alloc(arg);
  }
  return Buffer.from(arg, encodingOrOffset, length);
}
Buffer.prototype = FastBuffer.prototype;
Object.defineProperty(FastBuffer.prototype, 'constructor', { value: Buffer, writable: true, configurable: true });
Object.setPrototypeOf(Buffer, Uint8Array);

function wrap(view) {
  return new FastBuffer(view.buffer, view.byteOffset, view.byteLength);
}

function checkSize(size) {
  if (typeof size !== 'number') throw invalidArg('size', 'of type number', size);
  if (!(size >= 0 && size <= kMaxLength)) throw outOfRange('size', `>= 0 && <= ${kMaxLength}`, size);
}

Buffer.poolSize = 8192;

Buffer.from = function from(value, encodingOrOffset, length) {
  if (typeof value === 'string') return wrap(bytesOf(value, encodingOf(encodingOrOffset)));
  if (typeof value === 'object' && value !== null) {
    if (isAnyArrayBuffer(value)) {
      return fromArrayBuffer(value, encodingOrOffset, length);
    }
    if (ArrayBuffer.isView(value)) {
      const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
      if (value instanceof Uint8Array) return new FastBuffer(bytes);
      // Other typed arrays: element by element, as Node does.
      const out = new FastBuffer(value.length);
      for (let i = 0; i < value.length; i++) out[i] = Number(value[i]) & 0xff;
      return out;
    }
    const primitive = value.valueOf?.();
    if (primitive != null && primitive !== value) return Buffer.from(primitive, encodingOrOffset, length);
    if (typeof value[Symbol.toPrimitive] === 'function') {
      return Buffer.from(value[Symbol.toPrimitive]('string'), encodingOrOffset, length);
    }
    if (value.type === 'Buffer' && Array.isArray(value.data)) return fromArrayLike(value.data);
    if (typeof value.length === 'number' || isAnyArrayBuffer(value.buffer)) return fromArrayLike(value);
  }
  throw invalidArg('first argument', 'of type string or an instance of Buffer, ArrayBuffer, or Array or an Array-like Object', value);
};

// An ArrayBuffer (of any realm) or a SharedArrayBuffer.
function isAnyArrayBuffer(value) {
  if (value instanceof ArrayBuffer || value instanceof internal.NativeArrayBuffer) return true;
  const tag = Object.prototype.toString.call(value);
  return tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]';
}

// A view of `buffer`: a byteOffset or length that is not a number counts as 0.
function fromArrayBuffer(buffer, byteOffset, length) {
  const offset = byteOffset === undefined ? 0 : Number(byteOffset) || 0;
  const room = buffer.byteLength - offset;
  if (room < 0 || offset === Infinity) throw outOfBounds('offset');
  let len = room;
  if (length !== undefined) {
    len = Number(length);
    if (len > room) throw outOfBounds('length');
    if (!(len > 0)) len = 0;
  }
  return new FastBuffer(buffer, offset, len);
}

function fromArrayLike(list) {
  const out = new FastBuffer(list.length >>> 0);
  for (let i = 0; i < out.length; i++) out[i] = Number(list[i]) & 0xff;
  return out;
}

Buffer.of = function of(...items) { return fromArrayLike(items); };

Buffer.alloc = function alloc(size, fill, encoding) {
  checkSize(size);
  const out = new FastBuffer(size);
  if (fill !== undefined && fill !== 0 && size > 0) out.fill(fill, 0, size, encoding);
  return out;
};
Buffer.allocUnsafe = function allocUnsafe(size) { checkSize(size); return new FastBuffer(size); };
Buffer.allocUnsafeSlow = Buffer.allocUnsafe;

Buffer.isBuffer = function isBuffer(value) { return value instanceof Buffer; };
Buffer.isEncoding = function isEncoding(encoding) {
  return typeof encoding === 'string' && encoding.length !== 0 && normalizeEncoding(encoding) !== undefined;
};

Buffer.byteLength = function byteLength(value, encoding) {
  if (typeof value !== 'string') {
    if (ArrayBuffer.isView(value) || isAnyArrayBuffer(value)) return value.byteLength;
    throw invalidArg('string', 'of type string or an instance of Buffer or ArrayBuffer', value);
  }
  const normal = normalizeEncoding(encoding) ?? 'utf8';
  switch (normal) {
    case 'latin1': case 'ascii': return value.length;
    case 'utf16le': return value.length * 2;
    default: return bytesOf(value, normal).length;
  }
};

Buffer.compare = function compare(a, b) {
  if (!(a instanceof Uint8Array)) throw invalidArg('buf1', 'an instance of Buffer or Uint8Array', a);
  if (!(b instanceof Uint8Array)) throw invalidArg('buf2', 'an instance of Buffer or Uint8Array', b);
  return compareBytes(a, b);
};

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

Buffer.concat = function concat(list, totalLength) {
  if (!Array.isArray(list)) throw invalidArg('list', 'an instance of Array', list);
  if (totalLength !== undefined) validateOffset(totalLength, 'length');
  if (totalLength === undefined) {
    totalLength = 0;
    for (let i = 0; i < list.length; i++) {
      if (!(list[i] instanceof Uint8Array)) throw invalidArg(`list[${i}]`, 'an instance of Buffer or Uint8Array', list[i]);
      totalLength += list[i].length;
    }
  }
  const out = Buffer.alloc(totalLength);
  let at = 0;
  for (let i = 0; i < list.length && at < totalLength; i++) {
    const item = list[i];
    if (!(item instanceof Uint8Array)) throw invalidArg(`list[${i}]`, 'an instance of Buffer or Uint8Array', item);
    const part = item.length > totalLength - at ? item.subarray(0, totalLength - at) : item;
    out.set(part, at);
    at += part.length;
  }
  return out;
};

const proto = Buffer.prototype;

proto.toString = function toString(encoding, start, end) {
  if (arguments.length === 0) return stringOf(this, 'utf8');
  const length = this.length;
  if (start <= 0) start = 0;
  else if (start >= length) return '';
  else start = Math.trunc(start) || 0;
  if (end === undefined || end > length) end = length;
  else end = Math.trunc(end) || 0;
  if (end <= start) return '';
  // An encoding that is given is named by its string form: null is 'null'.
  const normal = encoding === undefined ? 'utf8' : normalizeEncoding(`${encoding}`);
  if (normal === undefined || `${encoding}` === '') {
    const error = new TypeError(`Unknown encoding: ${encoding}`);
    error.code = 'ERR_UNKNOWN_ENCODING';
    throw error;
  }
  return stringOf(this.subarray(start, end), normal);
};
proto.toLocaleString = proto.toString;

proto.toJSON = function toJSON() {
  return { type: 'Buffer', data: Array.from(this) };
};

proto.equals = function equals(other) {
  if (!(other instanceof Uint8Array)) throw invalidArg('otherBuffer', 'an instance of Buffer or Uint8Array', other);
  return this === other || compareBytes(this, other) === 0;
};

proto.compare = function compare(target, targetStart, targetEnd, sourceStart, sourceEnd) {
  if (!(target instanceof Uint8Array)) throw invalidArg('target', 'an instance of Buffer or Uint8Array', target);
  const ts = targetStart === undefined ? 0 : validateOffset(targetStart, 'targetStart');
  const te = targetEnd === undefined ? target.length : validateOffset(targetEnd, 'targetEnd', 0, target.length);
  const ss = sourceStart === undefined ? 0 : validateOffset(sourceStart, 'sourceStart');
  const se = sourceEnd === undefined ? this.length : validateOffset(sourceEnd, 'sourceEnd', 0, this.length);
  if (ss >= se) return ts >= te ? 0 : -1;
  if (ts >= te) return 1;
  return compareBytes(this.subarray(ss, se), target.subarray(ts, te));
};

// slice shares memory with the original, as subarray does (Node's, not
// TypedArray's).
proto.subarray = function subarray(start, end) {
  const view = Uint8Array.prototype.subarray.call(this, start, end);
  return new FastBuffer(view.buffer, view.byteOffset, view.byteLength);
};
proto.slice = proto.subarray;

proto.write = function write(string, offset, length, encoding) {
  if (typeof string !== 'string') throw invalidArg('argument', 'of type string', string);
  if (typeof offset === 'string' && length === undefined) { encoding = offset; offset = 0; }
  offset = offset === undefined ? 0 : validateOffset(offset, 'offset', 0, this.length);
  const room = this.length - offset;
  if (typeof length === 'string') { encoding = length; length = undefined; }
  length = length === undefined ? room : Math.min(room, validateOffset(length, 'length', 0, this.length));
  const normal = encodingOf(encoding);
  let bytes = bytesOf(string, normal);
  if (bytes.length > length) {
    bytes = bytes.subarray(0, length);
    // Never half a UTF-8 character (nor half a UTF-16 code unit).
    if (normal === 'utf8') {
      let end = bytes.length;
      let lead = end - 1;
      while (lead > 0 && (bytes[lead] & 0xc0) === 0x80) lead--;
      const need = bytes[lead] >= 0xf0 ? 4 : bytes[lead] >= 0xe0 ? 3 : bytes[lead] >= 0xc0 ? 2 : 1;
      if (lead + need > end) end = lead;
      bytes = bytes.subarray(0, end);
    } else if (normal === 'utf16le') {
      bytes = bytes.subarray(0, bytes.length & ~1);
    }
  }
  this.set(bytes, offset);
  return bytes.length;
};

proto.fill = function fill(value, offset, end, encoding) {
  if (typeof offset === 'string') { encoding = offset; offset = 0; end = this.length; }
  else if (typeof end === 'string') { encoding = end; end = this.length; }
  if (typeof value === 'string' && encoding !== undefined && typeof encoding !== 'string') {
    throw invalidArg('encoding', 'of type string', encoding);
  }
  offset = offset === undefined ? 0 : validateOffset(offset, 'offset');
  end = end === undefined ? this.length : validateOffset(end, 'end', 0, this.length);
  if (end <= offset) return this;
  if (typeof value === 'number' || typeof value === 'boolean') {
    Uint8Array.prototype.fill.call(this, Number(value) & 0xff, offset, end);
    return this;
  }
  const bytes = typeof value === 'string' ? bytesOf(value, encodingOf(encoding)) : value;
  if (bytes.length === 0) {
    if (typeof value === 'string' && value.length > 0) {
      const error = new TypeError(`The argument 'value' is invalid. Received '${value}'`);
      error.code = 'ERR_INVALID_ARG_VALUE';
      throw error;
    }
    Uint8Array.prototype.fill.call(this, 0, offset, end);
    return this;
  }
  for (let i = offset; i < end; i++) this[i] = bytes[(i - offset) % bytes.length];
  return this;
};

// A position for copy(): a number is truncated, anything else counts as 0.
function position(value, name) {
  const n = Math.trunc(Number(value)) || 0;
  if (n < 0) throw outOfRange(name, '>= 0', value);
  return n;
}

proto.copy = function copy(target, targetStart, sourceStart, sourceEnd) {
  if (!(target instanceof Uint8Array)) throw invalidArg('target', 'an instance of Buffer or Uint8Array', target);
  const at = targetStart === undefined ? 0 : position(targetStart, 'targetStart');
  // A negative start is named as workerd names it; one past the end as Node 20.
  const from = sourceStart === undefined ? 0 : position(sourceStart, 'sourceStart');
  if (from > this.length) throw outOfRange('sourceStart', `>= 0 && <= ${this.length}`, sourceStart);
  const to = Math.min(sourceEnd === undefined ? this.length : position(sourceEnd, 'sourceEnd'), this.length);
  const room = target.byteLength - at;
  if (room <= 0 || from >= to) return 0;
  const n = Math.min(to - from, room);
  Uint8Array.prototype.set.call(target, this.subarray(from, from + n), at);
  return n;
};

function needle(value, encoding) {
  if (typeof value === 'number') return Uint8Array.of(value & 0xff);
  if (typeof value === 'string') return bytesOf(value, encodingOf(encoding));
  if (value instanceof Uint8Array) return value;
  throw invalidArg('value', 'one of type number or string or an instance of Buffer or Uint8Array', value);
}

// Where `bytes` starts in `buffer` searching from `from` by `step`
// (backwards when `step` < 0), or -1. A utf16le search moves by whole
// 16-bit units, as Node's does.
function search(buffer, bytes, from, step) {
  outer: for (let i = from; i >= 0 && i <= buffer.length - bytes.length; i += step) {
    for (let j = 0; j < bytes.length; j++) if (buffer[i + j] !== bytes[j]) continue outer;
    return i;
  }
  return -1;
}

// The needle and the step of a search: a utf16le search of a string or
// Buffer compares whole units (an odd last byte is not one).
function searchFor(value, encoding) {
  const bytes = needle(value, encoding);
  const wide = typeof value !== 'number' && encoding !== undefined && normalizeEncoding(encoding) === 'utf16le';
  return wide ? [bytes.subarray(0, bytes.length & ~1), 2] : [bytes, 1];
}

proto.indexOf = function indexOf(value, byteOffset, encoding) {
  if (typeof byteOffset === 'string') { encoding = byteOffset; byteOffset = 0; }
  let from = byteOffset === undefined ? 0 : Math.trunc(Number(byteOffset)) || 0;
  if (from < 0) from = Math.max(0, this.length + from);
  const [bytes, step] = searchFor(value, encoding);
  if (step === 2 && (this.length < 2 || bytes.length < 2)) return -1;
  if (bytes.length === 0) return Math.min(from, this.length);
  return search(this, bytes, from - (from % step), step);
};

proto.lastIndexOf = function lastIndexOf(value, byteOffset, encoding) {
  if (typeof byteOffset === 'string') { encoding = byteOffset; byteOffset = undefined; }
  const [bytes, step] = searchFor(value, encoding);
  if (step === 2 && (this.length < 2 || bytes.length < 2)) return -1;
  let from = byteOffset === undefined ? this.length - bytes.length : Math.trunc(Number(byteOffset)) || 0;
  if (from < 0) from = this.length + from;
  from = Math.min(from, this.length - bytes.length);
  return search(this, bytes, from - (from % step), -step);
};

proto.includes = function includes(value, byteOffset, encoding) {
  return this.indexOf(value, byteOffset, encoding) !== -1;
};

// swap16/32/64: reverse the bytes of each 2-, 4- or 8-byte group in place.
for (const bits of [16, 32, 64]) {
  const size = bits / 8;
  proto['swap' + bits] = {
    ['swap' + bits]() {
      if (this.length % size !== 0) {
        const error = new RangeError(`Buffer size must be a multiple of ${bits}-bits`);
        error.code = 'ERR_INVALID_BUFFER_SIZE';
        throw error;
      }
      for (let i = 0; i < this.length; i += size) {
        for (let a = i, b = i + size - 1; a < b; a++, b--) { const t = this[a]; this[a] = this[b]; this[b] = t; }
      }
      return this;
    },
  }['swap' + bits];
}

// buf.parent and buf.offset, Node's old names for buffer and byteOffset.
for (const [name, of] of [['parent', 'buffer'], ['offset', 'byteOffset']]) {
  Object.defineProperty(proto, name, {
    get() { return this instanceof Buffer ? this[of] : undefined; },
    enumerable: true,
    configurable: true,
  });
}

// Numbers: read/write through a DataView over the same bytes.
function view(buffer) {
  return new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function checkOffset(buffer, offset, size) {
  if (offset === undefined) offset = 0;
  if (typeof offset !== 'number') throw invalidArg('offset', 'of type number', offset);
  const last = buffer.length - size;
  if (Math.floor(offset) !== offset) throw outOfRange('offset', 'an integer', offset);
  if (offset < 0 || offset > last) {
    if (last < 0) throw outOfBounds();
    throw outOfRange('offset', `>= 0 and <= ${last}`, offset);
  }
  return offset;
}

// A BigInt as Node's range errors show it: past 2 ** 32 with '_' between
// groups of three digits ('9_223_372_036_854_775_808n').
function bigintShown(value) {
  let digits = String(value < 0n ? -value : value);
  if (value > 2n ** 32n || value < -(2n ** 32n)) {
    let grouped = '';
    while (digits.length > 3) { grouped = `_${digits.slice(-3)}${grouped}`; digits = digits.slice(0, -3); }
    digits += grouped;
  }
  return `${value < 0n ? '-' : ''}${digits}n`;
}

const BIG_RANGES = {
  BigUint64: [0n, 2n ** 64n - 1n, '0n', '2n ** 64n'],
  BigInt64: [-(2n ** 63n), 2n ** 63n - 1n, '-(2n ** 63n)', '2n ** 63n'],
};

function checkBigInt(kind, value) {
  if (typeof value !== 'bigint') throw invalidArg('value', 'of type bigint', value);
  const [min, max, low, high] = BIG_RANGES[kind];
  if (value < min || value > max) throw outOfRange('value', `>= ${low} and < ${high}`, bigintShown(value));
}

const NUMBERS = [
  // [name, size, DataView getter/setter suffix, little-endian]
  ['UInt8', 1, 'Uint8'], ['Int8', 1, 'Int8'],
  ['UInt16LE', 2, 'Uint16', true], ['UInt16BE', 2, 'Uint16', false],
  ['Int16LE', 2, 'Int16', true], ['Int16BE', 2, 'Int16', false],
  ['UInt32LE', 4, 'Uint32', true], ['UInt32BE', 4, 'Uint32', false],
  ['Int32LE', 4, 'Int32', true], ['Int32BE', 4, 'Int32', false],
  ['FloatLE', 4, 'Float32', true], ['FloatBE', 4, 'Float32', false],
  ['DoubleLE', 8, 'Float64', true], ['DoubleBE', 8, 'Float64', false],
  ['BigUInt64LE', 8, 'BigUint64', true], ['BigUInt64BE', 8, 'BigUint64', false],
  ['BigInt64LE', 8, 'BigInt64', true], ['BigInt64BE', 8, 'BigInt64', false],
];

const RANGES = {
  Uint8: [0, 0xff], Int8: [-0x80, 0x7f], Uint16: [0, 0xffff], Int16: [-0x8000, 0x7fff],
  Uint32: [0, 0xffffffff], Int32: [-0x80000000, 0x7fffffff],
};

for (const [name, size, kind, little] of NUMBERS) {
  const get = DataView.prototype['get' + kind];
  const set = DataView.prototype['set' + kind];
  const read = function (offset) {
    offset = checkOffset(this, offset, size);
    return get.call(view(this), offset, little);
  };
  const write = function (value, offset) {
    offset = checkOffset(this, offset, size);
    const range = RANGES[kind];
    if (range && (typeof value !== 'number' || value < range[0] || value > range[1])) {
      throw outOfRange('value', `>= ${range[0]} and <= ${range[1]}`, value);
    }
    if (kind in BIG_RANGES) checkBigInt(kind, value);
    set.call(view(this), offset, value, little);
    return offset + size;
  };
  proto['read' + name] = read;
  proto['write' + name] = write;
  if (name.includes('UInt')) {
    proto['read' + name.replace('UInt', 'Uint')] = read;
    proto['write' + name.replace('UInt', 'Uint')] = write;
  }
}

// readUIntLE(offset, byteLength) and friends, 1 to 6 bytes.
function checkByteLength(byteLength) {
  if (typeof byteLength !== 'number') throw invalidArg('byteLength', 'of type number', byteLength);
  if (Math.floor(byteLength) !== byteLength) throw outOfRange('byteLength', 'an integer', byteLength);
  if (byteLength < 1 || byteLength > 6) throw outOfRange('byteLength', '>= 1 and <= 6', byteLength);
}

proto.readUIntLE = function readUIntLE(offset, byteLength) {
  checkByteLength(byteLength);
  offset = checkOffset(this, offset, byteLength);
  let value = 0;
  for (let i = byteLength - 1; i >= 0; i--) value = value * 256 + this[offset + i];
  return value;
};
proto.readUIntBE = function readUIntBE(offset, byteLength) {
  checkByteLength(byteLength);
  offset = checkOffset(this, offset, byteLength);
  let value = 0;
  for (let i = 0; i < byteLength; i++) value = value * 256 + this[offset + i];
  return value;
};
proto.readIntLE = function readIntLE(offset, byteLength) {
  const value = this.readUIntLE(offset, byteLength);
  const limit = 2 ** (8 * byteLength - 1);
  return value >= limit ? value - limit * 2 : value;
};
proto.readIntBE = function readIntBE(offset, byteLength) {
  const value = this.readUIntBE(offset, byteLength);
  const limit = 2 ** (8 * byteLength - 1);
  return value >= limit ? value - limit * 2 : value;
};
proto.writeUIntLE = function writeUIntLE(value, offset, byteLength) {
  checkByteLength(byteLength);
  offset = checkOffset(this, offset, byteLength);
  let rest = value;
  for (let i = 0; i < byteLength; i++) { this[offset + i] = rest % 256; rest = Math.floor(rest / 256); }
  return offset + byteLength;
};
proto.writeUIntBE = function writeUIntBE(value, offset, byteLength) {
  checkByteLength(byteLength);
  offset = checkOffset(this, offset, byteLength);
  let rest = value;
  for (let i = byteLength - 1; i >= 0; i--) { this[offset + i] = rest % 256; rest = Math.floor(rest / 256); }
  return offset + byteLength;
};
proto.writeIntLE = function writeIntLE(value, offset, byteLength) {
  return this.writeUIntLE(value < 0 ? value + 2 ** (8 * byteLength) : value, offset, byteLength);
};
proto.writeIntBE = function writeIntBE(value, offset, byteLength) {
  return this.writeUIntBE(value < 0 ? value + 2 ** (8 * byteLength) : value, offset, byteLength);
};
proto.readUintLE = proto.readUIntLE;
proto.readUintBE = proto.readUIntBE;
proto.writeUintLE = proto.writeUIntLE;
proto.writeUintBE = proto.writeUIntBE;

for (const encoding of ['utf8', 'hex', 'base64', 'base64url', 'latin1', 'ascii', 'utf16le', 'ucs2']) {
  proto[encoding + 'Slice'] = function (start, end) { return this.toString(encoding, start, end); };
  proto[encoding + 'Write'] = function (string, offset, length) { return this.write(string, offset, length, encoding); };
}

// util.inspect(buf): at most buffer.INSPECT_MAX_BYTES bytes, as Node shows them.
proto[Symbol.for('nodejs.util.inspect.custom')] = function inspect() {
  const max = module.exports.INSPECT_MAX_BYTES;
  const shown = Array.from(this.subarray(0, max), (b) => b.toString(16).padStart(2, '0')).join(' ');
  const rest = this.length - max;
  const more = rest > 0 ? ` ... ${rest} more byte${rest > 1 ? 's' : ''}` : '';
  return `<${this.constructor?.name ?? 'Buffer'} ${shown}${more}>`;
};

function SlowBuffer(size) { return Buffer.allocUnsafeSlow(size); }

// The bytes of an ArrayBuffer or view, for isUtf8 and isAscii; `detached`
// says whether its ArrayBuffer was transferred away.
function bytesOfInput(input) {
  const isBuffer = isAnyArrayBuffer(input);
  if (!isBuffer && !ArrayBuffer.isView(input)) {
    throw invalidArg('input', 'an instance of ArrayBuffer, Buffer, or TypedArray', input);
  }
  const buffer = isBuffer ? input : input.buffer;
  if (buffer.detached) return { bytes: new Uint8Array(0), detached: true };
  const bytes = isBuffer ? new Uint8Array(input) : new Uint8Array(buffer, input.byteOffset, input.byteLength);
  return { bytes, detached: false };
}

function isUtf8(input) {
  const { bytes, detached } = bytesOfInput(input);
  if (detached) {
    const error = new Error('Cannot validate on a detached buffer');
    error.code = 'ERR_INVALID_STATE';
    throw error;
  }
  try { host.utf8Decode(bytes, true, true); return true; } catch { return false; }
}

function isAscii(input) {
  const { bytes } = bytesOfInput(input);
  for (let i = 0; i < bytes.length; i++) if (bytes[i] > 0x7f) return false;
  return true;
}

// The encodings transcode converts between, as Node's (ICU's) does; a
// character the target cannot hold becomes '?'.
const TRANSCODABLE = ['ascii', 'latin1', 'utf16le', 'utf8'];

function transcode(source, fromEncoding, toEncoding) {
  if (!(source instanceof Uint8Array)) {
    const error = new TypeError('The "source" argument must be an instance of Buffer or Uint8Array.');
    error.code = 'ERR_INVALID_ARG_TYPE';
    throw error;
  }
  const from = normalizeEncoding(fromEncoding);
  const to = normalizeEncoding(toEncoding);
  if (!TRANSCODABLE.includes(from) || !TRANSCODABLE.includes(to)) {
    const error = new Error('Unable to transcode Buffer [U_ILLEGAL_ARGUMENT_ERROR]');
    error.code = 'U_ILLEGAL_ARGUMENT_ERROR';
    error.errno = 1;
    throw error;
  }
  let text = Buffer.from(source.buffer, source.byteOffset, source.byteLength).toString(from);
  if (to === 'ascii') text = text.replace(/[^\0-\x7f]/gu, '?');
  if (to === 'latin1') text = text.replace(/[^\0-\xff]/gu, '?');
  return Buffer.from(text, to);
}

let inspectMaxBytes = 50;

module.exports = {
  Buffer,
  SlowBuffer,
  kMaxLength,
  kStringMaxLength,
  constants: { MAX_LENGTH: kMaxLength, MAX_STRING_LENGTH: kStringMaxLength },
  atob: globalThis.atob,
  btoa: globalThis.btoa,
  Blob: globalThis.Blob,
  File: globalThis.File,
  isUtf8,
  isAscii,
  transcode,
  resolveObjectURL: () => undefined,
};

// buffer.INSPECT_MAX_BYTES: a number >= 0, checked when set.
Object.defineProperty(module.exports, 'INSPECT_MAX_BYTES', {
  get() { return inspectMaxBytes; },
  set(value) {
    if (typeof value !== 'number') throw invalidArg('INSPECT_MAX_BYTES', 'of type number', value);
    if (!(value >= 0)) throw outOfRange('INSPECT_MAX_BYTES', '>= 0', value);
    inspectMaxBytes = value;
  },
  enumerable: true,
  configurable: true,
});
