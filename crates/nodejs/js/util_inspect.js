// node:internal/util_inspect — util.types (brand checks that a
// Symbol.toStringTag cannot fool) and util.inspect as Node prints: the
// options (depth, colors, showHidden, breakLength, compact, sorted,
// getters, maxArrayLength, maxStringLength), `<ref *N>` for cycles, holes,
// extra keys, class and null-prototype prefixes, boxed primitives, errors
// with their own keys, promise state. Runs as function (host, internal,
// require, module, exports).

const kCustomInspect = Symbol.for('nodejs.util.inspect.custom');
const TypedArray = Object.getPrototypeOf(Uint8Array);
const typedArrayTag = Object.getOwnPropertyDescriptor(TypedArray.prototype, Symbol.toStringTag).get;
const typedArrayLength = Object.getOwnPropertyDescriptor(TypedArray.prototype, 'length').get;
const getter = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
const tag = (value) => Object.prototype.toString.call(value).slice(8, -1);
const isObjectLike = (v) => (typeof v === 'object' && v !== null) || typeof v === 'function';

// True when `check(value)` does not throw: a built-in's method or getter
// only works on its own kind of object.
function brand(check) {
  return (value) => {
    if (!isObjectLike(value)) return false;
    try {
      check(value);
      return true;
    } catch {
      return false;
    }
  };
}

const mapSize = getter(Map.prototype, 'size');
const setSize = getter(Set.prototype, 'size');
const bufferLength = getter(ArrayBuffer.prototype, 'byteLength');
const sharedLength = typeof SharedArrayBuffer === 'function' ? getter(SharedArrayBuffer.prototype, 'byteLength') : null;
const viewLength = getter(DataView.prototype, 'byteLength');
const regexpGlobal = getter(RegExp.prototype, 'global');
const iteratorTag = (name) => (v) => isObjectLike(v) && !Object.prototype.hasOwnProperty.call(v, Symbol.toStringTag) && tag(v) === name;

const types = {
  isArrayBuffer: brand((v) => bufferLength.call(v)),
  isSharedArrayBuffer: brand((v) => sharedLength.call(v)),
  isAnyArrayBuffer: (v) => types.isArrayBuffer(v) || types.isSharedArrayBuffer(v),
  isArrayBufferView: (v) => ArrayBuffer.isView(v),
  isTypedArray: (v) => typedArrayTag.call(v) !== undefined,
  isDataView: brand((v) => viewLength.call(v)),
  isDate: brand((v) => Date.prototype.getTime.call(v)),
  isRegExp: (v) => v !== RegExp.prototype && brand((x) => regexpGlobal.call(x))(v),
  isMap: brand((v) => mapSize.call(v)),
  isSet: brand((v) => setSize.call(v)),
  isWeakMap: brand((v) => WeakMap.prototype.has.call(v, {})),
  isWeakSet: brand((v) => WeakSet.prototype.has.call(v, {})),
  isPromise: (v) => host.utilPromiseState(v) >= 0,
  // The runtime's own proxies are the objects they stand for, to a Worker.
  isProxy: (v) => host.utilIsProxy(v) === true && !internal.runtimeProxies.has(v),
  isNativeError: (v) => (typeof Error.isError === 'function' ? Error.isError(v) : tag(v) === 'Error'),
  isAsyncFunction: (v) => typeof v === 'function' && (host.utilFunctionKind(v) & 1) !== 0,
  isGeneratorFunction: (v) => typeof v === 'function' && (host.utilFunctionKind(v) & 2) !== 0,
  isGeneratorObject: iteratorTag('Generator'),
  isMapIterator: iteratorTag('Map Iterator'),
  isSetIterator: iteratorTag('Set Iterator'),
  isArgumentsObject: iteratorTag('Arguments'),
  isModuleNamespaceObject: (v) => isObjectLike(v) && Object.getPrototypeOf(v) === null && v[Symbol.toStringTag] === 'Module' && !Object.isExtensible(v),
  isNumberObject: brand((v) => typeof v === 'object' && Number.prototype.valueOf.call(v)),
  isStringObject: brand((v) => typeof v === 'object' && String.prototype.valueOf.call(v)),
  isBooleanObject: brand((v) => typeof v === 'object' && Boolean.prototype.valueOf.call(v)),
  isBigIntObject: brand((v) => typeof v === 'object' && BigInt.prototype.valueOf.call(v)),
  isSymbolObject: brand((v) => typeof v === 'object' && Symbol.prototype.valueOf.call(v)),
  isBoxedPrimitive: (v) => types.isNumberObject(v) || types.isStringObject(v) || types.isBooleanObject(v) || types.isBigIntObject(v) || types.isSymbolObject(v),
  isExternal: () => false,
  isKeyObject: (v) => isObjectLike(v) && typeof v.asymmetricKeyType !== 'undefined' && typeof v.export === 'function' && typeof v.equals === 'function',
  isCryptoKey: (v) => typeof CryptoKey === 'function' && v instanceof CryptoKey,
};
for (const name of ['Uint8Array', 'Uint8ClampedArray', 'Uint16Array', 'Uint32Array', 'Int8Array', 'Int16Array', 'Int32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array']) {
  if (typeof globalThis[name] === 'function') types[`is${name}`] = (v) => typedArrayTag.call(v) === name;
}

// === colors ===

