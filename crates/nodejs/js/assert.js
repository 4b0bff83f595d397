// node:assert — Node's assertions (legacy mode: equal is ==, deepEqual is
// loose) and `assert.strict` (node:assert/strict, where equal is
// strictEqual). A failure throws AssertionError (code ERR_ASSERTION) with
// actual, expected and operator. Runs as function (host, internal, require,
// module, exports).

const { inspect, isDeepStrictEqual } = require('node:util');
const { invalidArgType } = require('node:internal/errors');

class AssertionError extends Error {
  constructor(options) {
    if (options === null || typeof options !== 'object') {
      const error = new TypeError('The "options" argument must be of type object.');
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    const { message, actual, expected, operator } = options;
    const generated = message === undefined || message === null;
    super(generated ? describe(actual, expected, operator) : String(message));
    this.generatedMessage = generated;
    this.code = 'ERR_ASSERTION';
    this.actual = actual;
    this.expected = expected;
    this.operator = operator;
    if (Error.captureStackTrace) Error.captureStackTrace(this, options.stackStartFn || options.stackStartFunction);
  }

  get name() { return 'AssertionError'; }

  toString() { return `${this.name} [${this.code}]: ${this.message}`; }
}

const OPERATORS = {
  '==': 'Expected values to be loosely equal:',
  '!=': 'Expected "actual" to be loosely unequal to:',
  strictEqual: 'Expected values to be strictly equal:',
  notStrictEqual: 'Expected "actual" to be strictly unequal to:',
  deepEqual: 'Expected values to be loosely deep-equal:',
  notDeepEqual: '"actual" deepEqual "expected"',
  deepStrictEqual: 'Expected values to be strictly deep-equal:',
  notDeepStrictEqual: 'Expected "actual" not to be strictly deep-equal to:',
};

function describe(actual, expected, operator) {
  if (operator === 'fail') return 'Failed';
  const head = OPERATORS[operator];
  if (head === undefined) return `${inspect(actual)} ${operator} ${inspect(expected)}`;
  return `${head}\n\n${inspect(actual)}\n\nshould ${operator.startsWith('not') || operator === '!=' ? 'not ' : ''}equal\n\n${inspect(expected)}`;
}

function fail(options, stackStartFn) {
  if (options.message instanceof Error) throw options.message;
  throw new AssertionError({ ...options, stackStartFn });
}

// Loose deep equality (assert.deepEqual): == for primitives, prototypes
// ignored, own enumerable keys compared.
function isDeepLooseEqual(a, b, seen = new Map()) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // eslint-disable-next-line eqeqeq
    return (typeof a !== 'object' || a === null) && (typeof b !== 'object' || b === null) && (a == b || (Number.isNaN(a) && Number.isNaN(b)));
  }
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a instanceof RegExp && b instanceof RegExp) return String(a) === String(b);
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    if (a.byteLength !== b.byteLength) return false;
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    return x.every((v, i) => v === y[i]);
  }
  if (a instanceof Map && b instanceof Map) {
    return a.size === b.size && [...a].every(([k, v]) => b.has(k) && isDeepLooseEqual(v, b.get(k), seen));
  }
  if (a instanceof Set && b instanceof Set) return a.size === b.size && [...a].every((v) => b.has(v));
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) => Object.prototype.hasOwnProperty.call(b, k) && isDeepLooseEqual(a[k], b[k], seen));
}

function ok(...args) {
  if (args.length === 0) {
    fail({ message: 'No value argument passed to `assert.ok()`', actual: undefined, expected: true, operator: '==' }, ok);
  }
  const [value, message] = args;
  if (!value) fail({ message: message ?? 'The expression evaluated to a falsy value', actual: value, expected: true, operator: '==' }, ok);
}

function equal(actual, expected, message) {
  // eslint-disable-next-line eqeqeq
  if (!(actual == expected || (Number.isNaN(actual) && Number.isNaN(expected)))) fail({ message, actual, expected, operator: '==' }, equal);
}

function notEqual(actual, expected, message) {
  // eslint-disable-next-line eqeqeq
  if (actual == expected || (Number.isNaN(actual) && Number.isNaN(expected))) fail({ message, actual, expected, operator: '!=' }, notEqual);
}

function strictEqual(actual, expected, message) {
  if (!Object.is(actual, expected)) fail({ message, actual, expected, operator: 'strictEqual' }, strictEqual);
}

function notStrictEqual(actual, expected, message) {
  if (Object.is(actual, expected)) fail({ message, actual, expected, operator: 'notStrictEqual' }, notStrictEqual);
}

function deepEqual(actual, expected, message) {
  if (!isDeepLooseEqual(actual, expected)) fail({ message, actual, expected, operator: 'deepEqual' }, deepEqual);
}

function notDeepEqual(actual, expected, message) {
  if (isDeepLooseEqual(actual, expected)) fail({ message, actual, expected, operator: 'notDeepEqual' }, notDeepEqual);
}

function deepStrictEqual(actual, expected, message) {
  if (!isDeepStrictEqual(actual, expected)) fail({ message, actual, expected, operator: 'deepStrictEqual' }, deepStrictEqual);
}

function notDeepStrictEqual(actual, expected, message) {
  if (isDeepStrictEqual(actual, expected)) fail({ message, actual, expected, operator: 'notDeepStrictEqual' }, notDeepStrictEqual);
}

const invalidArg = invalidArgType;

