// node:crypto — Node's hashing, HMAC, random, PBKDF2, HKDF, scrypt, cipher
// (`crypto_cipher.js`), key (`crypto_keys.js`), prime (`crypto_prime.js`),
// SPKAC and certificate (`crypto_x509.js`) functions on the
// runtime's Web Crypto: hashers are the crypto unit's (`digestStream*`,
// `hmacNew`, `digestCopy`), randomness is `randomFill`, `pbkdf2` runs off
// the isolate's thread as SubtleCrypto's deriveBits does, `pbkdf2Sync`
// under the same bound on one call's work. Runs as function (host,
// internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType, notImplemented: missing } = require('node:internal/errors');
const cipher = require('node:internal/crypto_cipher');
const dh = require('node:internal/crypto_dh');

// Node's names (any case, `RSA-` prefixed too) to Web Crypto's.
const HASHES = { md5: 'MD5', sha1: 'SHA-1', sha256: 'SHA-256', sha384: 'SHA-384', sha512: 'SHA-512' };
// Larger updates are hashed in steps, so the CPU limit can stop between them.
const STEP = 1 << 20;
// randomFill's most bytes per call.
const ENTROPY_STEP = 65536;

function hashName(algorithm) {
  if (typeof algorithm !== 'string') throw invalidArgType('algorithm', 'of type string', algorithm);
  const key = algorithm.toLowerCase().replace(/^rsa-/, '').replace('-', '');
  const name = HASHES[key];
  if (name === undefined) throw codedError(Error, 'ERR_CRYPTO_INVALID_DIGEST', `Digest method not supported`);
  return name;
}

// A string (in `encoding`), ArrayBuffer or view as a Uint8Array.
function bytes(data, name, encoding) {
  if (typeof data === 'string') return Buffer.from(data, encoding);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // (Workers have no SharedArrayBuffer: naming it would throw.)
  if (data instanceof ArrayBuffer || data instanceof globalThis.SharedArrayBuffer) return new Uint8Array(data);
  throw invalidArgType(name, 'of type string or an instance of Buffer, TypedArray, DataView or ArrayBuffer', data);
}

function encode(arrayBuffer, encoding) {
  const buffer = Buffer.from(arrayBuffer);
  return encoding === undefined || encoding === 'buffer' ? buffer : buffer.toString(encoding);
}

// What Hash and Hmac share: a hasher handle, written in steps, finished once.
// As in Node, the stream's flush (a Hash piped into) makes the digest without
// finishing the object: `digest()` after it answers that digest (a Hash) or
// an empty one (an Hmac); a second `digest()` is refused (a Hash) or empty.
class Hasher {
  #handle;
  #done = false;
  #digest = null;
  #finalized;

  constructor(handle, finalized) {
    this.#handle = handle;
    this.#finalized = finalized;
  }

