// 14_crypto.js — Web Crypto: crypto.getRandomValues / randomUUID, crypto.subtle
// (every SubtleCrypto operation workerd offers), CryptoKey, crypto.DigestStream.
// This file normalises algorithms, checks parameters, key types and usages, and
// builds the CryptoKey objects; key material stays in the host (HOST.md
// `crypto*`), a CryptoKey holds only an opaque handle to it.
'use strict';

const kCreate = Symbol('create');
const INTEGER_ARRAYS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;

function domError(name, message) {
  return new internal.DOMException(message, name);
}

// The host throws its errors as the class the spec wants: a DOMException
// (`DataError`, `NotSupportedError`, …) or a TypeError (HOST.md).

// === algorithm names and normalisation (Web Crypto §18.4) ===

const HASHES = ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512'];
const AES = ['AES-GCM', 'AES-CBC', 'AES-CTR', 'AES-KW'];
const RSA = ['RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP'];
const SIGNERS = ['HMAC', 'RSASSA-PKCS1-v1_5', 'RSA-PSS', 'ECDSA', 'Ed25519'];
const CIPHERS = ['AES-GCM', 'AES-CBC', 'AES-CTR', 'RSA-OAEP'];
const KEY_ALGORITHMS = ['HMAC', ...RSA, 'ECDSA', 'ECDH', 'Ed25519', 'X25519', ...AES];
const OPS = {
  digest: [...HASHES, 'MD5'],
  sign: SIGNERS,
  verify: SIGNERS,
  encrypt: CIPHERS,
  decrypt: CIPHERS,
  generateKey: KEY_ALGORITHMS,
  importKey: [...KEY_ALGORITHMS, 'PBKDF2', 'HKDF'],
  deriveBits: ['PBKDF2', 'HKDF', 'ECDH', 'X25519'],
  wrapKey: ['AES-KW'],
  unwrapKey: ['AES-KW'],
  getKeyLength: [...AES, 'HMAC', 'HKDF', 'PBKDF2'],
};
const CANONICAL = new Map([...OPS.importKey, ...OPS.digest].map((n) => [n.toLowerCase(), n]));

// The dictionary members each (operation, algorithm) reads: [member, type, required].
function members(op, name) {
  switch (op) {
    case 'generateKey':
      if (name === 'HMAC') return [['hash', 'hash', true], ['length', 'ulong', false]];
      if (RSA.includes(name)) return [['hash', 'hash', true], ['modulusLength', 'ulong', true], ['publicExponent', 'bigint', true]];
      if (name === 'ECDSA' || name === 'ECDH') return [['namedCurve', 'string', true]];
      if (AES.includes(name)) return [['length', 'ushort', true]];
      return [];
    case 'importKey':
      if (name === 'HMAC') return [['hash', 'hash', true], ['length', 'ulong', false]];
      if (RSA.includes(name)) return [['hash', 'hash', true]];
      if (name === 'ECDSA' || name === 'ECDH') return [['namedCurve', 'string', true]];
      return [];
    case 'sign':
    case 'verify':
      if (name === 'RSA-PSS') return [['saltLength', 'ulong', true]];
      if (name === 'ECDSA') return [['hash', 'hash', true]];
      return [];
    case 'encrypt':
    case 'decrypt':
      if (name === 'AES-GCM') return [['additionalData', 'bytes', false], ['iv', 'bytes', true], ['tagLength', 'octet', false]];
      if (name === 'AES-CBC') return [['iv', 'bytes', true]];
      if (name === 'AES-CTR') return [['counter', 'bytes', true], ['length', 'octet', true]];
      if (name === 'RSA-OAEP') return [['label', 'bytes', false]];
      return [];
    case 'deriveBits':
      if (name === 'PBKDF2') return [['hash', 'hash', true], ['iterations', 'ulong', true], ['salt', 'bytes', true]];
      if (name === 'HKDF') return [['hash', 'hash', true], ['info', 'bytes', true], ['salt', 'bytes', true]];
      if (name === 'ECDH' || name === 'X25519') return [['public', 'key', true]];
      return [];
    case 'getKeyLength':
      if (AES.includes(name)) return [['length', 'ushort', true]];
      if (name === 'HMAC') return [['hash', 'hash', true], ['length', 'ulong', false]];
      return [];
    default:
      return [];
  }
}

