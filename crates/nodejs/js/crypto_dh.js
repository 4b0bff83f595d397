// node:crypto's finite-field Diffie-Hellman (createDiffieHellman,
// getDiffieHellman / createDiffieHellmanGroup, DiffieHellman,
// DiffieHellmanGroup) on AWS-LC's DH (`nodeDh*`, host/node/crypto_dh.rs):
// RFC 3526's groups modp5 and modp14–modp18, a given prime, or a prime
// generated on the isolate's thread (stopped with the turn). Part of the
// `node:crypto` unit, hidden from Workers. Runs as function (host, internal,
// require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType } = require('node:internal/errors');

function bytesOf(value, name, encoding) {
  if (typeof value === 'string') return Buffer.from(value, encoding);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw invalidArgType(name, 'of type string or an instance of ArrayBuffer, Buffer, TypedArray or DataView', value);
}

const encoded = (bytes, encoding) => {
  const buffer = Buffer.from(bytes);
  return encoding === undefined || encoding === 'buffer' ? buffer : buffer.toString(encoding);
};

// A generator given as a number, as big-endian bytes.
function generatorBytes(generator, encoding) {
  if (generator === undefined) return new Uint8Array([2]);
  if (typeof generator === 'number') {
    if (!Number.isInteger(generator) || generator < 2 || generator > 0xffffffff) {
      throw codedError(Error, 'ERR_OSSL_DH_BAD_GENERATOR', 'error:05000066:Diffie-Hellman routines::bad generator');
    }
    const out = Buffer.alloc(4);
    out.writeUInt32BE(generator);
    return new Uint8Array(out.subarray(out.findIndex((b) => b !== 0)));
  }
  return new Uint8Array(bytesOf(generator, 'generator', encoding));
}

class DiffieHellman {
  #handle;
  #verifyError;

  constructor(prime, primeEncoding, generator, generatorEncoding) {
    if (prime === kGroup) {
      this.#handle = primeEncoding;
      return;
    }
    if (typeof prime === 'number') {
      const g = primeEncoding === undefined ? 2 : primeEncoding;
      if (!Number.isInteger(prime)) throw invalidArgType('sizeOrKey', 'of type number', prime);
      if (!Number.isInteger(g)) throw invalidArgType('generator', 'of type number', g);
      this.#handle = host.nodeDhGenerate(prime, g);
      return;
    }
    if (typeof primeEncoding !== 'string') {
      generatorEncoding = generator;
      generator = primeEncoding;
      primeEncoding = undefined;
    }
    const p = new Uint8Array(bytesOf(prime, 'sizeOrKey', primeEncoding));
    this.#handle = host.nodeDhNew(p, generatorBytes(generator, generatorEncoding));
  }

  get verifyError() {
    if (this.#verifyError === undefined) {
      const flags = host.nodeDhGet(this.#handle, 'check');
      this.#verifyError = flags === undefined ? 0 : Buffer.from(flags).readInt32BE();
    }
    return this.#verifyError;
  }

  generateKeys(encoding) {
    if (!host.nodeDhGenerateKeys(this.#handle)) throw new Error('Key generation failed');
    return this.getPublicKey(encoding);
  }

  computeSecret(otherPublicKey, inputEncoding, outputEncoding) {
    const peer = new Uint8Array(bytesOf(otherPublicKey, 'otherPublicKey', inputEncoding));
    const secret = host.nodeDhCompute(this.#handle, peer);
    if (typeof secret === 'number') {
      if (secret & 1) throw codedError(RangeError, 'ERR_CRYPTO_INVALID_KEYLEN', 'Supplied key is too small');
      if (secret & 2) throw codedError(RangeError, 'ERR_CRYPTO_INVALID_KEYLEN', 'Supplied key is too large');
      throw codedError(Error, 'ERR_CRYPTO_INVALID_KEYTYPE', 'Invalid key');
    }
    return encoded(secret, outputEncoding);
  }

  #field(what, missing, encoding) {
    const value = host.nodeDhGet(this.#handle, what);
    if (value === undefined) throw codedError(Error, 'ERR_CRYPTO_INVALID_STATE', missing);
    return encoded(value, encoding);
  }

  getPrime(encoding) {
    return this.#field('p', 'No prime', encoding);
  }

  getGenerator(encoding) {
    return this.#field('g', 'No generator', encoding);
  }

  getPublicKey(encoding) {
    return this.#field('pub', 'No public key - did you forget to generate one?', encoding);
  }

  getPrivateKey(encoding) {
    return this.#field('priv', 'No private key - did you forget to generate one?', encoding);
  }

  setPublicKey(key, encoding) {
    host.nodeDhSetKey(this.#handle, false, new Uint8Array(bytesOf(key, 'key', encoding)));
    return this;
  }

  setPrivateKey(key, encoding) {
    host.nodeDhSetKey(this.#handle, true, new Uint8Array(bytesOf(key, 'key', encoding)));
    return this;
  }
}

const kGroup = Symbol('group');

class DiffieHellmanGroup extends DiffieHellman {
  constructor(name) {
    const handle = typeof name === 'string' ? host.nodeDhNew(name, undefined) : undefined;
    if (handle === undefined) throw codedError(Error, 'ERR_CRYPTO_UNKNOWN_DH_GROUP', 'Unknown DH group');
    super(kGroup, handle);
  }
}
// A group's keys are its own: Node's DiffieHellmanGroup has no setters.
DiffieHellmanGroup.prototype.setPublicKey = undefined;
DiffieHellmanGroup.prototype.setPrivateKey = undefined;

module.exports = {
  DiffieHellman,
  DiffieHellmanGroup,
  createDiffieHellman: (prime, primeEncoding, generator, generatorEncoding) => new DiffieHellman(prime, primeEncoding, generator, generatorEncoding),
  getDiffieHellman: (name) => new DiffieHellmanGroup(name),
};