  _handle() {
    if (this.#done || this.#digest !== null) throw codedError(Error, this.#finalized, 'Digest already called');
    return this.#handle;
  }

  update(data, encoding) {
    const view = bytes(data, 'data', encoding);
    const handle = this._handle();
    for (let at = 0; at < view.length; at += STEP) {
      host.digestStreamWrite(handle, view.subarray(at, at + STEP));
    }
    return this;
  }

  // The digest, made once (the handle is spent then).
  _end() {
    this.#digest ??= host.digestStreamEnd(this.#handle);
    return this.#digest;
  }

  // Whether the stream's flush made the digest before `digest()`.
  _flushed() {
    return this.#digest !== null && !this.#done;
  }

  digest(encoding) {
    if (this.#done) throw codedError(Error, this.#finalized, 'Digest already called');
    this.#done = true;
    return encode(this._end(), encoding);
  }
}

// A Hash or Hmac is a stream too (the data written, the digest read).
cipher.lazyTransform(Hasher, (hasher) => ({
  transform(chunk, encoding, callback) {
    try {
      hasher.update(chunk, encoding);
      callback();
    } catch (error) {
      callback(error);
    }
  },
  flush(callback) { callback(null, Buffer.from(hasher._end())); },
}));

class Hash extends Hasher {
  constructor(algorithm, options, handle) {
    super(handle ?? host.digestStreamNew(hashName(algorithm)), 'ERR_CRYPTO_HASH_FINALIZED');
  }

  copy() {
    return new Hash(undefined, undefined, host.digestCopy(this._handle()));
  }
}

class Hmac extends Hasher {
  #spent = false;

  constructor(algorithm, key, options) {
    const name = hashName(algorithm);
    if (key instanceof KeyObject) key = key.export();
    super(host.hmacNew(name, bytes(key, 'key', options && options.encoding)), 'ERR_CRYPTO_HASH_FINALIZED');
  }

  // Node's Hmac answers an empty digest once its own is taken.
  digest(encoding) {
    if (this.#spent || this._flushed()) {
      this.#spent = true;
      return encode(new ArrayBuffer(0), encoding);
    }
    this.#spent = true;
    return super.digest(encoding);
  }
}

function createHash(algorithm, options) {
  return new Hash(algorithm, options);
}

function createHmac(algorithm, key, options) {
  return new Hmac(algorithm, key, options);
}

// crypto.hash(algorithm, data, outputEncoding = 'hex'): one-shot.
function hash(algorithm, data, outputEncoding = 'hex') {
  return createHash(algorithm).update(data).digest(outputEncoding);
}

function checkSize(size, name, max) {
  if (typeof size !== 'number') throw invalidArgType(name, 'of type number', size);
  if (!Number.isInteger(size) || size < 0 || size > max) {
    throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be >= 0 && <= ${max}. Received ${size}`);
  }
}

function fill(view) {
  for (let at = 0; at < view.length; at += ENTROPY_STEP) {
    host.randomFill(view.subarray(at, at + ENTROPY_STEP));
  }
  return view;
}

// Calls `callback(error, value)` in a later microtask, as Node calls back
// after its thread pool.
function later(callback, work) {
  let value;
  let error = null;
  try { value = work(); } catch (e) { error = e; }
  queueMicrotask(() => callback(error, value));
}

function randomBytes(size, callback) {
  checkSize(size, 'size', 2 ** 31 - 1);
  const make = () => { const out = Buffer.alloc(size); fill(out); return out; };
  if (callback === undefined) return make();
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  later(callback, make);
  return undefined;
}

function fillRange(buffer, offset, size) {
  const view = bytes(buffer, 'buf');
  offset = offset === undefined ? 0 : offset;
  checkSize(offset, 'offset', view.length);
  size = size === undefined ? view.length - offset : size;
  checkSize(size, 'size', view.length - offset);
  fill(view.subarray(offset, offset + size));
  return buffer;
}

function randomFillSync(buffer, offset, size) {
  return fillRange(buffer, offset, size);
}

function randomFill(buffer, offset, size, callback) {
  if (typeof offset === 'function') { callback = offset; offset = undefined; }
  else if (typeof size === 'function') { callback = size; size = undefined; }
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  later(callback, () => fillRange(buffer, offset, size));
}

// randomInt([min,] max[, callback]): uniform over [min, max), by rejecting
// the random 48-bit values that would bias it.
function randomInt(min, max, callback) {
  if (typeof max === 'function' || max === undefined) { callback = max; max = min; min = 0; }
  if (!Number.isSafeInteger(min)) throw invalidArgType('min', 'a safe integer', min);
  if (!Number.isSafeInteger(max)) throw invalidArgType('max', 'a safe integer', max);
  const range = max - min;
  if (!(range > 0) || range > 2 ** 48) {
    throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "max" is out of range. It must be greater than the value of "min" (${min}) and its distance to it at most 2^48. Received ${max}`);
  }
  const pick = () => {
    const limit = 2 ** 48 - (2 ** 48 % range);
    const six = new Uint8Array(6);
    for (;;) {
      fill(six);
      const x = six[0] * 2 ** 40 + six[1] * 2 ** 32 + ((six[2] << 24) >>> 0) + (six[3] << 16) + (six[4] << 8) + six[5];
      if (x < limit) return min + (x % range);
    }
  };
  if (callback === undefined) return pick();
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  later(callback, pick);
  return undefined;
}

function timingSafeEqual(a, b) {
  const x = bytes(a, 'buf1');
  const y = bytes(b, 'buf2');
  if (x.length !== y.length) {
    throw codedError(RangeError, 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', 'Input buffers must have the same byte length');
  }
  return host.timingSafeEqual(x, y);
}

function pbkdf2Args(password, salt, iterations, keylen, digest) {
  const pw = bytes(password, 'password');
  const s = bytes(salt, 'salt');
  if (typeof iterations !== 'number') throw invalidArgType('iterations', 'of type number', iterations);
  checkSize(iterations, 'iterations', 2 ** 31 - 1);
  if (iterations < 1) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "iterations" is out of range. It must be >= 1. Received ${iterations}`);
  checkSize(keylen, 'keylen', 2 ** 31 - 1);
  if (typeof digest !== 'string') throw invalidArgType('digest', 'of type string', digest);
  const name = hashName(digest);
  if (name === 'MD5') throw codedError(TypeError, 'ERR_CRYPTO_INVALID_DIGEST', `Invalid digest: ${digest}`);
  return [name, pw, s];
}

function pbkdf2Sync(password, salt, iterations, keylen, digest) {
  const [name, pw, s] = pbkdf2Args(password, salt, iterations, keylen, digest);
  if (keylen === 0) return Buffer.alloc(0);
  return Buffer.from(host.pbkdf2Sync(name, pw, s, iterations, keylen));
}

// Off the isolate's thread, as SubtleCrypto's deriveBits runs it.
function pbkdf2(password, salt, iterations, keylen, digest, callback) {
  if (typeof digest === 'function') { callback = digest; digest = undefined; }
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  const [name, pw, s] = pbkdf2Args(password, salt, iterations, keylen, digest);
  if (keylen === 0) { queueMicrotask(() => callback(null, Buffer.alloc(0))); return; }
  const subtle = globalThis.crypto.subtle;
  subtle.importKey('raw', pw, 'PBKDF2', false, ['deriveBits'])
    .then((key) => subtle.deriveBits({ name: 'PBKDF2', hash: name, salt: s, iterations }, key, keylen * 8))
    .then((bits) => callback(null, Buffer.from(bits)), (error) => callback(error));
}

// scrypt's options, checked as Node checks them; [log2 N, r, p].
function scryptParams(options = {}) {
  const pick = (a, b, fallback) => options[a] ?? options[b] ?? fallback;
  const N = pick('N', 'cost', 16384);
  const r = pick('r', 'blockSize', 8);
  const p = pick('p', 'parallelization', 1);
  const maxmem = options.maxmem ?? 32 * 1024 * 1024;
  const invalid = (why) => codedError(RangeError, 'ERR_CRYPTO_INVALID_SCRYPT_PARAMS', `Invalid scrypt params: ${why}`);
  for (const [name, value] of [['N', N], ['r', r], ['p', p]]) {
    if (!Number.isSafeInteger(value) || value < 1) throw invalid(`${name} must be a positive integer`);
  }
  if (N < 2 || (N & (N - 1)) !== 0 || N > 2 ** 31) throw invalid('N must be a power of two greater than 1');
  if (128 * N * r > maxmem) throw invalid('memory limit exceeded');
  return [Math.log2(N), r, p];
}

function scryptSync(password, salt, keylen, options) {
  const pw = bytes(password, 'password');
  const s = bytes(salt, 'salt');
  checkSize(keylen, 'keylen', 2 ** 31 - 1);
  const [logN, r, p] = scryptParams(options);
  if (keylen === 0) return Buffer.alloc(0);
  return Buffer.from(host.scryptSync(new Uint8Array(pw), new Uint8Array(s), logN, r, p, keylen));
}

function scrypt(password, salt, keylen, options, callback) {
  if (typeof options === 'function') { callback = options; options = undefined; }
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  later(callback, () => scryptSync(password, salt, keylen, options));
}

const HASH_BYTES = { 'SHA-1': 20, 'SHA-256': 32, 'SHA-384': 48, 'SHA-512': 64 };

// HKDF (RFC 5869) by Web Crypto's deriveBits; an ArrayBuffer, as in Node.
function hkdfSync(digest, ikm, salt, info, keylen) {
  const name = hashName(digest);
  const size = HASH_BYTES[name];
  if (size === undefined) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_DIGEST', `Invalid digest: ${digest}`);
  const key = ikm instanceof KeyObject ? ikm.export() : bytes(ikm, 'ikm');
  const s = bytes(salt, 'salt');
  const i = bytes(info, 'info');
  if (i.length > 1024) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "info" is out of range. It must be <= 1024. Received ${i.length}`);
  checkSize(keylen, 'keylen', 2 ** 31 - 1);
  if (keylen > 255 * size) throw codedError(RangeError, 'ERR_CRYPTO_INVALID_KEYLEN', 'Invalid key length');
  if (keylen === 0) return new ArrayBuffer(0);
  const [handle] = host.cryptoImportKey('secret', '', 'raw', new Uint8Array(key));
  return host.cryptoDeriveBits('HKDF', handle, { hash: name, salt: new Uint8Array(s), info: new Uint8Array(i) }, keylen * 8);
}

function hkdf(digest, ikm, salt, info, keylen, callback) {
  if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
  later(callback, () => hkdfSync(digest, ikm, salt, info, keylen));
}

function getHashes() {
  return ['md5', 'sha1', 'sha256', 'sha384', 'sha512'];
}

const notImplemented = (name) => missing(`crypto.${name}`);

const keys = require('node:internal/crypto_keys')({ hashName, bytes, later });
const { KeyObject } = keys;
const { X509Certificate } = require('node:internal/crypto_x509')({ ...keys, createHash });

const webcrypto = globalThis.crypto;
const prime = require('node:internal/crypto_prime');

// Node 22 removed createCipher/createDecipher (keys from a password by
// MD5, no IV); workerd keeps the names, each throwing.
const Cipher = function Cipher() { notImplemented('Cipher')(); };
const Decipher = function Decipher() { notImplemented('Decipher')(); };

// SPKAC (Netscape's signed public key and challenge, base64) on AWS-LC's
// NETSCAPE_SPKI (`nodeSpkac`, host/node/crypto_spkac.rs). What does not
// decode answers '' (false for verifySpkac), as in Node.
function spkacOf(spkac, encoding) {
  if (typeof spkac === 'string') return new Uint8Array(Buffer.from(spkac, encoding));
  if (ArrayBuffer.isView(spkac) || spkac instanceof ArrayBuffer) return new Uint8Array(bytes(spkac, 'spkac'));
  throw invalidArgType('spkac', 'of type string or an instance of ArrayBuffer, Buffer, TypedArray, or DataView', spkac);
}

class Certificate {
  static exportChallenge(spkac, encoding) {
    const challenge = host.nodeSpkac(spkacOf(spkac, encoding), 'challenge');
    return challenge === undefined ? '' : Buffer.from(challenge);
  }

