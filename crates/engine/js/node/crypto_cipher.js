// node:crypto's createCipheriv/createDecipheriv for AES in CBC, CTR and
// GCM modes, on Web Crypto's AES (`cryptoImportKey`, `cryptoCipher`): the
// input is gathered and ciphered at `final()`, so `update()` answers an
// empty chunk and `final()` the whole output (their concatenation is
// Node's, in any output encoding). Part of the `node:crypto` unit, hidden
// from Workers. Runs as function (host, internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType, notImplemented } = require('node:internal/errors');

// Node's names: `aes-<bits>-<mode>`.
const MODES = { cbc: 'AES-CBC', ctr: 'AES-CTR', gcm: 'AES-GCM' };
const CIPHERS = Object.freeze(['128', '192', '256'].flatMap((bits) => Object.keys(MODES).map((mode) => `aes-${bits}-${mode}`)));

function bytesOf(value, name, encoding) {
  if (typeof value === 'string') return Buffer.from(value, encoding);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (value && typeof value.export === 'function') return new Uint8Array(value.export());
  throw invalidArgType(name, 'of type string or an instance of Buffer, TypedArray, DataView or ArrayBuffer', value);
}

function parse(algorithm, key, iv) {
  const match = typeof algorithm === 'string' && /^(?:id-)?aes-?(128|192|256)-(cbc|ctr|gcm)$/.exec(algorithm.toLowerCase());
  if (!match) throw codedError(TypeError, 'ERR_CRYPTO_UNKNOWN_CIPHER', 'Unknown cipher');
  const mode = match[2];
  if (key.length * 8 !== Number(match[1])) throw codedError(RangeError, 'ERR_CRYPTO_INVALID_KEYLEN', 'Invalid key length');
  if (mode === 'gcm' ? ![12, 16, 32, 64].includes(iv.length) : iv.length !== 16) {
    throw codedError(TypeError, 'ERR_CRYPTO_INVALID_IV', 'Invalid initialization vector');
  }
  return mode;
}

function output(bytes, encoding) {
  const buffer = Buffer.from(bytes);
  return encoding === undefined || encoding === 'buffer' ? buffer : buffer.toString(encoding);
}

class CipherBase {
  #encrypt;
  #mode;
  #key;
  #iv;
  #chunks = [];
  #aad = null;
  #tagLength;
  #done = false;

  constructor(encrypt, algorithm, key, iv, options = {}) {
    const keyBytes = bytesOf(key, 'key');
    const ivBytes = bytesOf(iv, 'iv');
    this.#mode = parse(algorithm, keyBytes, ivBytes);
    this.#encrypt = encrypt;
    this.#key = host.cryptoImportKey('secret', '', 'raw', new Uint8Array(keyBytes))[0];
    this.#iv = new Uint8Array(ivBytes);
    this.#tagLength = options.authTagLength ?? 16;
    this.authTag = null;
  }

  update(data, inputEncoding, outputEncoding) {
    if (this.#done) throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', 'Invalid state for operation update');
    this.#chunks.push(new Uint8Array(bytesOf(data, 'data', inputEncoding)));
    return output(new Uint8Array(0), outputEncoding);
  }

  final(outputEncoding) {
    if (this.#done) throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', 'Invalid state for operation final');
    this.#done = true;
    let data = Buffer.concat(this.#chunks);
    this.#chunks = [];
    const params = this.#params();
    if (this.#mode === 'gcm' && !this.#encrypt) {
      if (this.authTag === null) throw new Error('Unsupported state or unable to authenticate data');
      data = Buffer.concat([data, this.authTag]);
    }
    let result;
    try {
      result = new Uint8Array(host.cryptoCipher(MODES[this.#mode], this.#key, params, new Uint8Array(data), this.#encrypt));
    } catch (error) {
      if (this.#mode === 'gcm') throw new Error('Unsupported state or unable to authenticate data');
      if (!this.#encrypt) throw codedError(Error, 'ERR_OSSL_BAD_DECRYPT', 'bad decrypt');
      throw error;
    }
    if (this.#mode === 'gcm' && this.#encrypt) {
      const split = result.length - this.#tagLength;
      this.authTag = Buffer.from(result.subarray(split));
      result = result.subarray(0, split);
    }
    return output(result, outputEncoding);
  }

  #params() {
    if (this.#mode === 'cbc') return { iv: this.#iv };
    if (this.#mode === 'ctr') return { counter: this.#iv, length: 128 };
    const tagLength = (this.#encrypt ? this.#tagLength : this.authTag.length) * 8;
    const params = { iv: this.#iv, tagLength };
    if (this.#aad !== null) params.additionalData = this.#aad;
    return params;
  }

  setAAD(buffer) {
    if (this.#mode !== 'gcm') throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', 'Invalid state for operation setAAD');
    this.#aad = new Uint8Array(bytesOf(buffer, 'buffer'));
    return this;
  }

  setAutoPadding(autoPadding = true) {
    if (!autoPadding && this.#mode === 'cbc') notImplemented('crypto Cipher.setAutoPadding(false)')();
    return this;
  }
}

class Cipheriv extends CipherBase {
  constructor(algorithm, key, iv, options) {
    super(true, algorithm, key, iv, options);
  }

  getAuthTag() {
    if (this.authTag === null) throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', 'Invalid state for operation getAuthTag');
    return Buffer.from(this.authTag);
  }
}

class Decipheriv extends CipherBase {
  constructor(algorithm, key, iv, options) {
    super(false, algorithm, key, iv, options);
  }

  setAuthTag(tag) {
    this.authTag = Buffer.from(bytesOf(tag, 'buffer'));
    return this;
  }
}

module.exports = {
  CIPHERS,
  Cipheriv,
  Decipheriv,
  createCipheriv: (algorithm, key, iv, options) => new Cipheriv(algorithm, key, iv, options),
  createDecipheriv: (algorithm, key, iv, options) => new Decipheriv(algorithm, key, iv, options),
};
