// node:util — format, inspect (`internal/util_inspect`), promisify,
// callbackify, inherits, deprecate, types, isDeepStrictEqual, styleText,
// the deprecated is* checks, TextEncoder, TextDecoder, aborted,
// getCallSites, log; MIMEType (`internal/util_mime`), parseArgs
// (`util_args`), parseEnv (`util_env`), diff (`util_diff`), the system
// error names (`util_errors`). Runs as function
// (host, internal, require, module, exports).

const { types, inspect, colors, stripColors, numericSeparators, BUILT_INS } = require('node:internal/util_inspect');
const { codedError, invalidArgType } = require('node:internal/errors');
const { MIMEType, MIMEParams } = require('node:internal/util_mime');
const { parseArgs } = require('node:internal/util_args');
const { parseEnv } = require('node:internal/util_env');
const { diff } = require('node:internal/util_diff');
const { getSystemErrorName, getSystemErrorMessage, getSystemErrorMap, convertProcessSignalToExitCode } = require('node:internal/util_errors');

const kCustomPromisify = Symbol.for('nodejs.util.promisify.custom');
const tag = (value) => Object.prototype.toString.call(value).slice(8, -1);

// === format ===

function format(...args) {
  return formatArgs(undefined, args);
}

function formatWithOptions(inspectOptions, ...args) {
  if (inspectOptions === null || typeof inspectOptions !== 'object') {
    throw invalidArgType('inspectOptions', 'of type object', inspectOptions);
  }
  return formatArgs(inspectOptions, args);
}

// Whether `String(value)` would only give a built-in's text (then `%s`
// inspects the value instead).
function builtInToString(value) {
  if (types.isProxy(value)) return true;
  if (typeof value.toString !== 'function') return true;
  if (Object.prototype.hasOwnProperty.call(value, 'toString')) return false;
  let pointer = value;
  do {
    pointer = Object.getPrototypeOf(pointer);
  } while (pointer !== null && !Object.prototype.hasOwnProperty.call(pointer, 'toString'));
  if (pointer === null) return true;
  const descriptor = Object.getOwnPropertyDescriptor(pointer, 'constructor');
  return descriptor !== undefined && typeof descriptor.value === 'function' && BUILT_INS.has(descriptor.value.name);
}

const useSeparators = (options) => options?.numericSeparator ?? inspect.defaultOptions.numericSeparator;

function number(value, options) {
  if (Object.is(value, -0)) return '-0';
  return useSeparators(options) ? numericSeparators(`${value}`) : `${value}`;
}

function bigint(value, options) {
  return `${useSeparators(options) ? numericSeparators(`${value}`) : value}n`;
}

function directive(code, arg, options) {
  switch (code) {
    case 's':
      if (typeof arg === 'number') return number(arg, options);
      if (typeof arg === 'bigint') return bigint(arg, options);
      if (typeof arg !== 'object' || arg === null || !builtInToString(arg)) return String(arg);
      return inspect(arg, { ...options, depth: 0, colors: false, compact: 3 });
    case 'j':
      try {
        return `${JSON.stringify(arg)}`;
      } catch (error) {
        if (error instanceof TypeError && /^Converting circular structure to JSON/.test(error.message)) return '[Circular]';
        throw error;
      }
    case 'd':
      if (typeof arg === 'bigint') return bigint(arg, options);
      if (typeof arg === 'symbol') return 'NaN';
      return number(Number(arg), options);
    case 'O': return inspect(arg, options);
    case 'o': return inspect(arg, { ...options, showHidden: true, showProxy: true, depth: 4 });
    case 'i':
      if (typeof arg === 'bigint') return bigint(arg, options);
      if (typeof arg === 'symbol') return 'NaN';
      return number(parseInt(arg), options);
    case 'f': return typeof arg === 'symbol' ? 'NaN' : number(parseFloat(arg), options);
    case 'c': return '';
    default: return undefined;
  }
}

function formatArgs(options, args) {
  const first = args[0];
  let a = 0;
  let out = '';
  let join = '';
  if (typeof first === 'string') {
    if (args.length === 1) return first;
    let last = 0;
    for (let i = 0; i < first.length - 1; i++) {
      if (first.charCodeAt(i) !== 37) continue;
      const next = first[i + 1];
      if (a + 1 !== args.length) {
        const text = next === '%' ? '%' : directive(next, args[a + 1], options);
        if (text === undefined) continue;
        if (next !== '%') a++;
        out += first.slice(last, i) + text;
        last = i + 2;
        i++;
      } else if (next === '%') {
        out += first.slice(last, i);
        last = i + 1;
        i++;
      }
    }
    if (last !== 0) {
      a++;
      join = ' ';
      if (last < first.length) out += first.slice(last);
    }
  }
  for (; a < args.length; a++) {
    const value = args[a];
    out += join + (typeof value === 'string' ? value : inspect(value, options));
    join = ' ';
  }
  return out;
}