const RANGES = { ulong: 0xffffffff, ushort: 0xffff, octet: 0xff };

function convertMember(type, value, what) {
  switch (type) {
    case 'hash': {
      const name = normalize('digest', value).name;
      if (!HASHES.includes(name)) throw domError('NotSupportedError', `${what}: unsupported hash ${name}`);
      return name;
    }
    case 'bytes': {
      const bytes = internal.bufferSourceCopy(value);
      if (bytes === null) throw new TypeError(`${what} is not of type 'BufferSource'.`);
      return bytes;
    }
    case 'bigint':
      if (!(value instanceof Uint8Array)) throw new TypeError(`${what} is not of type 'Uint8Array'.`);
      return value.slice();
    case 'string':
      return internal.toDOMString(value);
    case 'key':
      if (!keySlots.has(value)) throw new TypeError(`${what} is not of type 'CryptoKey'.`);
      return value;
    default: {
      // [EnforceRange] integers.
      const n = internal.toNumber(value);
      if (!Number.isFinite(n)) throw new TypeError(`${what} is not a finite number.`);
      const t = Math.trunc(n);
      if (t < 0 || t > RANGES[type]) throw new TypeError(`${what} is outside the accepted range.`);
      return t;
    }
  }
}

function normalize(op, algorithm) {
  let dict;
  if (typeof algorithm === 'string') dict = { name: algorithm };
  else if (internal.isObject(algorithm)) dict = algorithm;
  else dict = { name: internal.toDOMString(algorithm) };
  if (dict.name === undefined) throw new TypeError('Algorithm: name: Missing or not a string');
  const given = internal.toDOMString(dict.name);
  const name = CANONICAL.get(given.toLowerCase());
  if (name === undefined || !OPS[op].includes(name)) throw domError('NotSupportedError', `Unrecognized name: ${given}`);
  const out = { name };
  for (const [member, type, required] of members(op, name)) {
    const value = dict[member];
    if (value === undefined) {
      if (required) throw new TypeError(`${name}: the member '${member}' is required.`);
      continue;
    }
    out[member] = convertMember(type, value, `${name}: ${member}`);
  }
  return out;
}

// === CryptoKey ===

const keySlots = new WeakMap();
const USAGES = ['encrypt', 'decrypt', 'sign', 'verify', 'deriveKey', 'deriveBits', 'wrapKey', 'unwrapKey'];

function slots(key) {
  const s = keySlots.get(key);
  if (s === undefined) throw new TypeError('Illegal invocation');
  return s;
}

class CryptoKey {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
  }

  get type() { return slots(this).type; }
  get extractable() { return slots(this).extractable; }
  get algorithm() { return slots(this).algorithm; }
  get usages() { return slots(this).usagesArray; }
}
internal.enumerableMembers(CryptoKey, ['type', 'extractable', 'algorithm', 'usages']);
internal.setToStringTag(CryptoKey.prototype, 'CryptoKey');

function newKey(handle, type, extractable, algorithm, usages) {
  const key = new CryptoKey(kCreate);
  keySlots.set(key, { handle, type, extractable, algorithm, usages, usagesArray: [...usages] });
  return key;
}

function requireKey(key, what) {
  if (!keySlots.has(key)) throw new TypeError(`${what} is not of type 'CryptoKey'.`);
  return keySlots.get(key);
}