// Whether `error` is what `expected` (a class, a validator, a RegExp, an
// object of properties or an Error) describes; fails the assertion if not.
function checkError(error, expected, message, caller) {
  if (expected === undefined) return;
  if (typeof expected === 'function') {
    if (expected.prototype !== undefined && error instanceof expected) return;
    if (Error.isPrototypeOf(expected) || expected === Error) {
      fail({ message: message ?? `The error is expected to be an instance of "${expected.name}". Received "${error && error.constructor && error.constructor.name}"`, actual: error, expected, operator: caller.name }, caller);
    }
    if (expected.call({}, error) === true) return;
    fail({ message: message ?? `The ${expected.name ? `"${expected.name}" ` : ''}validation function is expected to return "true". Received false`, actual: error, expected, operator: caller.name }, caller);
  }
  if (expected instanceof RegExp) {
    if (expected.test(String(error))) return;
    fail({ message: message ?? `The input did not match the regular expression ${expected}. Input:\n\n${inspect(String(error))}\n`, actual: error, expected, operator: caller.name }, caller);
  }
  if (typeof expected !== 'object' || expected === null) throw invalidArg('expected', 'of type function or an instance of Error, RegExp, or Object', expected);
  const keys = Object.keys(expected);
  if (expected instanceof Error) keys.push('name', 'message');
  for (const key of keys) {
    const want = expected[key];
    const got = error === null || error === undefined ? undefined : error[key];
    const matches = want instanceof RegExp && typeof got === 'string' ? want.test(got) : isDeepStrictEqual(got, want);
    if (!matches) {
      fail({ message: message ?? `Expected values to be strictly deep-equal:\n\n${key}: ${inspect(got)}\n\nshould equal\n\n${key}: ${inspect(want)}`, actual: error, expected, operator: caller.name }, caller);
    }
  }
}

const NOTHING = Symbol('nothing thrown');

function throws(fn, expected, message) {
  if (typeof fn !== 'function') throw invalidArg('fn', 'of type function', fn);
  if (typeof expected === 'string') { message = expected; expected = undefined; }
  let error = NOTHING;
  try { fn(); } catch (e) { error = e; }
  if (error === NOTHING) {
    fail({ message: message ?? `Missing expected exception${expected && expected.name ? ` (${expected.name})` : ''}.`, actual: undefined, expected, operator: 'throws' }, throws);
  }
  checkError(error, expected, message, throws);
}

function doesNotThrow(fn, expected, message) {
  if (typeof expected === 'string') { message = expected; expected = undefined; }
  try { fn(); } catch (error) {
    fail({ message: message ?? `Got unwanted exception.\nActual message: "${error && error.message}"`, actual: error, expected, operator: 'doesNotThrow' }, doesNotThrow);
  }
}

async function settle(promiseOrFn) {
  if (typeof promiseOrFn === 'function') {
    const value = promiseOrFn();
    if (!value || typeof value.then !== 'function') throw invalidArg('promiseFn', 'a function returning a Promise', value);
    return value;
  }
  if (!promiseOrFn || typeof promiseOrFn.then !== 'function') throw invalidArg('promiseFn', 'of type function or an instance of Promise', promiseOrFn);
  return promiseOrFn;
}

async function rejects(promiseOrFn, expected, message) {
  if (typeof expected === 'string') { message = expected; expected = undefined; }
  let error = NOTHING;
  try { await settle(promiseOrFn); } catch (e) { error = e; }
  if (error === NOTHING) {
    fail({ message: message ?? `Missing expected rejection${expected && expected.name ? ` (${expected.name})` : ''}.`, actual: undefined, expected, operator: 'rejects' }, rejects);
  }
  checkError(error, expected, message, rejects);
}

async function doesNotReject(promiseOrFn, expected, message) {
  if (typeof expected === 'string') { message = expected; expected = undefined; }
  try { await settle(promiseOrFn); } catch (error) {
    fail({ message: message ?? `Got unwanted rejection.\nActual message: "${error && error.message}"`, actual: error, expected, operator: 'doesNotReject' }, doesNotReject);
  }
}

function match(string, regexp, message) {
  if (!(regexp instanceof RegExp)) throw invalidArg('regexp', 'an instance of RegExp', regexp);
  if (typeof string !== 'string' || !regexp.test(string)) {
    fail({ message: message ?? `The input did not match the regular expression ${regexp}. Input:\n\n${inspect(string)}\n`, actual: string, expected: regexp, operator: 'match' }, match);
  }
}

function doesNotMatch(string, regexp, message) {
  if (!(regexp instanceof RegExp)) throw invalidArg('regexp', 'an instance of RegExp', regexp);
  if (typeof string !== 'string' || regexp.test(string)) {
    fail({ message: message ?? `The input was expected to not match the regular expression ${regexp}. Input:\n\n${inspect(string)}\n`, actual: string, expected: regexp, operator: 'doesNotMatch' }, doesNotMatch);
  }
}

function failNow(message = 'Failed') {
  fail({ message, operator: 'fail' }, failNow);
}

function ifError(value) {
  if (value === null || value === undefined) return;
  const error = new AssertionError({ message: `ifError got unwanted exception: ${value && value.message !== undefined ? value.message : inspect(value)}`, actual: value, expected: null, operator: 'ifError', stackStartFn: ifError });
  throw error;
}

const shared = {
  fail: failNow, ok, notStrictEqual, strictEqual, deepStrictEqual, notDeepStrictEqual,
  throws, doesNotThrow, rejects, doesNotReject, match, doesNotMatch, ifError, AssertionError,
};

// Legacy mode: `assert(value)`, equal is ==.
function assert(...args) { ok(...args); }
Object.assign(assert, shared, { equal, notEqual, deepEqual, notDeepEqual });

// Strict mode: equal is strictEqual, deepEqual is deepStrictEqual.
function strict(...args) { ok(...args); }
Object.assign(strict, shared, {
  equal: strictEqual, notEqual: notStrictEqual, deepEqual: deepStrictEqual, notDeepEqual: notDeepStrictEqual,
});
strict.strict = strict;
assert.strict = strict;

module.exports = assert;
