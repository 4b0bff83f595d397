// 17_console.js — console.* formatting to host.log. Values are inspected in a
// compact, single-line, node-like style, bounded in depth and length.
'use strict';

const MAX_DEPTH = 2;
const MAX_ITEMS = 100;
const MAX_STRING = 10000;        // one inspected string value
const MAX_MESSAGE = 16 * 1024;   // one log line (the host cuts at 16 KiB too)
// Characters one console call may inspect: past it every value prints as
// '…', so a giant object costs a bounded amount of CPU and memory to format
// (nested output counts once per level, so this is a few MAX_MESSAGEs).
const INSPECT_BUDGET = 4 * MAX_MESSAGE;
let budget = INSPECT_BUDGET;

const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
const objectToString = Object.prototype.toString;
const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

// Web API classes whose state is private: show these getters instead.
const inspectors = new Map(); // prototype -> [property names]
internal.registerInspector = (cls, props) => inspectors.set(cls.prototype, props);

function quote(s) {
  if (s.length > MAX_STRING) s = s.slice(0, MAX_STRING) + '…';
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  return q + s.replace(/[\\\n\r\t\b\f\v]/g, (c) => ({
    '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f', '\v': '\\v',
  })[c]).replaceAll(q, '\\' + q) + q;
}

function formatKey(key) {
  if (typeof key === 'symbol') return `[${key.toString()}]`;
  return IDENT.test(key) ? key : quote(key);
}

function formatNumber(n) { return Object.is(n, -0) ? '-0' : String(n); }

function formatPrimitive(v, nested) {
  switch (typeof v) {
    case 'string': return nested ? quote(v) : v;
    case 'number': return formatNumber(v);
    case 'bigint': return `${v}n`;
    case 'symbol': return v.toString();
    case 'undefined': return 'undefined';
    case 'boolean': return String(v);
    default: return v === null ? 'null' : String(v);
  }
}

function functionName(fn) {
  try {
    const name = fn.name;
    return typeof name === 'string' && name !== '' ? name : null;
  } catch {
    return null;
  }
}