// A Worker's output is no terminal: as workerd (and Node for a stream that
// is not a TTY), the text comes back without colors unless
// `validateStream: false`; the format names are checked either way.
function styleText(format, text, { validateStream = true } = {}) {
  if (typeof text !== 'string') throw invalidArgType('text', 'of type string', text);
  const names = Array.isArray(format) ? format : [format];
  let open = '';
  let close = '';
  for (const name of names) {
    if (name === 'none') continue;
    const code = typeof name === 'string' ? colors[name] : undefined;
    if (!Array.isArray(code)) {
      const allowed = Object.keys(colors).map((c) => `'${c}'`).join(', ');
      throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'format' must be one of: ${allowed}. Received ${inspect(name)}`);
    }
    open += `\u001b[${code[0]}m`;
    close = `\u001b[${code[1]}m${close}`;
  }
  return validateStream ? text : `${open}${text}${close}`;
}

function stripVTControlCharacters(text) {
  if (typeof text !== 'string') throw invalidArgType('str', 'of type string', text);
  return stripColors(text);
}

// === functions ===

function promisify(original) {
  if (typeof original !== 'function') throw invalidArgType('original', 'of type function', original);
  if (original[kCustomPromisify]) {
    const fn = original[kCustomPromisify];
    if (typeof fn !== 'function') throw invalidArgType('util.promisify.custom', 'of type function', fn);
    return Object.defineProperty(fn, kCustomPromisify, { value: fn, enumerable: false, writable: false, configurable: true });
  }
  function promisified(...args) {
    return new Promise((resolve, reject) => {
      Reflect.apply(original, this, [...args, (error, ...values) => {
        if (error) reject(error);
        else resolve(values[0]);
      }]);
    });
  }
  Object.setPrototypeOf(promisified, Object.getPrototypeOf(original));
  Object.defineProperty(promisified, kCustomPromisify, { value: promisified, enumerable: false, writable: false, configurable: true });
  return Object.defineProperties(promisified, Object.getOwnPropertyDescriptors(original));
}
promisify.custom = kCustomPromisify;

function falsyRejection(reason) {
  const error = codedError(Error, 'ERR_FALSY_VALUE_REJECTION', 'Promise was rejected with falsy value');
  error.reason = reason;
  return error;
}

function callbackify(original) {
  if (typeof original !== 'function') throw invalidArgType('original', 'of type function', original);
  function callbackified(...args) {
    const callback = args.pop();
    if (typeof callback !== 'function') throw invalidArgType('last argument', 'of type function', callback);
    const done = callback.bind(this);
    Reflect.apply(original, this, args).then(
      (value) => queueMicrotask(() => done(null, value)),
      (reason) => queueMicrotask(() => done(reason || falsyRejection(reason))),
    );
  }
  const descriptors = Object.getOwnPropertyDescriptors(original);
  if (typeof descriptors.length?.value === 'number') descriptors.length.value++;
  if (typeof descriptors.name?.value === 'string') descriptors.name.value += 'Callbackified';
  Object.defineProperties(callbackified, { length: descriptors.length ?? { value: 1 }, name: descriptors.name ?? { value: 'callbackified' } });
  return callbackified;
}

function inherits(constructor, superConstructor) {
  if (constructor == null) throw invalidArgType('ctor', 'of type function', constructor);
  if (superConstructor == null) throw invalidArgType('superCtor', 'of type function', superConstructor);
  if (superConstructor.prototype === undefined) throw invalidArgType('superCtor.prototype', 'of type object', superConstructor.prototype);
  Object.defineProperty(constructor, 'super_', { value: superConstructor, writable: true, configurable: true });
  Object.setPrototypeOf(constructor.prototype, superConstructor.prototype);
}

const warnedCodes = new Set();

function deprecate(fn, message, code) {
  if (typeof fn !== 'function') throw invalidArgType('fn', 'of type function', fn);
  let warned = false;
  function deprecated(...args) {
    if (!warned && !(code !== undefined && warnedCodes.has(code))) {
      warned = true;
      if (code !== undefined) warnedCodes.add(code);
      console.warn(`${code ? `[${code}] ` : ''}DeprecationWarning: ${message}`);
    }
    return new.target ? Reflect.construct(fn, args, new.target) : Reflect.apply(fn, this, args);
  }
  Object.setPrototypeOf(deprecated, fn);
  if (fn.prototype) deprecated.prototype = fn.prototype;
  return deprecated;
}

function extend(target, source) {
  if (source === null || typeof source !== 'object') return target;
  for (const key of Object.keys(source)) target[key] = source[key];
  return target;
}

// Node's strict deep equality: Object.is for primitives; for objects the
// same prototype and kind, equal own enumerable keys (symbols too), dates,
// boxed values, regexps, errors and binary data by value, Sets and Maps by
// content (an object member matched by a deep-equal one), and a cycle
// taken as equal while its pair is being compared.
function isDeepStrictEqual(a, b) {
  return deepStrict(a, b, new Map());
}

function deepStrict(a, b, inProgress) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || tag(a) !== tag(b)) return false;
  const pairs = inProgress.get(a);
  if (pairs?.has(b)) return true;
  if (!sameInnerValue(a, b)) return false;
  if (pairs) pairs.add(b);
  else inProgress.set(a, new Set([b]));
  try {
    return sameKeys(a, b, inProgress) && sameEntries(a, b, inProgress);
  } finally {
    inProgress.get(a).delete(b);
  }
}

const bytesOf = (v) => (ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v));

// What an object holds besides its keys: a date's time, a boxed value, a
// regexp, an error's name and message, binary data's bytes.
function sameInnerValue(a, b) {
  if (types.isDate(a)) return Object.is(Date.prototype.getTime.call(a), Date.prototype.getTime.call(b));
  if (types.isRegExp(a)) return a.source === b.source && a.flags === b.flags && a.lastIndex === b.lastIndex;
  if (types.isBoxedPrimitive(a)) return types.isBoxedPrimitive(b) && Object.is(a.valueOf(), b.valueOf());
  if (types.isNativeError(a) || a instanceof Error) return a.name === b.name && a.message === b.message;
  if (ArrayBuffer.isView(a) || types.isAnyArrayBuffer(a)) {
    const [x, y] = [bytesOf(a), bytesOf(b)];
    return x.length === y.length && x.every((byte, i) => byte === y[i]);
  }
  return true;
}

function enumerableKeys(value) {
  const keys = Reflect.ownKeys(value).filter((k) => Object.prototype.propertyIsEnumerable.call(value, k));
  return types.isTypedArray(value) ? keys.filter((k) => typeof k !== 'string' || String(k >>> 0) !== k) : keys;
}

function sameKeys(a, b, inProgress) {
  if (Array.isArray(a) && a.length !== b.length) return false;
  const keys = enumerableKeys(a);
  if (keys.length !== enumerableKeys(b).length) return false;
  return keys.every((k) => Object.prototype.propertyIsEnumerable.call(b, k) && deepStrict(a[k], b[k], inProgress));
}

// One unmatched member of `candidates` deep-equal to `wanted` (by `equal`),
// taken out of the candidates.
function takeMatch(candidates, equal) {
  for (const candidate of candidates) {
    if (equal(candidate)) {
      candidates.delete(candidate);
      return true;
    }
  }
  return false;
}

function sameEntries(a, b, inProgress) {
  if (types.isSet(a)) {
    if (a.size !== b.size) return false;
    const loose = new Set([...b].filter((v) => typeof v === 'object' && v !== null && !a.has(v)));
    return [...a].every((v) => b.has(v) || (typeof v === 'object' && v !== null && takeMatch(loose, (w) => deepStrict(v, w, inProgress))));
  }
  if (types.isMap(a)) {
    if (a.size !== b.size) return false;
    const loose = new Set([...b.keys()].filter((k) => typeof k === 'object' && k !== null && !a.has(k)));
    return [...a].every(([k, v]) => (b.has(k)
      ? deepStrict(v, b.get(k), inProgress)
      : typeof k === 'object' && k !== null && takeMatch(loose, (w) => deepStrict(k, w, inProgress) && deepStrict(v, b.get(w), inProgress))));
  }
  return true;
}

// === the rest of workerd's util ===

// Resolves with the abort event once `signal` aborts (at once, without
// one, when it already has).
async function aborted(signal, resource) {
  if (!(signal instanceof AbortSignal)) throw invalidArgType('signal', 'an instance of AbortSignal', signal);
  if (resource === null || (typeof resource !== 'object' && typeof resource !== 'function')) {
    throw invalidArgType('resource', 'of type object', resource);
  }
  if (signal.aborted) return undefined;
  return new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
}

function transferableAbortSignal(signal) {
  if (!(signal instanceof AbortSignal)) throw invalidArgType('signal', 'an instance of AbortSignal', signal);
  return signal;
}

// The caller's frames as workerd gives them: function and script names,
// line and column (1-based), the frame of getCallSites itself left out.
function getCallSites(frameCount = 10, options = undefined, caller = undefined) {
  if (typeof frameCount === 'object' && frameCount !== null) [frameCount, options] = [10, frameCount];
  if (!(typeof frameCount === 'number' && frameCount >= 1 && frameCount <= 200)) {
    throw new Error('Frame count should be between 1 and 200 inclusive.');
  }
  if (options !== undefined && (options === null || typeof options !== 'object')) throw invalidArgType('options', 'of type object', options);
  const holder = {};
  const [prepare, limit] = [Error.prepareStackTrace, Error.stackTraceLimit];
  Error.prepareStackTrace = (_, frames) => frames;
  Error.stackTraceLimit = frameCount;
  try {
    Error.captureStackTrace(holder, caller ?? getCallSites);
    const frames = Array.isArray(holder.stack) ? holder.stack : [];
    return frames.map((frame) => ({
      functionName: frame.getFunctionName() ?? '',
      scriptName: frame.getScriptNameOrSourceURL() ?? '',
      lineNumber: frame.getLineNumber() ?? 0,
      columnNumber: frame.getColumnNumber() ?? 0,
      column: frame.getColumnNumber() ?? 0,
    }));
  } finally {
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// `util.log`: "25 Nov 04:21:15 - text" to the console.
function log(...args) {
  const now = new Date();
  const two = (n) => `${n}`.padStart(2, '0');
  const time = `${two(now.getHours())}:${two(now.getMinutes())}:${two(now.getSeconds())}`;
  console.log(`${now.getDate()} ${MONTHS[now.getMonth()]} ${time} - ${format(...args)}`);
}

function notInWorkers(name) {
  return function () {
    throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', `The ${name} method is not implemented`);
  };
}

function debuglog() {
  const log = () => {};
  log.enabled = false;
  return log;
}

module.exports = {
  format,
  formatWithOptions,
  inspect,
  promisify,
  callbackify,
  inherits,
  deprecate,
  debuglog,
  debug: debuglog,
  isDeepStrictEqual,
  styleText,
  MIMEType,
  MIMEParams,
  parseArgs,
  parseEnv,
  diff,
  getSystemErrorName,
  getSystemErrorMessage,
  getSystemErrorMap,
  convertProcessSignalToExitCode,
  aborted,
  transferableAbortController: () => new AbortController(),
  transferableAbortSignal,
  getCallSites,
  getCallSite: function getCallSite(frameCount, options) {
    return getCallSites(frameCount, options, getCallSite);
  },
  log,
  setTraceSigInt: () => {},
  _errnoException: notInWorkers('_errnoException'),
  _exceptionWithHostPort: notInWorkers('_exceptionWithHostPort'),
  stripVTControlCharacters,
  toUSVString: (text) => String(text).toWellFormed(),
  types,
  TextEncoder: globalThis.TextEncoder,
  TextDecoder: globalThis.TextDecoder,
  _extend: extend,
  isArray: Array.isArray,
  isBoolean: (v) => typeof v === 'boolean',
  isBuffer: (v) => v instanceof Uint8Array && v.constructor?.name === 'Buffer' && typeof v.readUInt8 === 'function',
  isDate: (v) => types.isDate(v),
  isError: (v) => types.isNativeError(v) || v instanceof Error,
  isFunction: (v) => typeof v === 'function',
  isNull: (v) => v === null,
  isNullOrUndefined: (v) => v === null || v === undefined,
  isNumber: (v) => typeof v === 'number',
  isObject: (v) => v !== null && typeof v === 'object',
  isPrimitive: (v) => v === null || (typeof v !== 'object' && typeof v !== 'function'),
  isRegExp: (v) => types.isRegExp(v),
  isString: (v) => typeof v === 'string',
  isSymbol: (v) => typeof v === 'symbol',
  isUndefined: (v) => v === undefined,
};