const colors = { __proto__: null };
const codes = {
  reset: [0, 0], bold: [1, 22], dim: [2, 22], italic: [3, 23], underline: [4, 24], blink: [5, 25], inverse: [7, 27],
  hidden: [8, 28], strikethrough: [9, 29], doubleunderline: [21, 24], black: [30, 39], red: [31, 39], green: [32, 39],
  yellow: [33, 39], blue: [34, 39], magenta: [35, 39], cyan: [36, 39], white: [37, 39], bgBlack: [40, 49], bgRed: [41, 49],
  bgGreen: [42, 49], bgYellow: [43, 49], bgBlue: [44, 49], bgMagenta: [45, 49], bgCyan: [46, 49], bgWhite: [47, 49],
  framed: [51, 54], overlined: [53, 55], gray: [90, 39], redBright: [91, 39], greenBright: [92, 39], yellowBright: [93, 39],
  blueBright: [94, 39], magentaBright: [95, 39], cyanBright: [96, 39], whiteBright: [97, 39], bgGray: [100, 49],
  bgRedBright: [101, 49], bgGreenBright: [102, 49], bgYellowBright: [103, 49], bgBlueBright: [104, 49],
  bgMagentaBright: [105, 49], bgCyanBright: [106, 49], bgWhiteBright: [107, 49],
};
Object.assign(colors, codes);
const aliases = { grey: 'gray', blackBright: 'gray', bgGrey: 'bgGray', bgBlackBright: 'bgGray', faint: 'dim', crossedout: 'strikethrough', strikeThrough: 'strikethrough', crossedOut: 'strikethrough', conceal: 'hidden', swapColors: 'inverse', swapcolors: 'inverse', doubleUnderline: 'doubleunderline' };
for (const [alias, name] of Object.entries(aliases)) {
  Object.defineProperty(colors, alias, { get: () => colors[name], set: (v) => { colors[name] = v; }, configurable: true, enumerable: false });
}
const styles = Object.assign(Object.create(null), {
  special: 'cyan', number: 'yellow', bigint: 'yellow', boolean: 'yellow', undefined: 'grey', null: 'bold',
  string: 'green', symbol: 'green', date: 'magenta', regexp: 'red', module: 'underline',
});

function stylizeWithColor(text, styleType) {
  const style = styles[styleType];
  const color = style !== undefined ? colors[style] : undefined;
  if (color === undefined) return text;
  return `\u001b[${color[0]}m${text}\u001b[${color[1]}m`;
}
const stylizeNoColor = (text) => text;
const ansi = /[\u001b\u009b][[\]()#;?]*(?:(?:(?:(?:;[-a-zA-Z\d/#&.:=?%@~_]+)*|[a-zA-Z\d]+(?:;[-a-zA-Z\d/#&.:=?%@~_]*)*)?\u0007)|(?:(?:\d{1,4}(?:;\d{0,4})*)?[\dA-PR-TZcf-ntqry=><~]))/g;
const stripColors = (text) => text.replace(ansi, '');

// === strings and keys ===

const META = ['\\x00', '\\x01', '\\x02', '\\x03', '\\x04', '\\x05', '\\x06', '\\x07', '\\b', '\\t', '\\n', '\\x0B', '\\f', '\\r', '\\x0E', '\\x0F',
  '\\x10', '\\x11', '\\x12', '\\x13', '\\x14', '\\x15', '\\x16', '\\x17', '\\x18', '\\x19', '\\x1A', '\\x1B', '\\x1C', '\\x1D', '\\x1E', '\\x1F'];
const LONE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const ESCAPE = new RegExp(`[\\x00-\\x1f\\x27\\x5c\\x7f-\\x9f]|${LONE}`);
const ESCAPE_QUOTED = new RegExp(`[\\x00-\\x1f\\x5c\\x7f-\\x9f]|${LONE}`);

function escapeOne(c) {
  const code = c.charCodeAt(0);
  if (code < 32) return META[code];
  if (c === "'") return "\\'";
  if (c === '\\') return '\\\\';
  if (code >= 0xd800) return `\\u${code.toString(16)}`;
  return `\\x${code.toString(16).toUpperCase()}`;
}

// A string as a JavaScript literal: single quotes unless the text has
// some, then double quotes, then backticks; control characters and lone
// surrogates escaped.
function strEscape(text) {
  let quote = "'";
  let test = ESCAPE;
  if (text.includes("'")) {
    if (!text.includes('"')) quote = '"';
    else if (!text.includes('`') && !text.includes('${')) quote = '`';
    if (quote !== "'") test = ESCAPE_QUOTED;
  }
  if (!test.test(text)) return `${quote}${text}${quote}`;
  return `${quote}${text.replace(new RegExp(test.source, 'g'), escapeOne)}${quote}`;
}

const KEY = /^[a-zA-Z_][a-zA-Z_0-9]*$/;

// A key as workerd and current Node print it: identifiers bare, other
// strings quoted, symbols with their description escaped, hidden keys in
// brackets; an own `__proto__` as `['__proto__']`.
function formatKey(ctx, key, enumerable) {
  let name;
  if (typeof key === 'symbol') name = ctx.stylize(symbolText(key).replace(new RegExp(ESCAPE_QUOTED.source, 'g'), escapeOne), 'symbol');
  else if (key === '__proto__') name = "['__proto__']";
  else if (KEY.test(key)) name = ctx.stylize(key, 'name');
  else name = ctx.stylize(strEscape(key), 'string');
  return enumerable === false ? `[${name}]` : name;
}

const symbolText = (symbol) => Symbol.prototype.toString.call(symbol);

// `1234567.891234` → `1_234_567.891_234`; texts with an exponent stay.
function numericSeparators(text) {
  if (!/^-?\d+(\.\d+)?$/.test(text)) return text;
  const [whole, fraction] = text.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, '_');
  return fraction === undefined ? grouped : `${grouped}.${fraction.replace(/(\d{3})(?=\d)/g, '$1_')}`;
}

function formatNumber(stylize, number, separators) {
  if (Object.is(number, -0)) return stylize('-0', 'number');
  const text = `${number}`;
  return stylize(separators ? numericSeparators(text) : text, 'number');
}