function toUsages(value) {
  if (!internal.isObject(value) || typeof value[Symbol.iterator] !== 'function') {
    throw new TypeError('keyUsages is not iterable.');
  }
  const out = [];
  for (const u of value) {
    const s = internal.toDOMString(u);
    if (!USAGES.includes(s)) throw new TypeError(`'${s}' is not a valid KeyUsage.`);
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

// Which usages each key type of an algorithm allows.
function allowedUsages(name, type) {
  switch (name) {
    case 'HMAC':
      return ['sign', 'verify'];
    case 'RSASSA-PKCS1-v1_5':
    case 'RSA-PSS':
    case 'ECDSA':
    case 'Ed25519':
      return type === 'private' ? ['sign'] : ['verify'];
    case 'RSA-OAEP':
      return type === 'private' ? ['decrypt', 'unwrapKey'] : ['encrypt', 'wrapKey'];
    case 'ECDH':
    case 'X25519':
      return type === 'private' ? ['deriveKey', 'deriveBits'] : [];
    case 'AES-KW':
      return ['wrapKey', 'unwrapKey'];
    case 'PBKDF2':
    case 'HKDF':
      return ['deriveKey', 'deriveBits'];
    default:
      return ['encrypt', 'decrypt', 'wrapKey', 'unwrapKey'];
  }
}

function isSecretAlgorithm(name) {
  return name === 'HMAC' || name === 'PBKDF2' || name === 'HKDF' || AES.includes(name);
}

function hostKind(name) {
  if (isSecretAlgorithm(name)) return 'secret';
  if (RSA.includes(name)) return 'rsa';
  if (name === 'ECDSA' || name === 'ECDH') return 'ec';
  return name.toLowerCase();
}

function checkUsages(usages, allowed) {
  for (const u of usages) {
    if (!allowed.includes(u)) throw domError('SyntaxError', `Usage '${u}' is not allowed for this key.`);
  }
}

const HASH_BITS = { 'SHA-1': '1', 'SHA-256': '256', 'SHA-384': '384', 'SHA-512': '512' };
const HASH_BLOCK_BITS = { 'SHA-1': 512, 'SHA-256': 512, 'SHA-384': 1024, 'SHA-512': 1024 };
const EC_JWK_ALG = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };

// The JWK "alg" a key of this algorithm has (undefined: none is checked or set).
function jwkAlg(algorithm) {
  const { name } = algorithm;
  const hash = algorithm.hash && HASH_BITS[algorithm.hash.name];
  if (name === 'HMAC') return `HS${hash}`;
  if (name === 'RSASSA-PKCS1-v1_5') return `RS${hash}`;
  if (name === 'RSA-PSS') return `PS${hash}`;
  if (name === 'RSA-OAEP') return hash === '1' ? 'RSA-OAEP' : `RSA-OAEP-${hash}`;
  if (AES.includes(name)) return `A${algorithm.length}${name.slice(4)}`;
  if (name === 'ECDSA') return EC_JWK_ALG[algorithm.namedCurve];
  return undefined;
}

function checkJwk(jwk, algorithm, extractable, usages, keyAlgorithm) {
  const use = SIGNERS.includes(algorithm.name) ? 'sig' : 'enc';
  if (usages.length > 0 && jwk.use !== undefined && jwk.use !== use) {
    throw domError('DataError', `The JWK "use" must be "${use}".`);
  }
  if (jwk.key_ops !== undefined) {
    if (!Array.isArray(jwk.key_ops)) throw domError('DataError', 'The JWK "key_ops" must be an array.');
    for (const u of usages) {
      if (!jwk.key_ops.includes(u)) throw domError('DataError', `The JWK "key_ops" does not allow '${u}'.`);
    }
  }
  if (jwk.ext === false && extractable) throw domError('DataError', 'The JWK is not extractable.');
  if (jwk.alg !== undefined && !jwkAlgMatches(internal.toDOMString(jwk.alg), algorithm, keyAlgorithm)) {
    throw domError('DataError', `The JWK "alg" ${jwk.alg} does not fit ${algorithm.name}.`);
  }
}

// Whether a JWK's "alg" fits the key being imported (`keyAlgorithm` undefined:
// not known yet, checked again once it is).
function jwkAlgMatches(alg, algorithm, keyAlgorithm) {
  switch (algorithm.name) {
    case 'Ed25519':
      return alg === 'Ed25519' || alg === 'EdDSA';
    case 'X25519':
    case 'ECDH':
      // Ignored for key agreement keys (w3c/webcrypto#401).
      return true;
    default: {
      const expected = keyAlgorithm === undefined ? undefined : jwkAlg(keyAlgorithm);
      return expected === undefined || alg === expected;
    }
  }
}

// The `algorithm` a new key shows (§ per-algorithm KeyAlgorithm dictionaries).
function keyAlgorithm(algorithm, info) {
  const { name } = algorithm;
  if (name === 'HMAC') return { name, hash: { name: algorithm.hash }, length: info.length };
  if (RSA.includes(name)) {
    return { name, modulusLength: info.modulusLength, publicExponent: info.publicExponent, hash: { name: algorithm.hash } };
  }
  if (name === 'ECDSA' || name === 'ECDH') return { name, namedCurve: info.namedCurve };
  if (AES.includes(name)) return { name, length: info.length };
  return { name };
}

// importKey after normalisation; also the end of unwrapKey and deriveKey.
function importNormalized(format, keyData, algorithm, extractable, usages) {
  const { name } = algorithm;
  let type;
  if (isSecretAlgorithm(name)) {
    const formats = name === 'PBKDF2' || name === 'HKDF' ? ['raw'] : ['raw', 'jwk'];
    if (!formats.includes(format)) throw domError('NotSupportedError', `Format '${format}' is not supported for ${name}.`);
    if ((name === 'PBKDF2' || name === 'HKDF') && extractable) {
      throw domError('SyntaxError', `${name} keys cannot be extractable.`);
    }
    type = 'secret';
  } else if (format === 'raw') {
    if (RSA.includes(name)) throw domError('NotSupportedError', `Format 'raw' is not supported for ${name}.`);
    type = 'public';
  } else if (format === 'spki') {
    type = 'public';
  } else if (format === 'pkcs8') {
    type = 'private';
  } else {
    type = keyData.d !== undefined ? 'private' : 'public';
  }
  checkUsages(usages, allowedUsages(name, type));
  let data = keyData;
  if (format === 'jwk') {
    // Checked before the material: hash-dependent "alg" for HMAC and RSA, curve-dependent for ECDSA.
    const expect = name === 'HMAC' || RSA.includes(name) || name === 'ECDSA' ? keyAlgorithm(algorithm, {}) : undefined;
    if (expect !== undefined && name === 'ECDSA') expect.namedCurve = algorithm.namedCurve;
    checkJwk(keyData, algorithm, extractable, usages, expect);
    data = JSON.stringify(keyData);
  }
  const [handle, info] = host.cryptoImportKey(hostKind(name), algorithm.namedCurve ?? '', format, data);
  if (info.type !== type) throw domError('DataError', `Expected a ${type} key.`);
  if (AES.includes(name)) {
    if (![128, 192, 256].includes(info.length)) throw domError('DataError', 'An AES key is 128, 192 or 256 bits.');
    if (format === 'jwk') checkJwk(keyData, algorithm, extractable, usages, keyAlgorithm(algorithm, info));
  }
  if (name === 'HMAC') {
    if (info.length === 0) throw domError('DataError', 'An HMAC key must not be empty.');
    if (algorithm.length !== undefined) {
      if (algorithm.length > info.length || algorithm.length <= info.length - 8) {
        throw domError('DataError', 'The HMAC length does not match the key data.');
      }
      info.length = algorithm.length;
    }
  }
  if ((type === 'secret' || type === 'private') && usages.length === 0) {
    throw domError('SyntaxError', 'The usages must not be empty.');
  }
  return newKey(handle, type, extractable, keyAlgorithm(algorithm, info), usages);
}

function exportNormalized(format, key) {
  const s = slots(key);
  if (!s.extractable) throw domError('InvalidAccessError', 'The key is not extractable.');
  const out = host.cryptoExportKey(s.handle, format);
  if (format !== 'jwk') return out.buffer;
  const jwk = JSON.parse(out);
  const alg = s.algorithm.name === 'Ed25519' ? 'Ed25519' : jwkAlg(s.algorithm);
  if (alg !== undefined && s.algorithm.name !== 'ECDSA') jwk.alg = alg;
  jwk.key_ops = [...s.usages];
  jwk.ext = s.extractable;
  return jwk;
}

function checkOp(algorithm, s, usage) {
  if (algorithm.name !== s.algorithm.name) {
    throw domError('InvalidAccessError', `The key is for ${s.algorithm.name}, not ${algorithm.name}.`);
  }
  if (!s.usages.includes(usage)) throw domError('InvalidAccessError', `The key does not allow '${usage}'.`);
}

// Parameters for the host: the key's hash for HMAC and RSA, the rest as normalised.
function hostParams(algorithm, s) {
  const params = { ...algorithm };
  if (s.algorithm.hash !== undefined && algorithm.name !== 'ECDSA') params.hash = s.algorithm.hash.name;
  if (params.public !== undefined) params.public = slots(params.public).handle;
  return params;
}

// The host checks these again; here they only make the error come first.
function checkRsaParameters(algorithm) {
  const { modulusLength } = algorithm;
  if (modulusLength < 1024 || modulusLength > 4096 || modulusLength % 128 !== 0) {
    throw domError('OperationError', 'modulusLength must be a multiple of 128 from 1024 to 4096');
  }
  const e = algorithm.publicExponent;
  let start = 0;
  while (start < e.length && e[start] === 0) start++;
  const hex = Array.from(e.subarray(start), (b) => b.toString(16).padStart(2, '0')).join('');
  if (hex !== '03' && hex !== '010001') throw domError('OperationError', 'The publicExponent must be 3 or 65537');
}

function getKeyLength(algorithm) {
  if (AES.includes(algorithm.name)) {
    if (![128, 192, 256].includes(algorithm.length)) throw domError('OperationError', 'An AES key is 128, 192 or 256 bits.');
    return algorithm.length;
  }
  if (algorithm.name === 'HMAC') {
    const length = algorithm.length ?? HASH_BLOCK_BITS[algorithm.hash];
    if (length === 0) throw new TypeError('HMAC: length must not be zero.');
    return length;
  }
  return null;
}

async function deriveNormalized(algorithm, s, length) {
  if (algorithm.public !== undefined) {
    const p = slots(algorithm.public);
    if (p.type !== 'public') throw domError('InvalidAccessError', 'The public key is not a public key.');
    if (p.algorithm.name !== algorithm.name) throw domError('InvalidAccessError', 'The public key is for another algorithm.');
    if (p.algorithm.namedCurve !== s.algorithm.namedCurve) throw domError('InvalidAccessError', 'The keys are on different curves.');
  }
  return host.cryptoDeriveBits(algorithm.name, s.handle, hostParams(algorithm, s), length);
}

function encryptOp(algorithm, s, data, encrypt) {
  return host.cryptoCipher(algorithm.name, s.handle, hostParams(algorithm, s), data, encrypt);
}

function bytesArg(value, what) {
  const bytes = internal.bufferSourceCopy(value);
  if (bytes === null) throw new TypeError(`${what} is not of type 'ArrayBuffer or ArrayBufferView'.`);
  return bytes;
}

const FORMATS = ['raw', 'spki', 'pkcs8', 'jwk'];
function toFormat(value) {
  const format = internal.toDOMString(value);
  if (!FORMATS.includes(format)) throw new TypeError(`'${format}' is not a valid KeyFormat.`);
  return format;
}

function keyDataArg(format, keyData) {
  if (format === 'jwk') {
    if (!internal.isObject(keyData)) throw new TypeError("keyData is not of type 'JsonWebKey'.");
    return keyData;
  }
  return bytesArg(keyData, 'keyData');
}

// Web Crypto runs each operation "in parallel" after the synchronous steps
// (argument conversion, algorithm normalisation): each method marks that
// point with `await undefined`, so every later result or error arrives in a
// later microtask, as the spec (and WPT) expect, not synchronously.

function checkThis(self, op, args, required) {
  if (!(self instanceof SubtleCrypto)) throw new TypeError('Illegal invocation');
  internal.requireArgs(args, required, `Failed to execute '${op}' on 'SubtleCrypto'`);
}

class SubtleCrypto {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
  }

  async digest(algorithm, data) {
    checkThis(this, 'digest', arguments.length, 2);
    const bytes = bytesArg(data, "Failed to execute 'digest' on 'SubtleCrypto': parameter 2");
    const { name } = normalize('digest', algorithm);
    await undefined; // in parallel
    return host.digest(name, bytes);
  }

  async sign(algorithm, key, data) {
    checkThis(this, 'sign', arguments.length, 3);
    const alg = normalize('sign', algorithm);
    const s = requireKey(key, 'key');
    const bytes = bytesArg(data, 'data');
    await undefined; // in parallel
    checkOp(alg, s, 'sign');
    return host.cryptoSign(alg.name, s.handle, hostParams(alg, s), bytes);
  }

  async verify(algorithm, key, signature, data) {
    checkThis(this, 'verify', arguments.length, 4);
    const alg = normalize('verify', algorithm);
    const s = requireKey(key, 'key');
    const sig = bytesArg(signature, 'signature');
    const bytes = bytesArg(data, 'data');
    await undefined; // in parallel
    checkOp(alg, s, 'verify');
    return host.cryptoVerify(alg.name, s.handle, hostParams(alg, s), sig, bytes);
  }

  async encrypt(algorithm, key, data) {
    checkThis(this, 'encrypt', arguments.length, 3);
    const alg = normalize('encrypt', algorithm);
    const s = requireKey(key, 'key');
    const bytes = bytesArg(data, 'data');
    await undefined; // in parallel
    checkOp(alg, s, 'encrypt');
    return encryptOp(alg, s, bytes, true);
  }

  async decrypt(algorithm, key, data) {
    checkThis(this, 'decrypt', arguments.length, 3);
    const alg = normalize('decrypt', algorithm);
    const s = requireKey(key, 'key');
    const bytes = bytesArg(data, 'data');
    await undefined; // in parallel
    checkOp(alg, s, 'decrypt');
    return encryptOp(alg, s, bytes, false);
  }

  async generateKey(algorithm, extractable, keyUsages) {
    checkThis(this, 'generateKey', arguments.length, 3);
    const alg = normalize('generateKey', algorithm);
    const usages = toUsages(keyUsages);
    extractable = Boolean(extractable);
    const { name } = alg;
    // The algorithm's parameters are checked at once (as WPT's failures.js
    // expects); usages only in the generation steps, after a microtask.
    let bits;
    if (name === 'HMAC') {
      bits = alg.length ?? HASH_BLOCK_BITS[alg.hash];
      if (bits === 0) throw domError('OperationError', 'HMAC: length must not be zero.');
    } else if (AES.includes(name)) {
      bits = alg.length;
      if (![128, 192, 256].includes(bits)) throw domError('OperationError', 'An AES key is 128, 192 or 256 bits.');
    } else if (RSA.includes(name)) {
      checkRsaParameters(alg);
    } else if (alg.namedCurve !== undefined && !EC_JWK_ALG[alg.namedCurve]) {
      throw domError('NotSupportedError', `Unsupported named curve: ${alg.namedCurve}`);
    }
    await undefined; // in parallel
    if (isSecretAlgorithm(name)) {
      checkUsages(usages, allowedUsages(name, 'secret'));
      if (usages.length === 0) throw domError('SyntaxError', 'The usages must not be empty.');
      const [handle, info] = host.cryptoGenerateKey('secret', '', Math.ceil(bits / 8));
      info.length = bits;
      return newKey(handle, 'secret', extractable, keyAlgorithm(alg, info), usages);
    }
    checkUsages(usages, [...allowedUsages(name, 'public'), ...allowedUsages(name, 'private')]);
    const publicUsages = usages.filter((u) => allowedUsages(name, 'public').includes(u));
    const privateUsages = usages.filter((u) => allowedUsages(name, 'private').includes(u));
    if (privateUsages.length === 0) throw domError('SyntaxError', 'The usages must not be empty.');
    const pair = await host.cryptoGenerateKey(hostKind(name), alg.namedCurve ?? '', alg.modulusLength ?? 0, alg.publicExponent);
    const [[publicHandle, publicInfo], [privateHandle, privateInfo]] = pair;
    return {
      publicKey: newKey(publicHandle, 'public', true, keyAlgorithm(alg, publicInfo), publicUsages),
      privateKey: newKey(privateHandle, 'private', extractable, keyAlgorithm(alg, privateInfo), privateUsages),
    };
  }

  async deriveKey(algorithm, baseKey, derivedKeyType, extractable, keyUsages) {
    checkThis(this, 'deriveKey', arguments.length, 5);
    const alg = normalize('deriveBits', algorithm);
    const importAlg = normalize('importKey', derivedKeyType);
    const length = getKeyLength(normalize('getKeyLength', derivedKeyType));
    const usages = toUsages(keyUsages);
    const s = requireKey(baseKey, 'baseKey');
    await undefined; // in parallel
    checkOp(alg, s, 'deriveKey');
    const bits = await deriveNormalized(alg, s, length);
    return importNormalized('raw', new Uint8Array(bits), importAlg, Boolean(extractable), usages);
  }

  async deriveBits(algorithm, baseKey, length = null) {
    checkThis(this, 'deriveBits', arguments.length, 2);
    const alg = normalize('deriveBits', algorithm);
    const s = requireKey(baseKey, 'baseKey');
    const bits = length === null || length === undefined ? null : convertMember('ulong', length, 'length');
    await undefined; // in parallel
    checkOp(alg, s, 'deriveBits');
    return deriveNormalized(alg, s, bits);
  }

  async importKey(format, keyData, algorithm, extractable, keyUsages) {
    checkThis(this, 'importKey', arguments.length, 5);
    const fmt = toFormat(format);
    const data = keyDataArg(fmt, keyData);
    const alg = normalize('importKey', algorithm);
    const usages = toUsages(keyUsages);
    await undefined; // in parallel
    return importNormalized(fmt, data, alg, Boolean(extractable), usages);
  }

  async exportKey(format, key) {
    checkThis(this, 'exportKey', arguments.length, 2);
    const fmt = toFormat(format);
    requireKey(key, 'key');
    await undefined; // in parallel
    return exportNormalized(fmt, key);
  }

  async wrapKey(format, key, wrappingKey, wrapAlgorithm) {
    checkThis(this, 'wrapKey', arguments.length, 4);
    const fmt = toFormat(format);
    const alg = normalizeWrap('wrapKey', 'encrypt', wrapAlgorithm);
    requireKey(key, 'key');
    const s = requireKey(wrappingKey, 'wrappingKey');
    await undefined; // in parallel
    checkOp(alg, s, 'wrapKey');
    const exported = exportNormalized(fmt, key);
    const bytes = fmt === 'jwk' ? host.utf8Encode(JSON.stringify(exported)) : new Uint8Array(exported);
    return encryptOp(alg, s, bytes, true);
  }

  async unwrapKey(format, wrappedKey, unwrappingKey, unwrapAlgorithm, unwrappedKeyAlgorithm, extractable, keyUsages) {
    checkThis(this, 'unwrapKey', arguments.length, 7);
    const fmt = toFormat(format);
    const wrapped = bytesArg(wrappedKey, 'wrappedKey');
    const alg = normalizeWrap('unwrapKey', 'decrypt', unwrapAlgorithm);
    const importAlg = normalize('importKey', unwrappedKeyAlgorithm);
    const usages = toUsages(keyUsages);
    const s = requireKey(unwrappingKey, 'unwrappingKey');
    await undefined; // in parallel
    checkOp(alg, s, 'unwrapKey');
    const bytes = new Uint8Array(encryptOp(alg, s, wrapped, false));
    let data = bytes;
    if (fmt === 'jwk') {
      try {
        data = JSON.parse(internal.utf8Decode(bytes));
      } catch {
        throw domError('DataError', 'The unwrapped key is not a JWK.');
      }
      if (!internal.isObject(data)) throw domError('DataError', 'The unwrapped key is not a JWK.');
    }
    return importNormalized(fmt, data, importAlg, Boolean(extractable), usages);
  }

  // workerd extension: constant-time comparison of two equal-length buffers.
  timingSafeEqual(a, b) {
    const x = internal.bufferSourceView(a), y = internal.bufferSourceView(b);
    if (x === null || y === null) throw new TypeError('timingSafeEqual: arguments must be ArrayBuffer or ArrayBufferView.');
    if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
    return host.timingSafeEqual(x, y);
  }
}
internal.enumerableMembers(SubtleCrypto, ['digest', 'encrypt', 'decrypt', 'sign', 'verify', 'generateKey',
  'deriveKey', 'deriveBits', 'importKey', 'exportKey', 'wrapKey', 'unwrapKey']);
