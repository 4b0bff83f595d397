// node:crypto's createCipheriv/createDecipheriv (and the Cipheriv and
// Decipheriv classes) on AWS-LC's ciphers (`nodeCipher*`, the ones workerd
// uses): AES in CBC, CTR, ECB, OFB, CFB, CFB8, GCM and CCM modes,
// ChaCha20-Poly1305 and DES/3DES, streamed as Node streams them: `update()`
// answers the bytes that are ready, `final()` the rest, then checks padding
// or the tag. A Cipheriv is a node:stream Transform too, made when a stream
// method is first used (`lazyTransform`, which Hash and Hmac share). Part of
// the `node:crypto` unit, hidden from Workers. Runs as function (host,
// internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType } = require('node:internal/errors');

// Larger inputs are ciphered in steps, so the CPU limit can stop between them.
const STEP = 1 << 20;
// Node's other names for some ciphers.
const ALIASES = {
  aes128: 'aes-128-cbc', aes192: 'aes-192-cbc', aes256: 'aes-256-cbc',
  'id-aes128-gcm': 'aes-128-gcm', 'id-aes192-gcm': 'aes-192-gcm', 'id-aes256-gcm': 'aes-256-gcm',
  des: 'des-cbc', des3: 'des-ede3-cbc', 'des-ede3-ecb': 'des-ede3', 'des-ede-ecb': 'des-ede',
};
const CIPHERS = Object.freeze(host.nodeCipherNames());
// The tag lengths Node takes for GCM and for CCM.
const GCM_TAGS = [4, 8, 12, 13, 14, 15, 16];
const CCM_TAGS = [4, 6, 8, 10, 12, 14, 16];

// Whether `length` is a tag length the AEAD cipher `name` takes.
function tagLengthOk(name, length) {
  if (name.endsWith('-gcm')) return GCM_TAGS.includes(length);
  if (name.endsWith('-ccm')) return CCM_TAGS.includes(length);
  return Number.isInteger(length) && length >= 1 && length <= 16;
}

function unsupportedState() {
  return new Error('Trying to add data in unsupported state');
}

function bytesOf(value, name, encoding) {
  if (typeof value === 'string') return Buffer.from(value, encoding);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value && typeof value.export === 'function') return new Uint8Array(value.export());
  throw invalidArgType(name, 'of type string or an instance of Buffer, TypedArray, DataView or ArrayBuffer', value);
}

function invalidState(operation) {
  return codedError(Error, 'ERR_CRYPTO_INVALID_STATE', `Invalid state for operation ${operation}`);
}

function invalidTag(length) {
  return codedError(TypeError, 'ERR_CRYPTO_INVALID_AUTH_TAG', `Invalid authentication tag length: ${length}`);
}

function authFailed() {
  return new Error('Unsupported state or unable to authenticate data');
}

// AWS-LC's EVP_CIPH_*_MODE, by number, as getCipherInfo names them.
const MODES = ['stream', 'ecb', 'cbc', 'cfb', 'ofb', 'ctr', 'gcm', 'xts', 'ccm', 'ocb', 'wrap'];

// What a cipher's `ivLength` may be asked as: CCM's 7–13, GCM's any, the
// others' own.
function ivLengthOk(mode, own, asked) {
  if (mode === 'ccm') return asked >= 7 && asked <= 13;
  if (mode === 'gcm') return asked >= 1;
  return asked === own;
}