function isClass(fn) {
  try {
    return /^class[\s{]/.test(Function.prototype.toString.call(fn));
  } catch {
    return false;
  }
}

function constructorName(obj) {
  let proto = obj;
  try {
    while (proto !== null) {
      const d = Object.getOwnPropertyDescriptor(proto, 'constructor');
      if (d !== undefined && typeof d.value === 'function' && functionName(d.value) !== null) return d.value.name;
      proto = Object.getPrototypeOf(proto);
    }
  } catch {
    // a proxy or something stranger
  }
  return null;
}

function errorString(e) {
  try {
    const stack = e.stack;
    if (typeof stack === 'string' && stack !== '') return stack;
    return `${e.name}: ${e.message}`;
  } catch {
    return '[Error]';
  }
}

function findInspector(obj) {
  let proto = Object.getPrototypeOf(obj);
  while (proto !== null) {
    const props = inspectors.get(proto);
    if (props !== undefined) return props;
    proto = Object.getPrototypeOf(proto);
  }
  return undefined;
}

function inspect(value, depth = MAX_DEPTH, seen = [], nested = false) {
  if (budget <= 0) return '…';
  const s = inspectValue(value, depth, seen, nested);
  budget -= s.length;
  return s;
}

function inspectValue(value, depth, seen, nested) {
  if (!internal.isObject(value)) return formatPrimitive(value, nested);
  if (seen.includes(value)) return '[Circular]';

  if (typeof value === 'function') {
    const name = functionName(value);
    if (isClass(value)) {
      const parent = Object.getPrototypeOf(value);
      const ext = typeof parent === 'function' && functionName(parent) ? ` extends ${parent.name}` : '';
      return `[class ${name ?? '(anonymous)'}${ext}]`;
    }
    return name === null ? '[Function (anonymous)]' : `[Function: ${name}]`;
  }

  let tag;
  try {
    tag = objectToString.call(value).slice(8, -1);
  } catch {
    tag = 'Object';
  }
  const ctor = constructorName(value);
  const prefix = (name) => (ctor === null ? `[${name}: null prototype]` : ctor === name ? name : `${ctor} [${name}]`);

  if (value instanceof Error || tag === 'Error' || internal.isDOMException(value)) return errorString(value);

  seen = [...seen, value];
  const next = (v) => inspect(v, depth - 1, seen, true);
  const wrap = (open, items, close) => (items.length === 0 ? `${open}${close}` : `${open} ${items.join(', ')} ${close}`);

  const inspector = findInspector(value);
  if (inspector !== undefined) {
    if (depth < 0) return `[${ctor ?? tag}]`;
    if (internal.isHeaders(value)) {
      const items = internal.headersPairs(value).map(([k, v]) => `${quote(k)} => ${quote(v)}`);
      return wrap(`${ctor ?? 'Headers'} {`, items, '}');
    }
    if (internal.isURLSearchParams(value)) {
      const items = internal.searchParamsList(value).map(([k, v]) => `${quote(k)} => ${quote(v)}`);
      return wrap(`${ctor ?? 'URLSearchParams'} {`, items, '}');
    }
    const items = [];
    for (const prop of inspector) {
      let v;
      try { v = value[prop]; } catch { v = '[unavailable]'; }
      items.push(`${prop}: ${next(v)}`);
    }
    return wrap(`${ctor ?? tag} {`, items, '}');
  }

  if (depth < 0) {
    if (Array.isArray(value)) return '[Array]';
    return `[${ctor ?? tag}]`;
  }

  const extraKeys = (skipIndices) => {
    const out = [];
    let keys;
    try {
      keys = Reflect.ownKeys(value);
    } catch {
      return out;
    }
    for (const key of keys) {
      if (skipIndices && typeof key === 'string' && /^(0|[1-9]\d*)$/.test(key)) continue;
      let d;
      try { d = Object.getOwnPropertyDescriptor(value, key); } catch { continue; }
      if (d === undefined || !d.enumerable) continue;
      if (out.length >= MAX_ITEMS) { out.push('...'); break; }
      if (d.get || d.set) {
        out.push(`${formatKey(key)}: [${d.get && d.set ? 'Getter/Setter' : d.get ? 'Getter' : 'Setter'}]`);
      } else {
        out.push(`${formatKey(key)}: ${next(d.value)}`);
      }
    }
    return out;
  };

  if (Array.isArray(value)) {
    const items = [];
    let holes = 0;
    const n = Math.min(value.length, MAX_ITEMS);
    for (let i = 0; i < n; i++) {
      if (!Object.prototype.hasOwnProperty.call(value, i)) { holes++; continue; }
      if (holes) { items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`); holes = 0; }
      items.push(next(value[i]));
    }
    if (holes) items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
    if (value.length > MAX_ITEMS) items.push(`... ${value.length - MAX_ITEMS} more item${value.length - MAX_ITEMS > 1 ? 's' : ''}`);
    items.push(...extraKeys(true).filter((k) => !k.startsWith('length:')));
    const head = ctor === 'Array' ? '' : `${prefix('Array')}(${value.length}) `;
    return head + wrap('[', items, ']');
  }

  if (internal.isArrayBufferView(value)) {
    const ta = typedArrayTag.call(value);
    if (ta === undefined) return `DataView { byteLength: ${value.byteLength}, byteOffset: ${value.byteOffset} }`;
    const items = [];
    const n = Math.min(value.length, MAX_ITEMS);
    for (let i = 0; i < n; i++) items.push(formatPrimitive(value[i], true));
    if (value.length > MAX_ITEMS) items.push(`... ${value.length - MAX_ITEMS} more item${value.length - MAX_ITEMS > 1 ? 's' : ''}`);
    return `${ctor === ta ? ta : prefix(ta)}(${value.length}) ` + wrap('[', items, ']');
  }

  switch (tag) {
    case 'ArrayBuffer':
    case 'SharedArrayBuffer':
      return `${tag} { byteLength: ${value.byteLength} }`;
    case 'Date': {
      const t = value.getTime();
      return Number.isNaN(t) ? 'Invalid Date' : value.toISOString();
    }
    case 'RegExp':
      return RegExp.prototype.toString.call(value);
    case 'Map': {
      const items = [];
      for (const [k, v] of value) {
        if (items.length >= MAX_ITEMS) { items.push(`... ${value.size - MAX_ITEMS} more items`); break; }
        items.push(`${next(k)} => ${next(v)}`);
      }
      items.push(...extraKeys(false));
      return wrap(`${prefix('Map')}(${value.size}) {`, items, '}');
    }
    case 'Set': {
      const items = [];
      for (const v of value) {
        if (items.length >= MAX_ITEMS) { items.push(`... ${value.size - MAX_ITEMS} more items`); break; }
        items.push(next(v));
      }
      items.push(...extraKeys(false));
      return wrap(`${prefix('Set')}(${value.size}) {`, items, '}');
    }
    case 'Promise':
      return `${prefix('Promise')} { <state unknown> }`;
    case 'WeakMap':
    case 'WeakSet':
    case 'WeakRef':
      return `${prefix(tag)} { <items unknown> }`;
    case 'Number':
    case 'String':
    case 'Boolean':
    case 'BigInt':
    case 'Symbol': {
      let prim;
      try { prim = value.valueOf(); } catch { prim = undefined; }
      return `[${tag}: ${formatPrimitive(prim, true)}]`;
    }
    default:
      break;
  }

  const items = extraKeys(false);
  let head;
  if (ctor === null) head = '[Object: null prototype] ';
  else if (ctor === 'Object') head = tag === 'Object' ? '' : `Object [${tag}] `;
  else head = tag === 'Object' || tag === ctor ? `${ctor} ` : `${ctor} [${tag}] `;
  if (tag === 'Module') head = '[Module: null prototype] ';
  return head + wrap('{', items, '}');
}

function inspectTop(v) {
  let s = inspect(v);
  if (s.length > MAX_MESSAGE) s = s.slice(0, MAX_MESSAGE) + '…';
  return s;
}

// Node-style util.format: %s %d %i %f %j %o %O %c %%.
function format(args) {
  budget = INSPECT_BUDGET;
  if (args.length === 0) return '';
  const first = args[0];
  let out = '';
  let rest = 1;
  if (typeof first === 'string') {
    if (args.length === 1) return first;
    let last = 0;
    for (let i = 0; i < first.length - 1; i++) {
      if (first.charCodeAt(i) !== 37) continue; // '%'
      const c = first[i + 1];
      if (c === '%') {
        out += first.slice(last, i) + '%';
        last = i + 2;
        i++;
        continue;
      }
      if (rest >= args.length || !'sdifjoOc'.includes(c)) continue;
      const arg = args[rest];
      let piece;
      switch (c) {
        case 's':
          if (typeof arg === 'bigint') piece = `${arg}n`;
          else if (typeof arg === 'symbol') piece = arg.toString();
          else if (typeof arg === 'number') piece = formatNumber(arg);
          else if (internal.isObject(arg)) piece = inspect(arg, 1);
          else piece = String(arg);
          break;
        case 'd':
          if (typeof arg === 'bigint') piece = `${arg}n`;
          else if (typeof arg === 'symbol' || internal.isObject(arg)) piece = 'NaN';
          else piece = formatNumber(Number(arg));
          break;
        case 'i':
          if (typeof arg === 'bigint') piece = `${arg}n`;
          else if (typeof arg === 'symbol') piece = 'NaN';
          else piece = formatNumber(parseInt(String(arg), 10));
          break;
        case 'f':
          piece = typeof arg === 'symbol' ? 'NaN' : formatNumber(parseFloat(String(arg)));
          break;
        case 'j':
          try {
            piece = JSON.stringify(arg);
            if (piece === undefined) piece = 'undefined';
          } catch {
            piece = '[Circular]';
          }
          break;
        case 'o':
          piece = inspect(arg, 4);
          break;
        case 'O':
          piece = inspect(arg);
          break;
        case 'c':
          piece = '';
          break;
      }
      out += first.slice(last, i) + piece;
      last = i + 2;
      i++;
      rest++;
    }
    out += first.slice(last);
  } else {
    out = inspectTop(first);
  }
  for (; rest < args.length; rest++) {
    const a = args[rest];
    out += ' ' + (typeof a === 'string' ? a : inspectTop(a));
  }
  if (out.length > MAX_MESSAGE) out = out.slice(0, MAX_MESSAGE) + '…';
  return out;
}

internal.inspect = (v) => {
  budget = INSPECT_BUDGET;
  return inspectTop(v);
};
internal.format = format;
internal.formatError = (e) => (internal.isObject(e) && (e instanceof Error || internal.isDOMException(e)) ? errorString(e) : internal.inspect(e));

let groupIndent = '';
const counts = new Map();
const timersByLabel = new Map();

function emit(level, message) {
  if (groupIndent !== '') message = groupIndent + message.replaceAll('\n', '\n' + groupIndent);
  host.log(level, message);
}

function stackBelow(fn) {
  const holder = {};
  if (typeof Error.captureStackTrace === 'function') {
    Error.captureStackTrace(holder, fn);
    const s = String(holder.stack ?? '');
    const nl = s.indexOf('\n');
    return nl < 0 ? '' : s.slice(nl + 1);
  }
  const s = String(new Error().stack ?? '');
  return s.split('\n').slice(2).join('\n');
}

const consoleObject = {
  log(...args) { emit('log', format(args)); },
  info(...args) { emit('info', format(args)); },
  debug(...args) { emit('debug', format(args)); },
  warn(...args) { emit('warn', format(args)); },
  error(...args) { emit('error', format(args)); },
  dir(item = undefined) { emit('log', internal.inspect(item)); },
  dirxml(...args) { emit('log', format(args)); },
  table(...args) { emit('log', format(args)); },
  trace(...args) {
    const msg = format(args);
    const stack = stackBelow(consoleObject.trace);
    emit('debug', `Trace${msg === '' ? '' : ': ' + msg}${stack === '' ? '' : '\n' + stack}`);
  },
  assert(condition = false, ...args) {
    if (condition) return;
    if (args.length === 0) emit('error', 'Assertion failed');
    else if (typeof args[0] === 'string') emit('error', `Assertion failed: ${format(args)}`);
    else emit('error', `Assertion failed: ${format(args)}`);
  },
  count(label = 'default') {
    label = internal.toDOMString(label);
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    emit('log', `${label}: ${n}`);
  },
  countReset(label = 'default') {
    label = internal.toDOMString(label);
    if (counts.has(label)) counts.set(label, 0);
    else emit('warn', `Count for '${label}' does not exist`);
  },
  group(...args) {
    if (args.length > 0) emit('log', format(args));
    groupIndent += '  ';
  },
  groupCollapsed(...args) { consoleObject.group(...args); },
  groupEnd() { groupIndent = groupIndent.slice(0, -2); },
  time(label = 'default') {
    label = internal.toDOMString(label);
    if (timersByLabel.has(label)) { emit('warn', `Timer '${label}' already exists`); return; }
    timersByLabel.set(label, host.now());
  },
  timeLog(label = 'default', ...data) {
    label = internal.toDOMString(label);
    const t = timersByLabel.get(label);
    if (t === undefined) { emit('warn', `Timer '${label}' does not exist`); return; }
    const extra = data.length ? ' ' + format(data) : '';
    emit('log', `${label}: ${host.now() - t}ms${extra}`);
  },
  timeEnd(label = 'default') {
    label = internal.toDOMString(label);
    const t = timersByLabel.get(label);
    if (t === undefined) { emit('warn', `Timer '${label}' does not exist`); return; }
    timersByLabel.delete(label);
    emit('log', `${label}: ${host.now() - t}ms`);
  },
  // V8's console has these too (devtools' profiler and timeline; the
  // terminal's clear): nothing to do in a Worker.
  clear() {},
  profile() {},
  profileEnd() {},
  timeStamp() {},
  context() { return consoleObject; },
  createTask() { return { run: (fn) => fn() }; },
};
internal.setToStringTag(consoleObject, 'console');

for (const [name, props] of Object.entries({
  Headers: [], URLSearchParams: [], URL: ['href'],
  Request: ['method', 'url', 'headers', 'bodyUsed'],
  Response: ['status', 'statusText', 'headers', 'ok', 'redirected', 'type', 'url', 'bodyUsed'],
  AbortController: ['signal'], AbortSignal: ['aborted', 'reason'],
  Blob: ['size', 'type'], File: ['name', 'size', 'type', 'lastModified'],
  ReadableStream: ['locked'], WritableStream: ['locked'], TransformStream: ['readable', 'writable'],
  TextEncoder: ['encoding'], TextDecoder: ['encoding', 'fatal', 'ignoreBOM'],
  Event: ['type', 'defaultPrevented', 'cancelable', 'timeStamp'],
  CryptoKey: ['type', 'extractable', 'algorithm', 'usages'],
})) {
  if (typeof globalThis[name] === 'function') internal.registerInspector(globalThis[name], props);
}

internal.defineGlobal('console', consoleObject);