internal.setToStringTag(SubtleCrypto.prototype, 'SubtleCrypto');

// wrapKey/unwrapKey take AES-KW, or any encrypt algorithm.
function normalizeWrap(op, fallback, algorithm) {
  try {
    return normalize(op, algorithm);
  } catch (e) {
    if (!(e instanceof internal.DOMException) || e.name !== 'NotSupportedError') throw e;
    return normalize(fallback, algorithm);
  }
}

// workerd extension: a WritableStream whose `digest` promise resolves with the
// hash of everything written to it.
class DigestStream extends WritableStream {
  #digest;

  constructor(algorithm) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'DigestStream'");
    const { name } = normalize('digest', algorithm);
    const handle = host.digestStreamNew(name);
    let resolve, reject;
    const digest = new Promise((res, rej) => { resolve = res; reject = rej; });
    // Nobody may ever look at the digest of an aborted stream.
    digest.then(undefined, () => {});
    super({
      write(chunk) {
        const bytes = typeof chunk === 'string' ? host.utf8Encode(chunk) : internal.bufferSourceView(chunk);
        if (bytes === null) throw new TypeError('DigestStream: chunks must be strings, ArrayBuffers or ArrayBufferViews.');
        host.digestStreamWrite(handle, bytes);
      },
      close() {
        resolve(host.digestStreamEnd(handle));
      },
      abort(reason) {
        reject(reason);
      },
    });
    this.#digest = digest;
  }

  get digest() {
    return this.#digest;
  }
}
internal.enumerableMembers(DigestStream, ['digest']);
internal.setToStringTag(DigestStream.prototype, 'DigestStream');