function formatPrimitive(ctx, value) {
  switch (typeof value) {
    case 'string': {
      let trailer = '';
      if (value.length > ctx.maxStringLength) {
        const remaining = value.length - ctx.maxStringLength;
        value = value.slice(0, ctx.maxStringLength);
        trailer = `... ${remaining} more character${remaining > 1 ? 's' : ''}`;
      }
      if (ctx.compact !== true && value.length > 16 && value.length > ctx.breakLength - ctx.indentationLvl - 4) {
        return value.split(/(?<=\n)/).map((line) => ctx.stylize(strEscape(line), 'string')).join(` +\n${' '.repeat(ctx.indentationLvl + 2)}`) + trailer;
      }
      return ctx.stylize(strEscape(value), 'string') + trailer;
    }
    case 'number': return formatNumber(ctx.stylize, value, ctx.numericSeparator);
    case 'bigint': return ctx.stylize(`${ctx.numericSeparator ? numericSeparators(`${value}`) : value}n`, 'bigint');
    case 'boolean': return ctx.stylize(`${value}`, 'boolean');
    case 'undefined': return ctx.stylize('undefined', 'undefined');
    default: return ctx.stylize(symbolText(value), 'symbol');
  }
}

// === inspect ===

const kObjectType = 0;
const kArrayExtrasType = 1;
const defaults = {
  showHidden: false, depth: 2, colors: false, customInspect: true, showProxy: false, maxArrayLength: 100,
  maxStringLength: 10000, breakLength: 80, compact: 3, sorted: false, getters: false, numericSeparator: false,
};

function inspect(value, opts) {
  const ctx = { ...defaults, ...inspect.defaultOptions, seen: [], indentationLvl: 0, currentDepth: 0, circular: undefined };
  if (arguments.length > 2) {
    if (arguments[2] !== undefined) ctx.depth = arguments[2];
    if (arguments.length > 3 && arguments[3] !== undefined) ctx.colors = arguments[3];
  }
  if (typeof opts === 'boolean') ctx.showHidden = opts;
  else if (opts !== null && typeof opts === 'object') {
    for (const key of Object.keys(opts)) {
      if (Object.prototype.hasOwnProperty.call(defaults, key) || key === 'stylize') ctx[key] = opts[key];
      else if (ctx.userOptions === undefined) ctx.userOptions = opts;
    }
  }
  if (ctx.colors) ctx.stylize = stylizeWithColor;
  else if (typeof ctx.stylize !== 'function') ctx.stylize = stylizeNoColor;
  if (ctx.maxArrayLength === null) ctx.maxArrayLength = Infinity;
  if (ctx.maxStringLength === null) ctx.maxStringLength = Infinity;
  return formatValue(ctx, value, 0);
}
inspect.custom = kCustomInspect;
inspect.colors = colors;
inspect.styles = styles;
let defaultOptions = { ...defaults };
Object.defineProperty(inspect, 'defaultOptions', {
  get: () => defaultOptions,
  set: (options) => {
    if (options === null || typeof options !== 'object') {
      throw require('node:internal/errors').invalidArgType('options', 'of type object', options);
    }
    defaultOptions = { ...defaultOptions, ...options };
  },
});

// No keys to print (and no prototype properties under showHidden).
const none = (ctx, keys) => keys.length === 0 && ctx.protoProps === undefined;
const tooDeep = (ctx, recurseTimes) => ctx.depth !== null && recurseTimes > ctx.depth;

function formatValue(ctx, value, recurseTimes, typedArray) {
  if (typeof value !== 'object' && typeof value !== 'function') return formatPrimitive(ctx, value);
  if (value === null) return ctx.stylize('null', 'null');
  // A Proxy prints as `Proxy(<its target>)`, as workerd, without running
  // a trap.
  if (types.isProxy(value)) {
    const [target, handler] = host.utilProxyDetails(value);
    if (target === null) return ctx.stylize('<Revoked Proxy>', 'special');
    if (ctx.showProxy) return formatProxy(ctx, target, handler, recurseTimes);
    return `Proxy(${formatValue(ctx, target, recurseTimes, typedArray)})`;
  }
  if (ctx.customInspect) {
    const custom = customInspect(ctx, value, recurseTimes);
    if (custom !== undefined) return custom;
  }
  if (ctx.seen.includes(value)) {
    ctx.circular ??= new Map();
    if (!ctx.circular.has(value)) ctx.circular.set(value, ctx.circular.size + 1);
    return ctx.stylize(`[Circular *${ctx.circular.get(value)}]`, 'special');
  }
  try {
    return formatRaw(ctx, value, recurseTimes, typedArray);
  } catch (error) {
    if (!(error instanceof RangeError) || !String(error.message).includes('call stack')) throw error;
    const name = constructorName(value) ?? 'Object';
    return ctx.stylize(`[${name}: Inspection interrupted prematurely. Maximum call stack size exceeded.]`, 'special');
  }
}

function formatProxy(ctx, target, handler, recurseTimes) {
  if (tooDeep(ctx, recurseTimes)) return ctx.stylize('Proxy [Array]', 'special');
  ctx.indentationLvl += 2;
  const output = [formatValue(ctx, target, recurseTimes + 1), formatValue(ctx, handler, recurseTimes + 1)];
  ctx.indentationLvl -= 2;
  return reduceToSingleString(ctx, output, '', ['Proxy [', ']'], kArrayExtrasType, recurseTimes + 1);
}

function customInspect(ctx, value, recurseTimes) {
  let maybe;
  try {
    maybe = value[kCustomInspect];
  } catch {
    return undefined;
  }
  if (typeof maybe !== 'function' || maybe === inspect) return undefined;
  const proto = value.constructor?.prototype;
  if (proto === value) return undefined;
  const depth = ctx.depth === null ? null : ctx.depth - recurseTimes;
  const options = { stylize: ctx.stylize };
  for (const key of Object.keys(defaults)) options[key] = ctx[key];
  Object.assign(options, ctx.userOptions);
  const ret = maybe.call(value, depth, options, inspect);
  if (ret === value) return undefined;
  if (typeof ret !== 'string') return formatValue(ctx, ret, recurseTimes);
  return ret.replaceAll('\n', `\n${' '.repeat(ctx.indentationLvl)}`);
}

