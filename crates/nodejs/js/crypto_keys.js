// node:internal/crypto_keys — node:crypto's KeyObject and what uses it:
// createSecretKey/PublicKey/PrivateKey (PEM, DER, JWK), key.export,
// generateKeyPair(Sync), sign/verify and createSign/createVerify,
// publicEncrypt/privateDecrypt (OAEP, PKCS#1 v1.5, none), privateEncrypt/
// publicDecrypt, diffieHellman and createECDH, and the
// interop with Web Crypto (KeyObject.from, key.toCryptoKey). The key
// material is the Web Crypto unit's (a handle, HOST.md `crypto*`); PEM,
// PKCS#1, SEC1 and key types read from DER are `nodeKey*`
// (host/node/crypto_keys.rs). Exports a function of node:crypto's helpers
// (hashName, bytes, later), which node:crypto calls once. Runs as function
// (host, internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType, notImplemented } = require('node:internal/errors');
const cipherModule = require('node:internal/crypto_cipher');

function invalidProperty(name, value) {
  const shown = typeof value === 'string' ? `'${value}'` : String(value);
  return codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property '${name}' is invalid. Received ${shown}`);
}

// node:crypto's constants (node:constants spreads them too): Node 20's
// values; OPENSSL_VERSION_NUMBER is workerd's.
const CIPHER_LIST = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:'
  + 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:'
  + 'ECDHE-ECDSA-AES256-GCM-SHA384:DHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA256:'
  + 'DHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384:DHE-RSA-AES256-SHA384:ECDHE-RSA-AES256-SHA256:'
  + 'DHE-RSA-AES256-SHA256:HIGH:!aNULL:!eNULL:!EXPORT:!DES:!RC4:!MD5:!PSK:!SRP:!CAMELLIA';
const constants = {
  OPENSSL_VERSION_NUMBER: 0x30000000,
  SSL_OP_ALL: 0x80000850,
  SSL_OP_ALLOW_NO_DHE_KEX: 0x400,
  SSL_OP_ALLOW_UNSAFE_LEGACY_RENEGOTIATION: 0x40000,
  SSL_OP_CIPHER_SERVER_PREFERENCE: 0x400000,
  SSL_OP_CISCO_ANYCONNECT: 0x8000,
  SSL_OP_COOKIE_EXCHANGE: 0x2000,
  SSL_OP_CRYPTOPRO_TLSEXT_BUG: 0x80000000,
  SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS: 0x800,
  SSL_OP_LEGACY_SERVER_CONNECT: 0x4,
  SSL_OP_NO_COMPRESSION: 0x20000,
  SSL_OP_NO_ENCRYPT_THEN_MAC: 0x80000,
  SSL_OP_NO_QUERY_MTU: 0x1000,
  SSL_OP_NO_RENEGOTIATION: 0x40000000,
  SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION: 0x10000,
  SSL_OP_NO_SSLv2: 0,
  SSL_OP_NO_SSLv3: 0x2000000,
  SSL_OP_NO_TICKET: 0x4000,
  SSL_OP_NO_TLSv1: 0x4000000,
  SSL_OP_NO_TLSv1_1: 0x10000000,
  SSL_OP_NO_TLSv1_2: 0x8000000,
  SSL_OP_NO_TLSv1_3: 0x20000000,
  SSL_OP_PRIORITIZE_CHACHA: 0x200000,
  SSL_OP_TLS_ROLLBACK_BUG: 0x800000,
  ENGINE_METHOD_RSA: 0x1,
  ENGINE_METHOD_DSA: 0x2,
  ENGINE_METHOD_DH: 0x4,
  ENGINE_METHOD_RAND: 0x8,
  ENGINE_METHOD_EC: 0x800,
  ENGINE_METHOD_CIPHERS: 0x40,
  ENGINE_METHOD_DIGESTS: 0x80,
  ENGINE_METHOD_PKEY_METHS: 0x200,
  ENGINE_METHOD_PKEY_ASN1_METHS: 0x400,
  ENGINE_METHOD_ALL: 0xffff,
  ENGINE_METHOD_NONE: 0,
  DH_CHECK_P_NOT_SAFE_PRIME: 2,
  DH_CHECK_P_NOT_PRIME: 1,
  DH_UNABLE_TO_CHECK_GENERATOR: 4,
  DH_NOT_SUITABLE_GENERATOR: 8,
  RSA_PKCS1_PADDING: 1,
  RSA_NO_PADDING: 3,
  RSA_PKCS1_OAEP_PADDING: 4,
  RSA_X931_PADDING: 5,
  RSA_PKCS1_PSS_PADDING: 6,
  RSA_PSS_SALTLEN_DIGEST: -1,
  RSA_PSS_SALTLEN_MAX_SIGN: -2,
  RSA_PSS_SALTLEN_AUTO: -2,
  defaultCoreCipherList: CIPHER_LIST,
  TLS1_VERSION: 0x301,
  TLS1_1_VERSION: 0x302,
  TLS1_2_VERSION: 0x303,
  TLS1_3_VERSION: 0x304,
  POINT_CONVERSION_COMPRESSED: 2,
  POINT_CONVERSION_UNCOMPRESSED: 4,
  POINT_CONVERSION_HYBRID: 6,
  defaultCipherList: CIPHER_LIST,
};

// Node's (OpenSSL's) curve names and Web Crypto's.
const CURVES = {
  'P-256': 'P-256', prime256v1: 'P-256', secp256r1: 'P-256',
  'P-384': 'P-384', secp384r1: 'P-384',
  'P-521': 'P-521', secp521r1: 'P-521',
};
const NODE_CURVE = { 'P-256': 'prime256v1', 'P-384': 'secp384r1', 'P-521': 'secp521r1' };
const HASH_BYTES = { 'SHA-1': 20, 'SHA-256': 32, 'SHA-384': 48, 'SHA-512': 64 };
// Web Crypto's algorithm of a CryptoKey to Node's asymmetricKeyType.
const TYPE_OF_ALGORITHM = {
  'RSASSA-PKCS1-v1_5': 'rsa', 'RSA-OAEP': 'rsa', 'RSA-PSS': 'rsa-pss',
  ECDSA: 'ec', ECDH: 'ec', Ed25519: 'ed25519', X25519: 'x25519',
};
const ALGORITHMS = [
  'RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP', 'ECDSA', 'ECDH', 'Ed25519', 'X25519',
  'HMAC', 'AES-GCM', 'AES-CBC', 'AES-CTR', 'AES-KW', 'HKDF', 'PBKDF2',
];

module.exports = function keys({ hashName, bytes, later }) {
  // A KeyObject's state: {type, handle, info, asym, secret}.
  const slots = new WeakMap();
  const kCreate = Symbol('KeyObject');

  const invalidKey = (message) => codedError(TypeError, 'ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE', message);

  function slotsOf(key) {
    const s = slots.get(key);
    if (s === undefined) throw invalidArgType('key', 'an instance of KeyObject', key);
    return s;
  }

  class KeyObject {
    constructor(token, state) {
      if (token !== kCreate) throw codedError(TypeError, 'ERR_ILLEGAL_CONSTRUCTOR', 'Illegal constructor');
      slots.set(this, state);
    }

    static from(cryptoKey) {
      const s = internal.cryptoKeySlots(cryptoKey);
      const { name } = s.algorithm;
      if (s.type === 'secret') {
        return secretKey(Buffer.from(host.cryptoExportKey(s.handle, 'raw')));
      }
      const info = { type: s.type, namedCurve: s.algorithm.namedCurve };
      if (s.algorithm.modulusLength !== undefined) {
        info.modulusLength = s.algorithm.modulusLength;
        info.publicExponent = s.algorithm.publicExponent;
      }
      return asymmetricKey(s.handle, info, TYPE_OF_ALGORITHM[name]);
    }

    get type() { return slotsOf(this).type; }

    get asymmetricKeyType() { return slotsOf(this).asym; }

    get symmetricKeySize() {
      const s = slotsOf(this);
      return s.type === 'secret' ? s.secret.length : undefined;
    }

    get asymmetricKeyDetails() {
      const { type, info, asym } = slotsOf(this);
      if (type === 'secret') return undefined;
      if (asym === 'rsa' || asym === 'rsa-pss') {
        const hex = Buffer.from(info.publicExponent).toString('hex') || '0';
        return { modulusLength: info.modulusLength, publicExponent: BigInt(`0x${hex}`) };
      }
      if (asym === 'ec') return { namedCurve: NODE_CURVE[info.namedCurve] };
      return {};
    }

    export(options) {
      const s = slotsOf(this);
      if (s.type === 'secret') {
        if (options !== undefined && options.format === 'jwk') {
          return { kty: 'oct', k: s.secret.toString('base64url') };
        }
        return Buffer.from(s.secret);
      }
      if (options === null || typeof options !== 'object') throw invalidArgType('options', 'of type object', options);
      const { format = 'pem', type, cipher, passphrase } = options;
      if (format === 'jwk') return JSON.parse(host.cryptoExportKey(s.handle, 'jwk'));
      if (cipher !== undefined && passphrase === undefined) throw invalidProperty('options.passphrase', passphrase);
      if (passphrase !== undefined && cipher === undefined) throw invalidProperty('options.cipher', cipher);
      const cipherName = cipher === undefined ? undefined : cipherModule.cipherName(cipher);
      const secret = passphrase === undefined ? undefined : new Uint8Array(bytes(passphrase, 'options.passphrase'));
      if (format !== 'pem' && format !== 'der') {
        throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property 'options.format' is invalid. Received '${format}'`);
      }
      const encodings = s.type === 'public' ? ['spki', 'pkcs1'] : ['pkcs8', 'pkcs1', 'sec1'];
      if (!encodings.includes(type)) {
        throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property 'options.type' is invalid. Received '${type}'`);
      }
      const out = host.nodeKeyExport(s.handle, format, type, s.asym === 'rsa-pss', cipherName, secret);
      return format === 'pem' ? out : Buffer.from(out);
    }

    equals(other) {
      if (!(other instanceof KeyObject)) throw invalidArgType('otherKeyObject', 'an instance of KeyObject', other);
      const a = slotsOf(this);
      const b = slotsOf(other);
      if (a.type !== b.type) return false;
      if (a.type === 'secret') {
        return a.secret.length === b.secret.length && host.timingSafeEqual(a.secret, b.secret);
      }
      const der = (s) => host.nodeKeyExport(s.handle, 'der', s.type === 'public' ? 'spki' : 'pkcs8', false);
      const x = der(a);
      const y = der(b);
      return x.length === y.length && host.timingSafeEqual(x, y);
    }

    toCryptoKey(algorithm, extractable, keyUsages) {
      const s = slotsOf(this);
      const given = typeof algorithm === 'string' ? { name: algorithm } : { ...algorithm };
      const name = ALGORITHMS.find((n) => n.toLowerCase() === String(given.name).toLowerCase());
      if (name === undefined) throw new DOMException(`Unrecognized name: ${given.name}`, 'NotSupportedError');
      const normalized = { name, namedCurve: s.info.namedCurve };
      if (given.hash !== undefined) {
        normalized.hash = hashName(typeof given.hash === 'string' ? given.hash : given.hash.name);
      }
      let { handle, info } = s;
      if (s.type === 'secret') {
        [handle, info] = host.cryptoImportKey('secret', '', 'raw', new Uint8Array(s.secret));
      }
      return internal.newCryptoKey(handle, info, normalized, Boolean(extractable), keyUsages);
    }
  }

  // The kinds of KeyObject (workerd exports them; Node has them inside).
  class SecretKeyObject extends KeyObject {}
  class PublicKeyObject extends KeyObject {}
  class PrivateKeyObject extends KeyObject {}

  function secretKey(secret) {
    return new SecretKeyObject(kCreate, { type: 'secret', secret, info: {} });
  }

  function asymmetricKey(handle, info, asym) {
    const Kind = info.type === 'public' ? PublicKeyObject : PrivateKeyObject;
    return new Kind(kCreate, { type: info.type, handle, info, asym });
  }

  function fromAnswer([handle, info, asym]) {
    return asymmetricKey(handle, info, asym);
  }

  function createSecretKey(key, encoding) {
    return secretKey(Buffer.from(bytes(key, 'key', encoding)));
  }

  // A JWK to a key: its kty and crv say the kind.
  function fromJwk(jwk, wantPrivate) {
    if (jwk === null || typeof jwk !== 'object') throw invalidArgType('key.key', 'of type object', jwk);
    const crv = String(jwk.crv);
    let kind;
    let asym;
    if (jwk.kty === 'RSA') [kind, asym] = ['rsa', 'rsa'];
    else if (jwk.kty === 'EC') [kind, asym] = ['ec', 'ec'];
    else if (jwk.kty === 'OKP' && (crv === 'Ed25519' || crv === 'X25519')) [kind, asym] = [crv.toLowerCase(), crv.toLowerCase()];
    else throw codedError(TypeError, 'ERR_CRYPTO_INVALID_JWK', 'Invalid JWK data');
    const holdsPrivate = jwk.d !== undefined;
    if (wantPrivate && !holdsPrivate) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_JWK', 'Invalid JWK private key');
    const [handle, info] = host.cryptoImportKey(kind, kind === 'ec' ? crv : '', 'jwk', JSON.stringify(jwk));
    if (holdsPrivate && !wantPrivate) return fromAnswer(host.nodeKeyPublic(handle, false));
    return asymmetricKey(handle, info, asym);
  }

  // Node's key argument: a KeyObject, a CryptoKey, PEM text or bytes, or
  // {key, format, type, encoding, passphrase}; the private key or, when
  // `wantPrivate` is false, the public key (a private key's public half).
  function prepareKey(input, wantPrivate) {
    if (input instanceof KeyObject) return keyOfKind(input, wantPrivate);
    if (input instanceof CryptoKey) return keyOfKind(KeyObject.from(input), wantPrivate);
    let options = input;
    if (typeof input === 'string' || ArrayBuffer.isView(input) || input instanceof ArrayBuffer) options = { key: input };
    if (options === null || typeof options !== 'object') {
      throw invalidArgType('key', 'of type string or an instance of ArrayBuffer, Buffer, TypedArray, DataView, KeyObject or CryptoKey', input);
    }
    const { key, format = 'pem', type, encoding, passphrase } = options;
    if (key instanceof KeyObject || key instanceof CryptoKey) return prepareKey(key, wantPrivate);
    if (format === 'jwk') return fromJwk(key, wantPrivate);
    if (format !== 'pem' && format !== 'der') {
      throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property 'key.format' is invalid. Received '${format}'`);
    }
    const data = new Uint8Array(bytes(key, 'key', encoding));
    if (format === 'der' && typeof type !== 'string') {
      throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property 'key.type' is invalid. Received ${type}`);
    }
    const secret = passphrase === undefined || passphrase === null ? undefined : new Uint8Array(bytes(passphrase, 'key.passphrase', encoding));
    try {
      return fromAnswer(host.nodeKeyImport(data, format, format === 'der' ? type : '', wantPrivate, secret));
    } catch (error) {
      if (error.message === 'bad decrypt') throw codedError(Error, 'ERR_OSSL_BAD_DECRYPT', 'error:1C800064:Provider routines::bad decrypt');
      if (error.message === 'Passphrase required for encrypted key') throw codedError(TypeError, 'ERR_MISSING_PASSPHRASE', error.message);
      throw error;
    }
  }

  function keyOfKind(key, wantPrivate) {
    const s = slotsOf(key);
    if (s.type === 'secret') throw invalidKey(`Invalid key object type secret, expected ${wantPrivate ? 'private' : 'public'}.`);
    if (wantPrivate && s.type !== 'private') throw invalidKey('Invalid key object type public, expected private.');
    if (!wantPrivate && s.type === 'private') return fromAnswer(host.nodeKeyPublic(s.handle, s.asym === 'rsa-pss'));
    return key;
  }

  const createPrivateKey = (key) => prepareKey(key, true);
  const createPublicKey = (key) => prepareKey(key, false);

  // === generation ===

  function exponentBytes(e = 0x10001) {
    if (e === 3) return new Uint8Array([3]);
    if (e === 0x10001) return new Uint8Array([1, 0, 1]);
    throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "options.publicExponent" is out of range. It must be 3 or 65537 on Isolane. Received ${e}`);
  }

  function checkModulus(options) {
    const bits = options && options.modulusLength;
    if (!Number.isInteger(bits) || bits < 0) throw invalidArgType('options.modulusLength', 'of type number', bits);
    return bits;
  }

  function curveOf(options) {
    const name = options && options.namedCurve;
    if (typeof name !== 'string') throw invalidArgType('options.namedCurve', 'of type string', name);
    const curve = CURVES[name];
    if (curve === undefined) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_CURVE', 'Invalid EC curve name');
    return curve;
  }

  // The pair as KeyObjects, or encoded as the options ask.
  function finishPair(pair, asym, options = {}) {
    const [[publicHandle, publicInfo], [privateHandle, privateInfo]] = pair;
    const publicKey = asymmetricKey(publicHandle, publicInfo, asym);
    const privateKey = asymmetricKey(privateHandle, privateInfo, asym);
    const { publicKeyEncoding: pe, privateKeyEncoding: se } = options;
    return {
      publicKey: pe === undefined ? publicKey : publicKey.export(pe),
      privateKey: se === undefined ? privateKey : privateKey.export(se),
    };
  }

  function generatePair(type, options, sync) {
    switch (type) {
      case 'rsa':
      case 'rsa-pss': {
        const bits = checkModulus(options);
        const e = exponentBytes(options.publicExponent);
        return sync ? host.nodeRsaGenerateSync(bits, e) : host.cryptoGenerateKey('rsa', '', bits, e);
      }
      case 'ec':
        return host.cryptoGenerateKey('ec', curveOf(options), 0, undefined);
      case 'ed25519':
      case 'x25519':
        return host.cryptoGenerateKey(type, '', 0, undefined);
      default:
        throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'type' must be a supported key type. Received '${type}'`);
    }
  }

  function generateKeyPairSync(type, options) {
    return finishPair(generatePair(type, options, true), type, options);
  }

  function generateKeyPair(type, options, callback) {
    if (typeof options === 'function') { callback = options; options = undefined; }
    if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
    const pair = generatePair(type, options, false);
    Promise.resolve(pair).then((p) => finishPair(p, type, options)).then(
      ({ publicKey, privateKey }) => callback(null, publicKey, privateKey),
      (error) => callback(error),
    );
  }

  function generateKeySync(type, options) {
    const length = options && options.length;
    if (type !== 'hmac' && type !== 'aes') throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'type' must be a supported key type. Received '${type}'`);
    if (!Number.isInteger(length) || length < 8 || length % 8 !== 0 || (type === 'aes' && ![128, 192, 256].includes(length))) {
      throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "options.length" is out of range. Received ${length}`);
    }
    const secret = Buffer.alloc(length / 8);
    globalThis.crypto.getRandomValues(secret);
    return secretKey(secret);
  }

  function generateKey(type, options, callback) {
    if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
    later(callback, () => generateKeySync(type, options));
  }

  // === sign / verify ===

  // The options of a key argument that are not the key (padding, ...).
  const keyOptions = (key) => (key !== null && typeof key === 'object' && !(key instanceof KeyObject) && !(key instanceof CryptoKey) && !ArrayBuffer.isView(key) ? key : {});

  function pssSalt(info, hash, saltLength) {
    if (saltLength === undefined || saltLength === constants.RSA_PSS_SALTLEN_MAX_SIGN) {
      return Math.ceil((info.modulusLength - 1) / 8) - HASH_BYTES[hash] - 2;
    }
    if (saltLength === constants.RSA_PSS_SALTLEN_DIGEST) return HASH_BYTES[hash];
    return saltLength;
  }

  // The Web Crypto algorithm and params a Node signature of `key` uses.
  function signatureScheme(algorithm, s, options) {
    if (s.asym === 'ed25519') return ['Ed25519', {}];
    const hash = algorithm === null || algorithm === undefined ? 'SHA-256' : hashName(algorithm);
    if (s.asym === 'ec') return ['ECDSA', { hash }];
    if (s.asym !== 'rsa' && s.asym !== 'rsa-pss') {
      throw codedError(TypeError, 'ERR_CRYPTO_INVALID_KEY_OBJECT_TYPE', `A ${s.asym} key cannot sign`);
    }
    const padding = options.padding ?? (s.asym === 'rsa-pss' ? constants.RSA_PKCS1_PSS_PADDING : constants.RSA_PKCS1_PADDING);
    if (padding === constants.RSA_PKCS1_PADDING) return ['RSASSA-PKCS1-v1_5', { hash }];
    if (padding === constants.RSA_PKCS1_PSS_PADDING) return ['RSA-PSS', { hash }];
    throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `Unsupported padding ${padding}`);
  }

  function signBytes(algorithm, data, key) {
    const options = keyOptions(key);
    const s = slotsOf(prepareKey(key, true));
    const [name, params] = signatureScheme(algorithm, s, options);
    if (name === 'RSA-PSS') params.saltLength = pssSalt(s.info, params.hash, options.saltLength);
    const signature = new Uint8Array(host.cryptoSign(name, s.handle, params, data));
    if (name === 'ECDSA' && options.dsaEncoding !== 'ieee-p1363') {
      return Buffer.from(host.nodeEcdsaSignature(s.handle, signature, true));
    }
    return Buffer.from(signature);
  }

  function verifyBytes(algorithm, data, key, signature) {
    const options = keyOptions(key);
    const s = slotsOf(prepareKey(key, false));
    const [name, params] = signatureScheme(algorithm, s, options);
    let sig = signature;
    if (name === 'ECDSA' && options.dsaEncoding !== 'ieee-p1363') {
      sig = host.nodeEcdsaSignature(s.handle, sig, false);
      if (sig.length === 0) return false;
    }
    if (name !== 'RSA-PSS') return host.cryptoVerify(name, s.handle, params, sig, data);
    // RSA_PSS_SALTLEN_AUTO: the salt lengths signers use (Node's default,
    // the digest's, none).
    const salts = options.saltLength === undefined || options.saltLength === constants.RSA_PSS_SALTLEN_AUTO
      ? [pssSalt(s.info, params.hash), HASH_BYTES[params.hash], 0]
      : [pssSalt(s.info, params.hash, options.saltLength)];
    return salts.some((saltLength) => saltLength >= 0 && host.cryptoVerify(name, s.handle, { ...params, saltLength }, sig, data));
  }

  const view = (data, name, encoding) => new Uint8Array(bytes(data, name, encoding));

  function sign(algorithm, data, key, callback) {
    const run = () => signBytes(algorithm, view(data, 'data'), key);
    if (callback === undefined) return run();
    later(callback, run);
    return undefined;
  }

  function verify(algorithm, data, key, signature, callback) {
    const run = () => verifyBytes(algorithm, view(data, 'data'), key, view(signature, 'signature'));
    if (callback === undefined) return run();
    later(callback, run);
    return undefined;
  }

  // createSign/createVerify: the data gathered by update(), signed at the end.
  class Gathered {
    #algorithm;
    #chunks = [];

    constructor(algorithm) {
      hashName(algorithm);
      this.#algorithm = algorithm;
    }

    update(data, encoding) {
      this.#chunks.push(view(data, 'data', encoding));
      return this;
    }

    write(data, encoding) { this.update(data, encoding); return true; }

    end(data, encoding) { if (data !== undefined) this.update(data, encoding); return this; }

    _take() {
      const data = Buffer.concat(this.#chunks);
      this.#chunks = [];
      return [this.#algorithm, data];
    }
  }

  class Sign extends Gathered {
    sign(privateKey, outputEncoding) {
      const [algorithm, data] = this._take();
      const signature = signBytes(algorithm, data, privateKey);
      return outputEncoding === undefined || outputEncoding === 'buffer' ? signature : signature.toString(outputEncoding);
    }
  }

  class Verify extends Gathered {
    verify(publicKey, signature, signatureEncoding) {
      const [algorithm, data] = this._take();
      return verifyBytes(algorithm, data, publicKey, view(signature, 'signature', signatureEncoding));
    }
  }

  // === RSA encryption (OAEP, PKCS#1 v1.5), Diffie-Hellman ===

  function rsaEncryption(key, buffer, encrypt) {
    const options = keyOptions(key);
    const padding = options.padding ?? constants.RSA_PKCS1_OAEP_PADDING;
    const s = slotsOf(prepareKey(key, !encrypt));
    const data = view(buffer, 'buffer');
    if (padding === constants.RSA_NO_PADDING) {
      return Buffer.from(host.nodeRsaRaw(s.handle, encrypt ? 'publicEncrypt' : 'privateDecrypt', padding, data));
    }
    if (padding === constants.RSA_PKCS1_PADDING) {
      // Decryption refused as Node refuses it (CVE-2023-46809: its timing
      // leaks the key); workerd decrypts.
      if (!encrypt) {
        throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', 'RSA_PKCS1_PADDING is no longer supported for private decryption, this can be reverted with --security-revert=CVE-2023-46809');
      }
      return Buffer.from(host.nodeRsaPkcs1(s.handle, data));
    }
    if (padding !== constants.RSA_PKCS1_OAEP_PADDING) {
      throw notImplemented('RSA encryption with padding other than RSA_PKCS1_OAEP_PADDING or RSA_PKCS1_PADDING')();
    }
    const params = { hash: hashName(options.oaepHash ?? 'sha1') };
    if (options.oaepLabel !== undefined) params.label = view(options.oaepLabel, 'oaepLabel');
    return Buffer.from(host.cryptoCipher('RSA-OAEP', s.handle, params, data, encrypt));
  }

  const publicEncrypt = (key, buffer) => rsaEncryption(key, buffer, true);
  const privateDecrypt = (key, buffer) => rsaEncryption(key, buffer, false);

  // privateEncrypt/publicDecrypt: PKCS#1 v1.5 type 1 padding (the
  // default) or none, on AWS-LC (`nodeRsaRaw`).
  function rsaRaw(key, buffer, op) {
    const { padding = constants.RSA_PKCS1_PADDING, encoding } = keyOptions(key);
    const s = slotsOf(prepareKey(key, op === 'privateEncrypt'));
    const data = view(buffer, 'buffer', typeof buffer === 'string' ? encoding : undefined);
    return Buffer.from(host.nodeRsaRaw(s.handle, op, padding, data));
  }

  const privateEncrypt = (key, buffer) => rsaRaw(key, buffer, 'privateEncrypt');
  const publicDecrypt = (key, buffer) => rsaRaw(key, buffer, 'publicDecrypt');

  function diffieHellman({ privateKey, publicKey } = {}) {
    const priv = slotsOf(prepareKey(privateKey, true));
    const pub = slotsOf(prepareKey(publicKey, false));
    if (priv.asym !== pub.asym || (priv.asym !== 'ec' && priv.asym !== 'x25519')) {
      throw codedError(TypeError, 'ERR_CRYPTO_INCOMPATIBLE_KEY', 'Incompatible key types for Diffie-Hellman');
    }
    const algorithm = priv.asym === 'ec' ? 'ECDH' : 'X25519';
    return Buffer.from(host.cryptoDeriveBits(algorithm, priv.handle, { public: pub.handle }, null));
  }

  const encoded = (buffer, encoding) => (encoding === undefined || encoding === 'buffer' ? buffer : buffer.toString(encoding));

  // createECDH(curve): generated keys only (setPrivateKey is not there).
  class ECDH {
    #curve;
    #pair;

    constructor(curve) {
      this.#curve = CURVES[curve];
      if (this.#curve === undefined) throw codedError(TypeError, 'ERR_CRYPTO_INVALID_CURVE', 'Invalid EC curve name');
    }

    generateKeys(encoding, format) {
      this.#pair = host.cryptoGenerateKey('ec', this.#curve, 0, undefined);
      return this.getPublicKey(encoding, format);
    }

    #keys() {
      if (this.#pair === undefined) throw codedError(Error, 'ERR_CRYPTO_ECDH_INVALID_PUBLIC_KEY', 'Failed to get ECDH keys: none generated');
      return this.#pair;
    }

    getPublicKey(encoding, format) {
      if (format !== undefined && format !== 'uncompressed') throw notImplemented(`ECDH public keys in ${format} form`)();
      return encoded(Buffer.from(host.cryptoExportKey(this.#keys()[0][0], 'raw')), encoding);
    }

    getPrivateKey(encoding) {
      const { d } = JSON.parse(host.cryptoExportKey(this.#keys()[1][0], 'jwk'));
      return encoded(Buffer.from(d, 'base64url'), encoding);
    }

    computeSecret(otherPublicKey, inputEncoding, outputEncoding) {
      const raw = view(otherPublicKey, 'otherPublicKey', inputEncoding);
      const [peer] = host.cryptoImportKey('ec', this.#curve, 'raw', raw);
      const secret = Buffer.from(host.cryptoDeriveBits('ECDH', this.#keys()[1][0], { public: peer }, null));
      return encoded(secret, outputEncoding);
    }
  }
  ECDH.prototype.setPrivateKey = notImplemented('crypto.ECDH.setPrivateKey');
  ECDH.prototype.setPublicKey = notImplemented('crypto.ECDH.setPublicKey');

  return {
    constants,
    KeyObject,
    SecretKeyObject,
    PublicKeyObject,
    PrivateKeyObject,
    createSecretKey,
    createPublicKey,
    createPrivateKey,
    generateKeyPair,
    generateKeyPairSync,
    generateKey,
    generateKeySync,
    sign,
    verify,
    createSign: (algorithm) => new Sign(algorithm),
    createVerify: (algorithm) => new Verify(algorithm),
    Sign,
    Verify,
    publicEncrypt,
    privateDecrypt,
    privateEncrypt,
    publicDecrypt,
    diffieHellman,
    createECDH: (curve) => new ECDH(curve),
    ECDH,
    getCurves: () => ['prime256v1', 'secp384r1', 'secp521r1'],
    isKeyObject: (value) => slots.has(value),
  };
};