const subtle = new SubtleCrypto(kCreate);

class Crypto {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
  }

  get subtle() { return subtle; }

  getRandomValues(array) {
    if (!(this instanceof Crypto)) throw new TypeError('Illegal invocation');
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getRandomValues' on 'Crypto'");
    if (!internal.isArrayBufferView(array)) {
      throw new TypeError("Failed to execute 'getRandomValues' on 'Crypto': parameter 1 is not of type 'ArrayBufferView'.");
    }
    const tag = typedArrayTag.call(array);
    if (!INTEGER_ARRAYS.includes(tag)) {
      throw new internal.DOMException(
        `Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is of type '${tag || 'DataView'}', which is not an integer array type.`,
        'TypeMismatchError');
    }
    if (array.byteLength > 65536) {
      throw new internal.DOMException(
        `Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536).`,
        'QuotaExceededError');
    }
    if (array.byteLength > 0) host.randomFill(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }

  randomUUID() {
    if (!(this instanceof Crypto)) throw new TypeError('Illegal invocation');
    return host.randomUUID();
  }
}
Object.defineProperty(Crypto.prototype, 'DigestStream', { value: DigestStream, writable: true, configurable: true });
internal.enumerableMembers(Crypto, ['subtle', 'getRandomValues', 'randomUUID']);
internal.setToStringTag(Crypto.prototype, 'Crypto');

// node:crypto's KeyObject shares a CryptoKey's key material (KeyObject.from,
// keyObject.toCryptoKey): the handle of a CryptoKey, and a CryptoKey for a
// handle (`info` as host.cryptoImportKey answers it).
internal.cryptoKeySlots = (key) => requireKey(key, 'key');
internal.newCryptoKey = (handle, info, algorithm, extractable, usages) =>
  newKey(handle, info.type, extractable, keyAlgorithm(algorithm, info), toUsages(usages));

internal.defineGlobal('crypto', new Crypto(kCreate));
internal.defineGlobal('Crypto', Crypto);
internal.defineGlobal('SubtleCrypto', SubtleCrypto);
internal.defineGlobal('CryptoKey', CryptoKey);