// The globals that are classes (Object, Map, Error, ...): built-ins.
const BUILT_INS = new Set(Object.getOwnPropertyNames(globalThis).filter((name) => /^[A-Z]/.test(name) && typeof globalThis[name] === 'function'));

// The name of the nearest constructor the value is an instance of; with
// `protoProps` (showHidden), the non-method properties of up to three of
// its own (not built-in) prototypes go there too.
function constructorName(value, ctx, recurseTimes, protoProps) {
  let obj = value;
  let firstProto;
  while (obj !== null && obj !== undefined) {
    const descriptor = Object.getOwnPropertyDescriptor(obj, 'constructor');
    const hardened = typeof descriptor?.value !== 'function' ? builtInPrototypes().get(obj) : undefined;
    if (hardened !== undefined) return hardened;
    if (descriptor !== undefined && typeof descriptor.value === 'function' && descriptor.value.name !== '' && isInstance(value, descriptor.value)) {
      if (protoProps !== undefined && (firstProto !== obj || !BUILT_INS.has(descriptor.value.name))) {
        prototypeProperties(ctx, value, firstProto || value, recurseTimes, protoProps);
      }
      return String(descriptor.value.name);
    }
    obj = Object.getPrototypeOf(obj);
    if (firstProto === undefined) firstProto = obj;
  }
  return null;
}

// Built-in prototypes by identity: one whose `constructor` was replaced
// (hardened) still names its built-in.
let prototypesOfBuiltIns;
function builtInPrototypes() {
  if (prototypesOfBuiltIns === undefined) {
    prototypesOfBuiltIns = new Map();
    for (const name of BUILT_INS) {
      const prototype = Object.getOwnPropertyDescriptor(globalThis, name)?.value?.prototype;
      if (isObjectLike(prototype) && !prototypesOfBuiltIns.has(prototype)) prototypesOfBuiltIns.set(prototype, name);
    }
  }
  return prototypesOfBuiltIns;
}

function prototypeProperties(ctx, main, obj, recurseTimes, output) {
  const above = new Set();
  for (let depth = 0; depth < 3; depth++) {
    if (depth !== 0 || main === obj) {
      obj = Object.getPrototypeOf(obj);
      if (obj === null) return;
      const descriptor = Object.getOwnPropertyDescriptor(obj, 'constructor');
      if (descriptor !== undefined && typeof descriptor.value === 'function' && BUILT_INS.has(descriptor.value.name)) return;
    }
    const keys = Reflect.ownKeys(obj);
    ctx.seen.push(main);
    try {
      for (const key of keys) {
        if (key === 'constructor' || Object.prototype.hasOwnProperty.call(main, key) || above.has(key)) continue;
        const desc = Object.getOwnPropertyDescriptor(obj, key);
        if (typeof desc.value === 'function') continue;
        const text = formatProperty(ctx, obj, recurseTimes, key, kObjectType, desc, main);
        output.push(ctx.colors ? `\u001b[2m${text}\u001b[22m` : text);
      }
    } finally {
      ctx.seen.pop();
    }
    for (const key of keys) above.add(key);
  }
}

function isInstance(value, ctor) {
  try {
    return value instanceof ctor;
  } catch {
    return false;
  }
}

function prefixOf(constructor, tagName, fallback, size = '') {
  if (constructor === null) {
    if (tagName !== '' && fallback !== tagName) return `[${fallback}${size}: null prototype] [${tagName}] `;
    return `[${fallback}${size}: null prototype] `;
  }
  if (tagName !== '' && constructor !== tagName) return `${constructor}${size} [${tagName}] `;
  return `${constructor}${size} `;
}

function ownKeys(value, showHidden) {
  const symbols = Object.getOwnPropertySymbols(value);
  if (showHidden) return [...Object.getOwnPropertyNames(value), ...symbols];
  const keys = Object.keys(value);
  for (const symbol of symbols) if (Object.prototype.propertyIsEnumerable.call(value, symbol)) keys.push(symbol);
  return keys;
}

function toStringTagOf(ctx, value, constructor) {
  let tagName;
  try {
    tagName = value[Symbol.toStringTag];
  } catch {
    return '';
  }
  if (typeof tagName !== 'string' || tagName === constructor) return '';
  const own = ctx.showHidden ? Object.prototype.hasOwnProperty : Object.prototype.propertyIsEnumerable;
  return tagName !== '' && own.call(value, Symbol.toStringTag) ? '' : tagName;
}

function formatRaw(ctx, value, recurseTimes, typedArray) {
  let protoProps = ctx.showHidden && !tooDeep(ctx, recurseTimes) ? [] : undefined;
  const constructor = constructorName(value, ctx, recurseTimes, protoProps);
  if (protoProps !== undefined && protoProps.length === 0) protoProps = undefined;
  const tagName = toStringTagOf(ctx, value, constructor);
  ctx.protoProps = protoProps;
  const shape = shapeOf(ctx, value, recurseTimes, constructor, tagName, typedArray);
  ctx.protoProps = undefined;
  if (typeof shape === 'string') return shape;
  const { braces, formatter = () => [], extrasType = kObjectType } = shape;
  let { keys, base = '' } = shape;
  if (tooDeep(ctx, recurseTimes)) {
    let name = prefixOf(constructor, tagName, shape.fallback ?? 'Object').slice(0, -1);
    if (constructor !== null) name = `[${name}]`;
    return ctx.stylize(name, 'special');
  }
  recurseTimes += 1;
  ctx.seen.push(value);
  ctx.currentDepth = recurseTimes;
  let output;
  try {
    output = formatter(ctx, value, recurseTimes);
    for (const key of keys) output.push(formatProperty(ctx, value, recurseTimes, key, extrasType));
    if (protoProps !== undefined) output.push(...protoProps);
  } finally {
    ctx.seen.pop();
  }
  if (ctx.circular !== undefined && ctx.circular.has(value)) {
    const ref = ctx.stylize(`<ref *${ctx.circular.get(value)}>`, 'special');
    if (base === '') braces[0] = `${ref} ${braces[0]}`;
    else base = `${ref} ${base}`;
  }
  if (ctx.sorted) {
    const compare = ctx.sorted === true ? undefined : ctx.sorted;
    if (extrasType === kObjectType) output.sort(compare);
    else if (keys.length > 1) output.splice(output.length - keys.length, keys.length, ...output.slice(output.length - keys.length).sort(compare));
  }
  return reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value);
}