function int32Option(options, name) {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') throw invalidArgType(`options.${name}`, 'of type number', value);
  if (!Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1) {
    throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "options.${name}" is out of range. It must be an integer. Received ${value}`);
  }
  return value;
}

// getCipherInfo(nameOrNid[, { keyLength, ivLength }]) → Node 20's
// { mode, name, nid, blockSize, ivLength, keyLength } (blockSize left out
// for stream ciphers, ivLength when 0), undefined for a cipher this runtime
// lacks or lengths it does not take.
function getCipherInfo(nameOrNid, options = {}) {
  if (typeof nameOrNid !== 'string' && !Number.isInteger(nameOrNid)) {
    throw invalidArgType('nameOrNid', 'one of type string or number', nameOrNid);
  }
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'of type object', options);
  const keyLength = int32Option(options, 'keyLength');
  const ivLength = int32Option(options, 'ivLength');
  const name = typeof nameOrNid === 'string'
    ? ALIASES[nameOrNid.toLowerCase()] ?? nameOrNid.toLowerCase()
    : CIPHERS.find((n) => host.nodeCipherInfo(n)[4] === nameOrNid);
  if (!CIPHERS.includes(name)) return undefined;
  const [ownKey, ownIv, blockSize, , nid, modeNumber] = host.nodeCipherInfo(name);
  const mode = MODES[modeNumber] ?? 'stream';
  if (keyLength !== undefined && keyLength !== ownKey) return undefined;
  if (ivLength !== undefined && !ivLengthOk(mode, ownIv, ivLength)) return undefined;
  const bits = name.slice(4, 7);
  const info = { mode, name: mode === 'gcm' || mode === 'ccm' ? `id-aes${bits}-${mode}` : name, nid };
  if (mode !== 'stream') info.blockSize = blockSize;
  // CCM's nonce: 7–13 bytes, 12 unless asked (OpenSSL's and Node's
  // default; AWS-LC's answers 13).
  const iv = ivLength ?? (mode === 'ccm' ? 12 : ownIv);
  if (iv !== 0) info.ivLength = iv;
  info.keyLength = ownKey;
  return info;
}

// Node's name for a cipher this runtime has (an alias resolved), or Node's
// error.
function cipherName(algorithm) {
  if (typeof algorithm !== 'string') throw invalidArgType('cipher', 'of type string', algorithm);
  const lower = algorithm.toLowerCase();
  const name = ALIASES[lower] ?? lower;
  if (!CIPHERS.includes(name)) throw codedError(TypeError, 'ERR_CRYPTO_UNKNOWN_CIPHER', 'Unknown cipher');
  return name;
}

// The cipher `algorithm` names, its lengths checked against `key` and `iv`;
// its tag length (AEAD ciphers, from `options.authTagLength`).
function lookup(algorithm, key, iv, options) {
  const name = cipherName(algorithm);
  const [keyLength, ivLength, blockSize, aead] = host.nodeCipherInfo(name);
  if (key.length !== keyLength) throw codedError(RangeError, 'ERR_CRYPTO_INVALID_KEYLEN', 'Invalid key length');
  const ccm = name.endsWith('-ccm');
  const ivOk = !aead ? iv.length === ivLength
    : name === 'chacha20-poly1305' ? iv.length === 12
      : ccm ? iv.length >= 7 && iv.length <= 13 : iv.length > 0;
  if (!ivOk) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_IV', 'Invalid initialization vector');
  const tagGiven = options != null && options.authTagLength !== undefined;
  if (ccm && !tagGiven) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_AUTH_TAG', `authTagLength required for ${name}`);
  const tagLength = aead && tagGiven ? options.authTagLength : 16;
  if (aead && !tagLengthOk(name, tagLength)) throw invalidTag(tagLength);
  return { name, blockSize, aead, ccm, tagLength, tagGiven };
}

class CipherBase {
  #encrypt;
  #cipher;
  #handle;
  #padding = true;
  #length = 0;
  #decoder = null;
  #done = false;
  #tag = null;
  // CCM: the message length set (null: not yet), whether data was given,
  // whether authentication failed.
  #ccmReady = null;
  #ccmUsed = false;
  #ccmFailed = false;

  constructor(encrypt, algorithm, key, iv, options) {
    const keyBytes = bytesOf(key, 'key');
    const ivBytes = iv === null || iv === undefined ? new Uint8Array(0) : bytesOf(iv, 'iv');
    this.#cipher = lookup(algorithm, keyBytes, ivBytes, options);
    this.#encrypt = encrypt;
    this.#handle = host.nodeCipherNew(this.#cipher.name, new Uint8Array(keyBytes), new Uint8Array(ivBytes), encrypt, this.#cipher.tagLength);
  }

  #output(buffer, encoding, last) {
    if (encoding === undefined || encoding === 'buffer') return buffer;
    if (this.#decoder === null) {
      const { StringDecoder } = require('node:string_decoder');
      this.#decoder = new StringDecoder(encoding);
    }
    return last ? this.#decoder.end(buffer) : this.#decoder.write(buffer);
  }

  update(data, inputEncoding, outputEncoding) {
    if (this.#done) throw unsupportedState();
    const input = bytesOf(data, 'data', inputEncoding);
    this.#length += input.length;
    if (this.#cipher.ccm) return this.#output(this.#ccmUpdate(input), outputEncoding, false);
    const chunks = [];
    for (let at = 0; at < input.length; at += STEP) {
      chunks.push(Buffer.from(host.nodeCipherUpdate(this.#handle, input.subarray(at, at + STEP), false)));
    }
    const out = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    return this.#output(out, outputEncoding, false);
  }

  // CCM ciphers its whole message in one update (at most 1 MiB here);
  // decrypting, a tag that does not authenticate fails at final(), as Node.
  #ccmUpdate(input) {
    if (this.#ccmUsed) throw unsupportedState();
    this.#ccmUsed = true;
    if (input.length > STEP) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `CCM messages longer than ${STEP} bytes are not supported`);
    this.#ccmLength(input.length);
    if (this.#ccmReady !== input.length) throw unsupportedState();
    try {
      return Buffer.from(host.nodeCipherUpdate(this.#handle, input, false));
    } catch {
      if (this.#encrypt) throw unsupportedState();
      this.#ccmFailed = true;
      return Buffer.alloc(0);
    }
  }

  #ccmLength(length) {
    if (this.#ccmReady !== null) return;
    this.#ccmReady = length;
    if (!host.nodeCipherCcm(this.#handle, length)) throw unsupportedState();
  }

  final(outputEncoding) {
    if (this.#done) throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', 'Invalid state');
    this.#done = true;
    if (this.#cipher.ccm && this.#ccmFailed) throw authFailed();
    if (this.#cipher.ccm) this.#ccmLength(0);
    const { aead, blockSize, tagLength } = this.#cipher;
    const tagWanted = aead && this.#encrypt ? tagLength : 0;
    let out;
    try {
      out = Buffer.from(host.nodeCipherFinal(this.#handle, tagWanted));
    } catch {
      throw this.#finalError(aead, blockSize);
    }
    if (tagWanted > 0) {
      this.#tag = out.subarray(out.length - tagWanted);
      out = out.subarray(0, out.length - tagWanted);
    }
    return this.#output(out, outputEncoding, true);
  }

  #finalError(aead, blockSize) {
    if (aead) return authFailed();
    const whole = this.#length % blockSize === 0;
    if (!whole && !(this.#encrypt && this.#padding)) {
      return codedError(Error, 'ERR_OSSL_WRONG_FINAL_BLOCK_LENGTH', 'error:1C80006B:Provider routines::wrong final block length');
    }
    return codedError(Error, 'ERR_OSSL_BAD_DECRYPT', 'error:1C800064:Provider routines::bad decrypt');
  }

  setAAD(buffer, options) {
    if (!this.#cipher.aead || this.#done) throw invalidState('setAAD');
    const aad = bytesOf(buffer, 'buffer');
    if (this.#cipher.ccm) {
      const length = options && options.plaintextLength;
      if (length === undefined) throw codedError(TypeError, 'ERR_MISSING_ARGS', 'options.plaintextLength required for CCM mode with AAD');
      if (aad.length > STEP) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `CCM additional data longer than ${STEP} bytes is not supported`);
      this.#ccmLength(length);
    }
    for (let at = 0; at === 0 || at < aad.length; at += STEP) {
      host.nodeCipherUpdate(this.#handle, aad.subarray(at, at + STEP), true);
    }
    return this;
  }

  setAutoPadding(autoPadding = true) {
    if (this.#done) throw invalidState('setAutoPadding');
    this.#padding = Boolean(autoPadding);
    host.nodeCipherPadding(this.#handle, this.#padding);
    return this;
  }

  // Cipheriv's getAuthTag.
  _tag() {
    if (!this.#encrypt || this.#tag === null) throw invalidState('getAuthTag');
    return Buffer.from(this.#tag);
  }

  // Decipheriv's setAuthTag.
  _setTag(tag) {
    const { aead, name, tagLength, tagGiven } = this.#cipher;
    if (this.#encrypt || !aead || this.#done || this.#tag !== null) throw invalidState('setAuthTag');
    const bytes = new Uint8Array(bytesOf(tag, 'buffer'));
    if (!tagLengthOk(name, bytes.length) || (tagGiven && bytes.length !== tagLength)) throw invalidTag(bytes.length);
    if (!host.nodeCipherSetTag(this.#handle, bytes)) throw invalidTag(bytes.length);
    this.#tag = bytes;
    return this;
  }
}

class Cipheriv extends CipherBase {
  constructor(algorithm, key, iv, options) {
    super(true, algorithm, key, iv, options);
  }

  getAuthTag() {
    return this._tag();
  }
}

class Decipheriv extends CipherBase {
  constructor(algorithm, key, iv, options) {
    super(false, algorithm, key, iv, options);
  }

  setAuthTag(tag) {
    return this._setTag(tag);
  }
}

// The stream methods a Hash, Hmac or Cipheriv answers through a node:stream
// Transform made (from `options(object)`) when one is first used.
const STREAM_METHODS = [
  'write', 'end', 'read', 'pipe', 'unpipe', 'on', 'once', 'off', 'addListener', 'removeListener',
  'removeAllListeners', 'emit', 'setEncoding', 'pause', 'resume', 'destroy', Symbol.asyncIterator,
];

function lazyTransform(Class, options) {
  const streams = new WeakMap();
  function streamOf(object) {
    let stream = streams.get(object);
    if (stream === undefined) {
      const { Transform } = require('node:stream');
      stream = new Transform(options(object));
      streams.set(object, stream);
    }
    return stream;
  }
  for (const name of STREAM_METHODS) {
    Class.prototype[name] = function (...args) {
      const stream = streamOf(this);
      const result = stream[name](...args);
      return result === stream ? this : result;
    };
  }
}

lazyTransform(CipherBase, (cipher) => ({
  transform(chunk, encoding, callback) {
    try {
      callback(null, cipher.update(chunk, encoding));
    } catch (error) {
      callback(error);
    }
  },
  flush(callback) {
    try {
      callback(null, cipher.final());
    } catch (error) {
      callback(error);
    }
  },
}));

module.exports = {
  CIPHERS,
  Cipheriv,
  Decipheriv,
  cipherName,
  getCipherInfo,
  lazyTransform,
  createCipheriv: (algorithm, key, iv, options) => new Cipheriv(algorithm, key, iv, options),
  createDecipheriv: (algorithm, key, iv, options) => new Decipheriv(algorithm, key, iv, options),
};
