// node:crypto's checkPrime(Sync) and generatePrime(Sync) on AWS-LC's
// primality test and prime generation (`nodePrime*`,
// host/node/crypto_prime.rs), run on the isolate's thread and stopped with
// the turn; numbers of at most 8192 bits. The callback forms answer in a
// later microtask, as node:crypto's other callbacks here. Part of the
// `node:crypto` unit, hidden from Workers. Runs as function (host,
// internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { codedError, invalidArgType } = require('node:internal/errors');

const BIG_OR_BYTES = 'of type bigint or an instance of ArrayBuffer, TypedArray, Buffer, or DataView';
const INT_MAX = 2 ** 31 - 1;

function outOfRange(name, range, value) {
  return codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be ${range}. Received ${value}`);
}

// A bigint, ArrayBuffer or view as big-endian bytes.
function numberBytes(value, name) {
  if (typeof value === 'bigint') {
    if (value < 0n) throw outOfRange(name, '>= 0', `${value}n`);
    const hex = value.toString(16);
    return new Uint8Array(Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex'));
  }
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  throw invalidArgType(name, BIG_OR_BYTES, value);
}

function toBigInt(bytes) {
  return bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes).toString('hex')}`);
}

function optionsOf(options) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'of type object', options);
  return options;
}

function checkPrimeSync(candidate, options) {
  const bytes = numberBytes(candidate, 'candidate');
  const { checks = 0 } = optionsOf(options);
  if (typeof checks !== 'number') throw invalidArgType('options.checks', 'of type number', checks);
  if (!Number.isInteger(checks) || checks < 0 || checks > INT_MAX) {
    throw outOfRange('options.checks', `>= 0 && <= ${INT_MAX}`, checks);
  }
  return host.nodePrimeCheck(bytes, checks);
}

// [bits, safe, add, rem, bigint], checked as Node checks them.
function primeArgs(size, options) {
  if (typeof size !== 'number') throw invalidArgType('size', 'of type number', size);
  if (!Number.isInteger(size)) throw outOfRange('size', 'an integer', size);
  if (size < 1 || size > INT_MAX) throw outOfRange('size', `>= 1 && <= ${INT_MAX}`, size);
  const { safe = false, bigint = false } = optionsOf(options);
  let { add, rem } = optionsOf(options);
  if (typeof safe !== 'boolean') throw invalidArgType('options.safe', 'of type boolean', safe);
  if (typeof bigint !== 'boolean') throw invalidArgType('options.bigint', 'of type boolean', bigint);
  if (add !== undefined) add = numberBytes(add, 'options.add');
  if (rem !== undefined) rem = numberBytes(rem, 'options.rem');
  if (add !== undefined) {
    const a = toBigInt(add);
    if (a === 0n || a.toString(2).length > size) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', 'invalid options.add');
    if (rem !== undefined && toBigInt(rem) >= a) throw codedError(RangeError, 'ERR_OUT_OF_RANGE', 'invalid options.rem');
  } else {
    rem = undefined;
  }
  return [size, safe, add, rem, bigint];
}

function generatePrimeSync(size, options) {
  const [bits, safe, add, rem, bigint] = primeArgs(size, options);
  const prime = host.nodePrimeGenerate(bits, safe, add, rem);
  return bigint ? toBigInt(prime) : prime.buffer.slice(prime.byteOffset, prime.byteOffset + prime.byteLength);
}

// The callback form: the answer (or the search's error) in a later
// microtask.
function withCallback(sync) {
  return function (first, options, callback) {
    if (typeof options === 'function') { callback = options; options = undefined; }
    if (typeof callback !== 'function') throw invalidArgType('callback', 'of type function', callback);
    let value;
    let error = null;
    try { value = sync(first, options); } catch (e) {
      // Bad arguments throw at once, as in Node; a failed search calls back.
      if (typeof e.code === 'string') throw e;
      error = e;
    }
    queueMicrotask(() => (error === null ? callback(null, value) : callback(error)));
  };
}

module.exports = {
  checkPrime: withCallback(checkPrimeSync),
  checkPrimeSync,
  generatePrime: withCallback(generatePrimeSync),
  generatePrimeSync,
};
