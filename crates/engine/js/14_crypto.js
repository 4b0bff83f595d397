// 14_crypto.js — crypto.getRandomValues / randomUUID and crypto.subtle.digest
// (Web Crypto). Other SubtleCrypto operations reject with NotSupportedError.
'use strict';

const kCreate = Symbol('create');
const DIGESTS = new Map([['sha-1', 'SHA-1'], ['sha-256', 'SHA-256'], ['sha-384', 'SHA-384'], ['sha-512', 'SHA-512']]);
const INTEGER_ARRAYS = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;

function notSupported(op) {
  return Promise.reject(new internal.DOMException(`SubtleCrypto.${op}() is not supported by this runtime.`, 'NotSupportedError'));
}

class SubtleCrypto {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
  }

  digest(algorithm, data) {
    try {
      if (!(this instanceof SubtleCrypto)) throw new TypeError('Illegal invocation');
      internal.requireArgs(arguments.length, 2, "Failed to execute 'digest' on 'SubtleCrypto'");
      const bytes = internal.bufferSourceCopy(data);
      if (bytes === null) {
        throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': parameter 2 is not of type 'ArrayBuffer or ArrayBufferView'.");
      }
      let name;
      if (typeof algorithm === 'string') {
        name = algorithm;
      } else if (internal.isObject(algorithm)) {
        if (algorithm.name === undefined) {
          throw new TypeError("Failed to execute 'digest' on 'SubtleCrypto': Algorithm: name: Missing or not a string");
        }
        name = internal.toDOMString(algorithm.name);
      } else {
        name = internal.toDOMString(algorithm);
      }
      const normalized = DIGESTS.get(name.toLowerCase());
      if (normalized === undefined) {
        throw new internal.DOMException(`Unrecognized name: ${name}`, 'NotSupportedError');
      }
      return Promise.resolve(host.digest(normalized, bytes));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  // workerd extension: constant-time comparison of two equal-length buffers.
  timingSafeEqual(a, b) {
    const x = internal.bufferSourceView(a), y = internal.bufferSourceView(b);
    if (x === null || y === null) throw new TypeError('timingSafeEqual: arguments must be ArrayBuffer or ArrayBufferView.');
    if (x.byteLength !== y.byteLength) throw new RangeError('Input buffers must have the same byte length');
    let diff = 0;
    for (let i = 0; i < x.byteLength; i++) diff |= x[i] ^ y[i];
    return diff === 0;
  }

  encrypt() { return notSupported('encrypt'); }
  decrypt() { return notSupported('decrypt'); }
  sign() { return notSupported('sign'); }
  verify() { return notSupported('verify'); }
  generateKey() { return notSupported('generateKey'); }
  deriveKey() { return notSupported('deriveKey'); }
  deriveBits() { return notSupported('deriveBits'); }
  importKey() { return notSupported('importKey'); }
  exportKey() { return notSupported('exportKey'); }
  wrapKey() { return notSupported('wrapKey'); }
  unwrapKey() { return notSupported('unwrapKey'); }
}
internal.enumerableMembers(SubtleCrypto, ['digest', 'encrypt', 'decrypt', 'sign', 'verify', 'generateKey',
  'deriveKey', 'deriveBits', 'importKey', 'exportKey', 'wrapKey', 'unwrapKey']);
internal.setToStringTag(SubtleCrypto.prototype, 'SubtleCrypto');

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
internal.enumerableMembers(Crypto, ['subtle', 'getRandomValues', 'randomUUID']);
internal.setToStringTag(Crypto.prototype, 'Crypto');

class CryptoKey {
  constructor() { internal.illegalConstructor(); }
}
internal.setToStringTag(CryptoKey.prototype, 'CryptoKey');

internal.defineGlobal('crypto', new Crypto(kCreate));
internal.defineGlobal('Crypto', Crypto);
internal.defineGlobal('SubtleCrypto', SubtleCrypto);
internal.defineGlobal('CryptoKey', CryptoKey);