// How one object prints: its braces, the formatter of its entries, its
// keys; or, for the shapes that print whole (empty ones, functions,
// dates...), the text.
function shapeOf(ctx, value, recurseTimes, constructor, tagName, typedArray) {
  let keys = ownKeys(value, ctx.showHidden);
  if (Symbol.iterator in value || constructor === null) {
    const iterable = iterableShape(ctx, value, keys, constructor, tagName, typedArray);
    if (iterable !== null) return iterable;
  }
  if (constructor === 'Object' && !types.isArgumentsObject(value) && !types.isModuleNamespaceObject(value)) {
    const braces = [tagName !== '' ? `${prefixOf(constructor, tagName, 'Object')}{` : '{', '}'];
    return none(ctx, keys) ? `${braces[0]}}` : { braces, keys };
  }
  if (types.isArgumentsObject(value)) {
    return none(ctx, keys) ? '[Arguments] {}' : { braces: ['[Arguments] {', '}'], keys, fallback: 'Arguments' };
  }
  if (typeof value === 'function') {
    const base = functionBase(value, constructor, tagName);
    return none(ctx, keys) ? ctx.stylize(base, 'special') : { braces: ['{', '}'], keys, base };
  }
  if (types.isRegExp(value)) {
    let base = RegExp.prototype.toString.call(constructor !== null ? value : new RegExp(value));
    const prefix = prefixOf(constructor, tagName, 'RegExp');
    if (prefix !== 'RegExp ') base = `${prefix}${base}`;
    if (none(ctx, keys) || tooDeep(ctx, recurseTimes)) return ctx.stylize(base, 'regexp');
    return { braces: ['{', '}'], keys, base };
  }
  if (types.isDate(value)) {
    const time = Date.prototype.getTime.call(value);
    let base = Number.isNaN(time) ? 'Invalid Date' : Date.prototype.toISOString.call(value);
    const prefix = prefixOf(constructor, tagName, 'Date');
    if (prefix !== 'Date ') base = `${prefix}${base}`;
    return none(ctx, keys) ? ctx.stylize(base, 'date') : { braces: ['{', '}'], keys, base };
  }
  if (types.isNativeError(value) || value instanceof Error) {
    const base = formatError(value, constructor, tagName, ctx, keys);
    return none(ctx, keys) ? base : { braces: ['{', '}'], keys, base };
  }
  return otherShape(ctx, value, keys, constructor, tagName, typedArray);
}

function otherShape(ctx, value, keys, constructor, tagName, typedArray) {
  if (types.isAnyArrayBuffer(value)) {
    const kind = types.isArrayBuffer(value) ? 'ArrayBuffer' : 'SharedArrayBuffer';
    const prefix = prefixOf(constructor, tagName, kind);
    if (typedArray && none(ctx, keys)) return `${prefix}{ byteLength: ${formatNumber(ctx.stylize, value.byteLength, false)} }`;
    keys.unshift('byteLength');
    return { braces: [`${prefixOf(constructor, tagName, kind)}{`, '}'], keys, formatter: typedArray ? undefined : formatArrayBuffer, fallback: kind };
  }
  if (types.isDataView(value)) {
    keys.unshift('byteLength', 'byteOffset', 'buffer');
    return { braces: [`${prefixOf(constructor, tagName, 'DataView')}{`, '}'], keys, fallback: 'DataView' };
  }
  if (types.isPromise(value)) {
    return { braces: [`${prefixOf(constructor, tagName, 'Promise')}{`, '}'], keys, formatter: formatPromise, fallback: 'Promise' };
  }
  if (types.isWeakSet(value) || types.isWeakMap(value)) {
    const kind = types.isWeakSet(value) ? 'WeakSet' : 'WeakMap';
    return { braces: [`${prefixOf(constructor, tagName, kind)}{`, '}'], keys, formatter: () => [ctx.stylize('<items unknown>', 'special')], fallback: kind };
  }
  if (types.isModuleNamespaceObject(value)) {
    return { braces: [`${prefixOf(constructor, tagName, 'Module')}{`, '}'], keys: Object.getOwnPropertyNames(value), fallback: 'Module' };
  }
  if (types.isBoxedPrimitive(value)) return boxedShape(ctx, value, keys, constructor, tagName);
  const braces = [`${prefixOf(constructor, tagName, 'Object')}{`, '}'];
  if (none(ctx, keys)) return `${braces[0]}}`;
  return { braces, keys };
}