  static exportPublicKey(spkac, encoding) {
    const der = host.nodeSpkac(spkacOf(spkac, encoding), 'publicKey');
    if (der === undefined) return '';
    return Buffer.from(keys.createPublicKey({ key: Buffer.from(der), format: 'der', type: 'spki' }).export({ type: 'spki', format: 'pem' }));
  }

  static verifySpkac(spkac, encoding) {
    const answer = host.nodeSpkac(spkacOf(spkac, encoding), 'verify');
    return answer !== undefined && answer[0] === 1;
  }

  exportChallenge(spkac, encoding) { return Certificate.exportChallenge(spkac, encoding); }
  exportPublicKey(spkac, encoding) { return Certificate.exportPublicKey(spkac, encoding); }
  verifySpkac(spkac, encoding) { return Certificate.verifySpkac(spkac, encoding); }
}

module.exports = {
  createHash,
  createHmac,
  hash,
  Hash,
  Hmac,
  KeyObject,
  SecretKeyObject: keys.SecretKeyObject,
  PublicKeyObject: keys.PublicKeyObject,
  PrivateKeyObject: keys.PrivateKeyObject,
  CryptoKey: globalThis.CryptoKey,
  X509Certificate,
  Certificate,
  createSecretKey: keys.createSecretKey,
  createPublicKey: keys.createPublicKey,
  createPrivateKey: keys.createPrivateKey,
  generateKeyPair: keys.generateKeyPair,
  generateKeyPairSync: keys.generateKeyPairSync,
  generateKey: keys.generateKey,
  generateKeySync: keys.generateKeySync,
  sign: keys.sign,
  verify: keys.verify,
  createSign: keys.createSign,
  createVerify: keys.createVerify,
  Sign: keys.Sign,
  Verify: keys.Verify,
  publicEncrypt: keys.publicEncrypt,
  privateDecrypt: keys.privateDecrypt,
  privateEncrypt: keys.privateEncrypt,
  publicDecrypt: keys.publicDecrypt,
  diffieHellman: keys.diffieHellman,
  createECDH: keys.createECDH,
  ECDH: keys.ECDH,
  randomBytes,
  pseudoRandomBytes: randomBytes,
  randomFill,
  randomFillSync,
  randomInt,
  randomUUID: () => host.randomUUID(),
  getRandomValues: (array) => webcrypto.getRandomValues(array),
  timingSafeEqual,
  pbkdf2,
  pbkdf2Sync,
  getHashes,
  getCiphers: () => [...cipher.CIPHERS],
  getCurves: keys.getCurves,
  getFips: () => 0,
  get fips() { return 0; },
  setFips: notImplemented('setFips'),
  setEngine: notImplemented('setEngine'),
  secureHeapUsed: () => ({ total: 0, min: 0, used: 0, utilization: 0 }),
  getCipherInfo: cipher.getCipherInfo,
  checkPrime: prime.checkPrime,
  checkPrimeSync: prime.checkPrimeSync,
  generatePrime: prime.generatePrime,
  generatePrimeSync: prime.generatePrimeSync,
  Cipher,
  Decipher,
  createCipher: notImplemented('createCipher'),
  createDecipher: notImplemented('createDecipher'),
  constants: keys.constants,
  webcrypto,
  subtle: webcrypto.subtle,
  createCipheriv: cipher.createCipheriv,
  createDecipheriv: cipher.createDecipheriv,
  Cipheriv: cipher.Cipheriv,
  Decipheriv: cipher.Decipheriv,
  scrypt,
  scryptSync,
  hkdf,
  hkdfSync,
  createDiffieHellman: dh.createDiffieHellman,
  createDiffieHellmanGroup: dh.getDiffieHellman,
  getDiffieHellman: dh.getDiffieHellman,
  DiffieHellman: dh.DiffieHellman,
  DiffieHellmanGroup: dh.DiffieHellmanGroup,
};
