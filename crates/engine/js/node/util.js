// node:util — format, inspect (the common shapes, on one line when short
// and otherwise one entry a line, as Node prints them), promisify,
// callbackify, inherits, deprecate, types, isDeepStrictEqual, TextEncoder,
// TextDecoder. Runs as function (host, internal, require, module, exports).

const kCustomPromisify = Symbol.for('nodejs.util.promisify.custom');
const kCustomInspect = Symbol.for('nodejs.util.inspect.custom');

const tag = (value) => Object.prototype.toString.call(value).slice(8, -1);
const TypedArray = Object.getPrototypeOf(Uint8Array);
const typedArrayTag = Object.getOwnPropertyDescriptor(TypedArray.prototype, Symbol.toStringTag).get;

const types = {
  isAnyArrayBuffer: (v) => tag(v) === 'ArrayBuffer' || tag(v) === 'SharedArrayBuffer',
  isArrayBuffer: (v) => tag(v) === 'ArrayBuffer',
  isArrayBufferView: (v) => ArrayBuffer.isView(v),
  isTypedArray: (v) => typedArrayTag.call(v) !== undefined,
  isDataView: (v) => ArrayBuffer.isView(v) && typedArrayTag.call(v) === undefined,
  isDate: (v) => tag(v) === 'Date',
  isRegExp: (v) => tag(v) === 'RegExp',
  isMap: (v) => tag(v) === 'Map',
  isSet: (v) => tag(v) === 'Set',
  isWeakMap: (v) => tag(v) === 'WeakMap',
  isWeakSet: (v) => tag(v) === 'WeakSet',
  isPromise: (v) => tag(v) === 'Promise',
  isNativeError: (v) => tag(v) === 'Error',
  isAsyncFunction: (v) => typeof v === 'function' && /^Async/.test(tag(v)),
  isGeneratorFunction: (v) => typeof v === 'function' && /GeneratorFunction$/.test(tag(v)),
  isGeneratorObject: (v) => tag(v) === 'Generator',
  isBoxedPrimitive: (v) => v !== null && typeof v === 'object' && ['Number', 'String', 'Boolean', 'BigInt', 'Symbol'].includes(tag(v)),
  isMapIterator: (v) => tag(v) === 'Map Iterator',
  isSetIterator: (v) => tag(v) === 'Set Iterator',
  isSymbolObject: (v) => typeof v === 'object' && tag(v) === 'Symbol',
  isModuleNamespaceObject: (v) => tag(v) === 'Module',
  isProxy: () => false,
  isExternal: () => false,
};
for (const name of ['Uint8Array', 'Uint8ClampedArray', 'Uint16Array', 'Uint32Array', 'Int8Array', 'Int16Array', 'Int32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
  types[`is${name}`] = (v) => typedArrayTag.call(v) === name;
}

// === inspect ===

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function quote(text) {
  const escaped = text.replace(/[\\\n\t\r\b\f\v]/g, (c) => ({ '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r', '\b': '\\b', '\f': '\\f', '\v': '\\v' })[c]);
  if (!escaped.includes("'")) return `'${escaped}'`;
  if (!escaped.includes('"')) return `"${escaped}"`;
  if (!escaped.includes('`')) return `\`${escaped}\``;
  return `'${escaped.replace(/'/g, "\\'")}'`;
}

function key(name) {
  if (typeof name === 'symbol') return `[${name.toString()}]`;
  return IDENTIFIER.test(name) ? name : quote(name);
}

function primitive(value) {
  switch (typeof value) {
    case 'string': return quote(value);
    case 'number': return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint': return `${value}n`;
    case 'symbol': return value.toString();
    case 'undefined': return 'undefined';
    case 'boolean': return String(value);
    default: return value === null ? 'null' : undefined;
  }
}

function functionText(fn) {
  const source = Function.prototype.toString.call(fn);
  const name = fn.name ? `: ${fn.name}` : ' (anonymous)';
  if (source.startsWith('class')) return `[class ${fn.name || '(anonymous)'}]`;
  const kind = types.isAsyncFunction(fn) ? 'AsyncFunction' : types.isGeneratorFunction(fn) ? 'GeneratorFunction' : 'Function';
  return `[${kind}${name}]`;
}

// Entries of one container: one line when they fit, else one a line.
function wrap(open, entries, close, indent) {
  if (entries.length === 0) return `${open}${close}`.replace(/ $/, '');
  const line = `${open} ${entries.join(', ')} ${close}`;
  if (line.length + indent <= 72 && !line.includes('\n')) return line;
  const pad = ' '.repeat(indent + 2);
  return `${open}\n${pad}${entries.join(`,\n${pad}`)}\n${' '.repeat(indent)}${close}`;
}

function formatValue(value, options, depth, seen, indent) {
  const simple = primitive(value);
  if (simple !== undefined) return simple;
  if (options.customInspect !== false && typeof value[kCustomInspect] === 'function') {
    const custom = value[kCustomInspect](options.depth - depth, options, inspect);
    if (custom !== value) return typeof custom === 'string' ? custom : formatValue(custom, options, depth, seen, indent);
  }
  if (seen.includes(value)) {
    seen.circular = value;
    return '[Circular *1]';
  }
  if (typeof value === 'function') {
    const props = Object.keys(value);
    if (props.length === 0) return functionText(value);
  }
  if (types.isDate(value)) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (types.isRegExp(value)) return RegExp.prototype.toString.call(value);
  if (types.isNativeError(value) || value instanceof Error) return value.stack || `[${Error.prototype.toString.call(value)}]`;
  const constructor = value.constructor?.name;
  const tooDeep = depth > options.depth;
  if (tooDeep) {
    if (Array.isArray(value)) return '[Array]';
    return `[${constructor || 'Object'}]`;
  }
  seen.push(value);
  const text = formatObject(value, options, depth, seen, indent, constructor);
  return seen.circular === value ? `<ref *1> ${text}` : text;
}

function formatObject(value, options, depth, seen, indent, constructor) {
  try {
    const inner = (v) => formatValue(v, options, depth + 1, seen, indent + 2);
    const props = (skip) => Object.keys(value).filter((k) => !skip(k)).map((k) => `${key(k)}: ${inner(value[k])}`);
    const numeric = (k) => String(k >>> 0) === k;
    if (Array.isArray(value)) {
      const items = value.slice(0, 100).map(inner);
      if (value.length > 100) items.push(`... ${value.length - 100} more items`);
      const prefix = constructor && constructor !== 'Array' ? `${constructor}(${value.length}) ` : '';
      return prefix + wrap('[', [...items, ...props(numeric)], ']', indent);
    }
    if (value instanceof Uint8Array && constructor === 'Buffer') {
      const hex = Array.from(value.subarray(0, 50), (b) => b.toString(16).padStart(2, '0')).join(' ');
      return `<Buffer${hex ? ' ' + hex : ''}${value.length > 50 ? ` ... ${value.length - 50} more bytes` : ''}>`;
    }
    if (types.isTypedArray(value)) {
      const items = Array.from(value.subarray(0, 100), (v) => primitive(v));
      return `${typedArrayTag.call(value)}(${value.length}) ${wrap('[', items, ']', indent)}`;
    }
    if (types.isArrayBuffer(value)) {
      const hex = Array.from(new Uint8Array(value, 0, Math.min(50, value.byteLength)), (b) => b.toString(16).padStart(2, '0')).join(' ');
      return `ArrayBuffer { [Uint8Contents]: <${hex}>, byteLength: ${value.byteLength} }`;
    }
    if (types.isMap(value)) {
      const items = Array.from(value, ([k, v]) => `${inner(k)} => ${inner(v)}`);
      return `Map(${value.size}) ${wrap('{', items, '}', indent)}`;
    }
    if (types.isSet(value)) {
      return `Set(${value.size}) ${wrap('{', Array.from(value, inner), '}', indent)}`;
    }
    if (types.isPromise(value)) return 'Promise { <unknown> }';
    if (types.isBoxedPrimitive(value)) return `[${tag(value)}: ${primitive(value.valueOf())}]`;
    const entries = props(() => false);
    for (const symbol of Object.getOwnPropertySymbols(value)) {
      if (Object.getOwnPropertyDescriptor(value, symbol).enumerable) entries.push(`${key(symbol)}: ${inner(value[symbol])}`);
    }
    if (typeof value === 'function') return wrap(`${functionText(value)} {`, entries, '}', indent);
    const proto = Object.getPrototypeOf(value);
    const prefix = proto === null ? '[Object: null prototype] ' : constructor && constructor !== 'Object' ? `${constructor} ` : '';
    return prefix + wrap('{', entries, '}', indent);
  } finally {
    seen.pop();
  }
}

function inspect(value, options = {}) {
  if (typeof options !== 'object' || options === null) options = {};
  const opts = { depth: 2, customInspect: true, ...inspect.defaultOptions, ...options };
  if (opts.depth === null) opts.depth = Infinity;
  return formatValue(value, opts, 0, [], 0);
}
inspect.custom = kCustomInspect;
inspect.defaultOptions = { depth: 2, colors: false, showHidden: false };
inspect.colors = {};
inspect.styles = {};

// === format ===

function format(...args) {
  return formatWithOptions({}, ...args);
}

function formatWithOptions(options, first, ...args) {
  if (typeof first !== 'string') return [first, ...args].map((a) => (typeof a === 'string' ? a : inspect(a, options))).join(' ');
  let i = 0;
  let out = first.replace(/%[sdifjoOc%]/g, (directive) => {
    if (directive === '%%') return '%';
    if (i >= args.length) return directive;
    const arg = args[i++];
    switch (directive) {
      case '%s':
        if (typeof arg === 'bigint') return `${arg}n`;
        if (typeof arg === 'object' && arg !== null) return inspect(arg, { ...options, depth: 0 });
        return typeof arg === 'symbol' ? arg.toString() : String(arg);
      case '%d': return typeof arg === 'bigint' ? `${arg}n` : typeof arg === 'symbol' ? 'NaN' : String(Number(arg));
      case '%i': return typeof arg === 'bigint' ? `${arg}n` : String(parseInt(arg, 10));
      case '%f': return typeof arg === 'symbol' ? 'NaN' : String(parseFloat(arg));
      case '%j': try { return JSON.stringify(arg); } catch { return '[Circular]'; }
      case '%o': return inspect(arg, { ...options, showHidden: true, depth: 4 });
      case '%O': return inspect(arg, options);
      case '%c': return '';
      default: return directive;
    }
  });
  for (; i < args.length; i++) {
    const arg = args[i];
    out += ' ' + (typeof arg === 'string' ? arg : inspect(arg, options));
  }
  return out;
}

// === functions ===

function invalidArg(name, expected, value) {
  const error = new TypeError(`The "${name}" argument must be ${expected}. Received ${typeof value}`);
  error.code = 'ERR_INVALID_ARG_TYPE';
  return error;
}

function promisify(original) {
  if (typeof original !== 'function') throw invalidArg('original', 'of type function', original);
  if (original[kCustomPromisify]) {
    const fn = original[kCustomPromisify];
    return Object.defineProperty(fn, kCustomPromisify, { value: fn, configurable: true });
  }
  function promisified(...args) {
    return new Promise((resolve, reject) => {
      Reflect.apply(original, this, [...args, (error, ...values) => {
        if (error) reject(error);
        else resolve(values.length > 1 ? values : values[0]);
      }]);
    });
  }
  Object.setPrototypeOf(promisified, Object.getPrototypeOf(original));
  Object.defineProperty(promisified, kCustomPromisify, { value: promisified, configurable: true });
  return Object.defineProperties(promisified, Object.getOwnPropertyDescriptors(original));
}
promisify.custom = kCustomPromisify;

function callbackify(original) {
  if (typeof original !== 'function') throw invalidArg('original', 'of type function', original);
  return function callbackified(...args) {
    const callback = args.pop();
    if (typeof callback !== 'function') throw invalidArg('last argument', 'of type function', callback);
    Reflect.apply(original, this, args).then(
      (value) => queueMicrotask(() => callback(null, value)),
      (reason) => {
        let error = reason;
        if (!reason) {
          error = new Error('Promise was rejected with a falsy value');
          error.code = 'ERR_FALSY_VALUE_REJECTION';
          error.reason = reason;
        }
        queueMicrotask(() => callback(error));
      },
    );
  };
}

function inherits(constructor, superConstructor) {
  if (typeof constructor !== 'function') throw invalidArg('ctor', 'of type function', constructor);
  if (typeof superConstructor?.prototype !== 'object') throw invalidArg('superCtor.prototype', 'of type object', superConstructor?.prototype);
  Object.defineProperty(constructor, 'super_', { value: superConstructor, writable: true, configurable: true });
  Object.setPrototypeOf(constructor.prototype, superConstructor.prototype);
}

function deprecate(fn, message, code) {
  let warned = false;
  return function deprecated(...args) {
    if (!warned) {
      warned = true;
      console.warn(`${code ? `[${code}] ` : ''}DeprecationWarning: ${message}`);
    }
    return new.target ? Reflect.construct(fn, args, new.target) : Reflect.apply(fn, this, args);
  };
}

function isDeepStrictEqual(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || tag(a) !== tag(b)) return false;
  if (types.isDate(a)) return a.getTime() === b.getTime();
  if (types.isRegExp(a)) return String(a) === String(b);
  if (types.isMap(a)) return a.size === b.size && [...a].every(([k, v]) => b.has(k) && isDeepStrictEqual(v, b.get(k)));
  if (types.isSet(a)) return a.size === b.size && [...a].every((v) => b.has(v));
  const keysA = Reflect.ownKeys(a).filter((k) => Object.prototype.propertyIsEnumerable.call(a, k));
  const keysB = Reflect.ownKeys(b).filter((k) => Object.prototype.propertyIsEnumerable.call(b, k));
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) => Object.prototype.hasOwnProperty.call(b, k) && isDeepStrictEqual(a[k], b[k]));
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
  isArray: Array.isArray,
  types,
  TextEncoder: globalThis.TextEncoder,
  TextDecoder: globalThis.TextDecoder,
  stripVTControlCharacters: (text) => String(text).replace(/\u001b\[[0-9;]*[A-Za-z]/g, ''),
  toUSVString: (text) => String(text).toWellFormed(),
};