function boxedShape(ctx, value, keys, constructor, tagName) {
  let kind;
  let inner;
  if (types.isNumberObject(value)) [kind, inner] = ['Number', Number.prototype.valueOf.call(value)];
  else if (types.isStringObject(value)) {
    [kind, inner] = ['String', String.prototype.valueOf.call(value)];
    keys = keys.filter((k) => !isIndex(k));
  } else if (types.isBooleanObject(value)) [kind, inner] = ['Boolean', Boolean.prototype.valueOf.call(value)];
  else if (types.isBigIntObject(value)) [kind, inner] = ['BigInt', BigInt.prototype.valueOf.call(value)];
  else [kind, inner] = ['Symbol', Symbol.prototype.valueOf.call(value)];
  let base = `[${kind}`;
  if (kind !== constructor) base += constructor === null ? ' (null prototype)' : ` (${constructor})`;
  base += `: ${formatPrimitive({ ...ctx, stylize: stylizeNoColor, compact: true }, inner)}]`;
  if (tagName !== '' && tagName !== constructor) base += ` [${tagName}]`;
  if (none(ctx, keys)) return ctx.stylize(base, kind.toLowerCase());
  return { braces: ['{', '}'], keys, base };
}

const isIndex = (key) => typeof key === 'string' && /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < 4294967295;

function iterableShape(ctx, value, keys, constructor, tagName, typedArray) {
  if (Array.isArray(value)) {
    const prefix = constructor !== 'Array' || tagName !== '' ? prefixOf(constructor, tagName, 'Array', `(${value.length})`) : '';
    keys = keys.filter((k) => !isIndex(k));
    if (value.length === 0 && none(ctx, keys)) return `${prefix}[]`;
    return { braces: [`${prefix}[`, ']'], keys, formatter: formatArray, extrasType: kArrayExtrasType, fallback: 'Array' };
  }
  if (types.isSet(value)) {
    const size = setSize.call(value);
    const prefix = prefixOf(constructor, tagName, 'Set', `(${size})`);
    if (size === 0 && none(ctx, keys)) return `${prefix}{}`;
    return { braces: [`${prefix}{`, '}'], keys, formatter: formatSet, fallback: 'Set' };
  }
  if (types.isMap(value)) {
    const size = mapSize.call(value);
    const prefix = prefixOf(constructor, tagName, 'Map', `(${size})`);
    if (size === 0 && none(ctx, keys)) return `${prefix}{}`;
    return { braces: [`${prefix}{`, '}'], keys, formatter: formatMap, fallback: 'Map' };
  }
  if (types.isTypedArray(value)) {
    const name = typedArrayTag.call(value);
    const length = typedArrayLength.call(value);
    const prefix = prefixOf(constructor, tagName, name, `(${length})`);
    keys = keys.filter((k) => !isIndex(k));
    if (length === 0 && none(ctx, keys) && !ctx.showHidden) return `${prefix}[]`;
    return { braces: [`${prefix}[`, ']'], keys, formatter: formatTypedArray, extrasType: kArrayExtrasType, fallback: name };
  }
  if (types.isMapIterator(value) || types.isSetIterator(value)) {
    const kind = types.isMapIterator(value) ? 'Map Iterator' : 'Set Iterator';
    return { braces: [`[${tagName || kind}] {`, '}'], keys, formatter: () => [], fallback: kind };
  }
  return null;
}

// `class A {}` but not a method named `class () {}`.
function isClassSource(source) {
  return source.startsWith('class') && source.endsWith('}') && !/^class\s*\(/.test(source);
}

function functionBase(value, constructor, tagName) {
  let source = '';
  try {
    source = Function.prototype.toString.call(value);
  } catch {
    // A revoked proxy or a host function: no source.
  }
  if (isClassSource(source)) {
    const hasName = Object.prototype.hasOwnProperty.call(value, 'name') && typeof value.name === 'string' && value.name !== '';
    let base = `[class ${hasName ? value.name : '(anonymous)'}`;
    if (constructor !== 'Function' && constructor !== null) base += ` [${constructor}]`;
    if (tagName !== '' && constructor !== tagName) base += ` [${tagName}]`;
    if (constructor !== null) {
      const superName = Object.getPrototypeOf(value)?.name;
      if (superName) base += ` extends ${superName}`;
    } else base += ' extends [null prototype]';
    return `${base}]`;
  }
  let type = 'Function';
  if (types.isGeneratorFunction(value)) type = `Generator${type}`;
  if (types.isAsyncFunction(value)) type = `Async${type}`;
  let base = `[${type}`;
  if (constructor === null) base += ' (null prototype)';
  if (value.name === '' || typeof value.name !== 'string') base += ' (anonymous)';
  else base += `: ${value.name}`;
  base += ']';
  if (constructor !== type && constructor !== null) base += ` ${constructor}`;
  if (tagName !== '' && constructor !== tagName) base += ` [${tagName}]`;
  return base;
}

function errorText(error) {
  try {
    return error.stack ? String(error.stack) : Error.prototype.toString.call(error);
  } catch {
    return Error.prototype.toString.call(error);
  }
}

// `class Foo extends TypeError`'s stack says `TypeError: ...`; printed as
// `Foo [TypeError]: ...`, and a null-prototype error says so.
function improveStack(stack, constructor, name, tagName) {
  let len = name.length;
  const regular = name.endsWith('Error') && stack.startsWith(name) && (stack.length === len || stack[len] === ':' || stack[len] === '\n');
  if (constructor !== null && !regular) return stack;
  let fallback = 'Error';
  if (constructor === null) {
    const start = /^([A-Z][a-z_ A-Z0-9[\]()-]+)(?::|\n\s+at)/.exec(stack) || /^([a-z_A-Z0-9-]*Error)$/.exec(stack);
    fallback = (start && start[1]) || '';
    len = fallback.length;
    fallback ||= 'Error';
  }
  const prefix = prefixOf(constructor, tagName, fallback).slice(0, -1);
  if (name === prefix) return stack;
  if (prefix.includes(name)) return len === 0 ? `${prefix}: ${stack}` : `${prefix}${stack.slice(len)}`;
  return `${prefix} [${name}]${stack.slice(len)}`;
}

function formatError(error, constructor, tagName, ctx, keys) {
  let name = 'Error';
  try {
    if (error.name != null) name = String(error.name);
  } catch {
    // A throwing getter: the default name.
  }
  let stack = errorText(error);
  if (!ctx.showHidden && keys.length !== 0) {
    for (const key of ['name', 'message', 'stack']) {
      const index = keys.indexOf(key);
      if (index !== -1 && (typeof error[key] !== 'string' || stack.includes(error[key]))) keys.splice(index, 1);
    }
  }
  if ('cause' in error && !keys.includes('cause')) keys.push('cause');
  if (Array.isArray(error.errors) && !keys.includes('errors')) keys.push('errors');
  stack = improveStack(stack, constructor, name, tagName);
  const message = typeof error.message === 'string' ? error.message : '';
  let at = message ? stack.indexOf(message) : -1;
  if (at !== -1) at += message.length;
  if (stack.indexOf('\n    at', at) === -1) stack = `[${stack}]`;
  if (ctx.indentationLvl !== 0) stack = stack.replaceAll('\n', `\n${' '.repeat(ctx.indentationLvl)}`);
  return stack;
}

function formatProperty(ctx, value, recurseTimes, key, type, desc, original = value) {
  desc ??= Object.getOwnPropertyDescriptor(value, key) ?? { value: value[key], enumerable: true };
  let str;
  let separator = ' ';
  if (desc.value !== undefined) {
    const diff = ctx.compact !== true || type !== kObjectType ? 2 : 3;
    ctx.indentationLvl += diff;
    str = formatValue(ctx, desc.value, recurseTimes);
    if (diff === 3 && ctx.breakLength < widthOf(ctx, str)) separator = `\n${' '.repeat(ctx.indentationLvl)}`;
    ctx.indentationLvl -= diff;
  } else if (desc.get !== undefined) {
    const label = desc.set !== undefined ? 'Getter/Setter' : 'Getter';
    const getters = ctx.getters;
    if (getters && (getters === true || (getters === 'get' && desc.set === undefined) || (getters === 'set' && desc.set !== undefined))) {
      try {
        const inner = desc.get.call(original);
        ctx.indentationLvl += 2;
        if (inner === null) str = `${ctx.stylize(`[${label}:`, 'special')} ${ctx.stylize('null', 'null')}${ctx.stylize(']', 'special')}`;
        else if (typeof inner === 'object') str = `${ctx.stylize(`[${label}]`, 'special')} ${formatValue(ctx, inner, recurseTimes)}`;
        else str = `${ctx.stylize(`[${label}:`, 'special')} ${formatPrimitive(ctx, inner)}${ctx.stylize(']', 'special')}`;
        ctx.indentationLvl -= 2;
      } catch (error) {
        str = `${ctx.stylize(`[${label}:`, 'special')} <Inspection threw (${error?.message})>${ctx.stylize(']', 'special')}`;
      }
    } else {
      str = ctx.stylize(`[${label}]`, 'special');
    }
  } else if (desc.set !== undefined) {
    str = ctx.stylize('[Setter]', 'special');
  } else {
    str = ctx.stylize('undefined', 'undefined');
  }
  if (type === kArrayExtrasType && isIndex(key)) return str;
  return `${formatKey(ctx, key, desc.enumerable)}:${separator}${str}`;
}

// The own indices of a long array, ascending (a sparse array's holes are
// not walked one by one).
function presentIndices(value) {
  if (value.length <= 1024) return null;
  return Object.keys(value).filter(isIndex).map(Number);
}

function formatArray(ctx, value, recurseTimes) {
  const length = value.length;
  const present = presentIndices(value);
  let next = 0;
  const nextPresent = (i) => {
    if (present === null) {
      while (i < length && !Object.prototype.hasOwnProperty.call(value, i)) i++;
      return i;
    }
    while (next < present.length && present[next] < i) next++;
    return next < present.length ? present[next] : length;
  };
  const output = [];
  let i = 0;
  while (i < length && output.length < ctx.maxArrayLength) {
    const end = nextPresent(i);
    if (end > i) {
      const holes = end - i;
      output.push(ctx.stylize(`<${holes} empty item${holes > 1 ? 's' : ''}>`, 'undefined'));
      i = end;
    } else {
      output.push(formatProperty(ctx, value, recurseTimes, String(i), kArrayExtrasType));
      i++;
    }
  }
  if (i < length) {
    const remaining = length - i;
    output.push(`... ${remaining} more item${remaining > 1 ? 's' : ''}`);
  }
  return output;
}

function formatTypedArray(ctx, value, recurseTimes) {
  const length = typedArrayLength.call(value);
  const max = Math.min(Math.max(0, ctx.maxArrayLength), length);
  const output = [];
  // As Node and workerd choose: by the (overridable) `length` and first element.
  const numbers = value.length > 0 && typeof value[0] === 'number';
  const element = numbers ? (v) => formatNumber(ctx.stylize, v, ctx.numericSeparator) : (v) => ctx.stylize(`${ctx.numericSeparator ? numericSeparators(`${v}`) : v}n`, 'bigint');
  for (let i = 0; i < max; i++) output.push(element(value[i]));
  if (length > max) output.push(`... ${length - max} more item${length - max > 1 ? 's' : ''}`);
  if (ctx.showHidden) {
    ctx.indentationLvl += 2;
    for (const key of ['BYTES_PER_ELEMENT', 'length', 'byteLength', 'byteOffset', 'buffer']) {
      output.push(`[${key}]: ${formatValue(ctx, value[key], recurseTimes, true)}`);
    }
    ctx.indentationLvl -= 2;
  }
  return output;
}

function formatArrayBuffer(ctx, value) {
  const bytes = new Uint8Array(value, 0, Math.min(ctx.maxArrayLength, value.byteLength));
  let hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
  const remaining = value.byteLength - ctx.maxArrayLength;
  if (remaining > 0) hex += ` ... ${remaining} more byte${remaining > 1 ? 's' : ''}`;
  return [`${ctx.stylize('[Uint8Contents]', 'special')}: <${hex}>`];
}

function formatSet(ctx, value, recurseTimes) {
  const output = [];
  ctx.indentationLvl += 2;
  let shown = 0;
  for (const entry of Set.prototype.values.call(value)) {
    if (shown++ >= ctx.maxArrayLength) break;
    output.push(formatValue(ctx, entry, recurseTimes));
  }
  const remaining = setSize.call(value) - ctx.maxArrayLength;
  if (remaining > 0) output.push(`... ${remaining} more item${remaining > 1 ? 's' : ''}`);
  ctx.indentationLvl -= 2;
  return output;
}

function formatMap(ctx, value, recurseTimes) {
  const output = [];
  ctx.indentationLvl += 2;
  let shown = 0;
  for (const [k, v] of Map.prototype.entries.call(value)) {
    if (shown++ >= ctx.maxArrayLength) break;
    output.push(`${formatValue(ctx, k, recurseTimes)} => ${formatValue(ctx, v, recurseTimes)}`);
  }
  const remaining = mapSize.call(value) - ctx.maxArrayLength;
  if (remaining > 0) output.push(`... ${remaining} more item${remaining > 1 ? 's' : ''}`);
  ctx.indentationLvl -= 2;
  return output;
}

function formatPromise(ctx, value, recurseTimes) {
  const state = host.utilPromiseState(value);
  if (state === 0) return [ctx.stylize('<pending>', 'special')];
  ctx.indentationLvl += 2;
  const result = formatValue(ctx, host.utilPromiseResult(value), recurseTimes);
  ctx.indentationLvl -= 2;
  return [state === 2 ? `${ctx.stylize('<rejected>', 'special')} ${result}` : result];
}

// === layout ===

const widthOf = (ctx, text) => (ctx.colors ? stripColors(text) : text).length;

function isBelowBreakLength(ctx, output, start, base) {
  let total = output.length + start;
  if (total + output.length > ctx.breakLength) return false;
  for (const entry of output) {
    total += widthOf(ctx, entry);
    if (total > ctx.breakLength) return false;
  }
  return base === '' || !base.includes('\n');
}

function reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value) {
  if (ctx.compact !== true) {
    if (typeof ctx.compact === 'number' && ctx.compact >= 1) {
      const entries = output.length;
      if (extrasType === kArrayExtrasType && entries > 6) output = groupArrayElements(ctx, output, value);
      if (ctx.currentDepth - recurseTimes < ctx.compact && entries === output.length) {
        const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
        if (isBelowBreakLength(ctx, output, start, base)) {
          const joined = output.join(', ');
          if (!joined.includes('\n')) return `${base ? `${base} ` : ''}${braces[0]} ${joined} ${braces[1]}`;
        }
      }
    }
    const indentation = `\n${' '.repeat(ctx.indentationLvl)}`;
    return `${base ? `${base} ` : ''}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
  }
  if (isBelowBreakLength(ctx, output, 0, base)) return `${braces[0]}${base ? ` ${base}` : ''} ${output.join(', ')} ${braces[1]}`;
  const indentation = ' '.repeat(ctx.indentationLvl);
  const start = base === '' && braces[0].length === 1 ? ' ' : `${base ? ` ${base}` : ''}\n${indentation}  `;
  return `${braces[0]}${start}${output.join(`,\n${indentation}  `)} ${braces[1]}`;
}

// Many short array entries: in columns, numbers right-aligned.
function groupArrayElements(ctx, output, value) {
  let totalLength = 0;
  let maxLength = 0;
  const outputLength = ctx.maxArrayLength < output.length ? output.length - 1 : output.length;
  const separatorSpace = 2;
  const dataLen = new Array(outputLength);
  for (let i = 0; i < outputLength; i++) {
    const len = widthOf(ctx, output[i]);
    dataLen[i] = len;
    totalLength += len + separatorSpace;
    if (maxLength < len) maxLength = len;
  }
  const actualMax = maxLength + separatorSpace;
  if (actualMax * 3 + ctx.indentationLvl >= ctx.breakLength || !(totalLength / actualMax > 5 || maxLength <= 6)) return output;
  const averageBias = Math.sqrt(actualMax - totalLength / output.length);
  const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
  const columns = Math.min(
    Math.round(Math.sqrt(2.5 * biasedMax * outputLength) / biasedMax),
    Math.floor((ctx.breakLength - ctx.indentationLvl) / actualMax),
    ctx.compact * 4,
    15,
  );
  if (columns <= 1) return output;
  const maxLineLength = [];
  for (let i = 0; i < columns; i++) {
    let lineLength = 0;
    for (let j = i; j < output.length; j += columns) if (dataLen[j] > lineLength) lineLength = dataLen[j];
    maxLineLength.push(lineLength + separatorSpace);
  }
  let padStart = true;
  if (value !== undefined) {
    for (let i = 0; i < output.length; i++) {
      if (typeof value[i] !== 'number' && typeof value[i] !== 'bigint') {
        padStart = false;
        break;
      }
    }
  }
  const grouped = [];
  for (let i = 0; i < outputLength; i += columns) {
    const max = Math.min(i + columns, outputLength);
    let line = '';
    let j = i;
    for (; j < max - 1; j++) {
      const padding = maxLineLength[j - i] + output[j].length - dataLen[j];
      line += padStart ? `${output[j]}, `.padStart(padding, ' ') : `${output[j]}, `.padEnd(padding, ' ');
    }
    if (padStart) line += output[j].padStart(maxLineLength[j - i] + output[j].length - dataLen[j] - separatorSpace, ' ');
    else line += output[j];
    grouped.push(line);
  }
  if (ctx.maxArrayLength < output.length) grouped.push(output[outputLength]);
  return grouped;
}

module.exports = { types, inspect, colors, stripColors, numericSeparators, kCustomInspect, BUILT_INS };
