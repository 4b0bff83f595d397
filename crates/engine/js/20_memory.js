// 20_memory.js — the memory V8 does not allocate through the engine's
// ArrayBuffer allocator (see src/memory.rs), made to count against the
// worker's memory limit or refused:
// - a resizable ArrayBuffer reserves its `maxByteLength` of address space
//   up front, outside the allocator, and commits pages as it grows. The
//   pages are counted by the engine from V8's own external-memory figure,
//   however the buffer was made (memory.rs); the reservation is bounded
//   here: only the constructor below makes resizable buffers, and it
//   reserves `maxByteLength` first (host.memoryReserve), for the life of
//   the isolate. V8's own constructor is never reachable from worker code:
//   `ArrayBuffer.prototype.constructor` is this one too, and the native
//   one is only ever called with numbers and the runtime's own options
//   object, so no worker code (a getter, a `valueOf`, a proxy as
//   `newTarget`) runs inside it, where a stack trace could hand it out;
//   `structuredClone` reserves for the resizable buffers it makes;
// - Wasm memories are held to the limit by 25_wasm.js.
'use strict';

const NativeArrayBuffer = ArrayBuffer;
const nativePrototype = NativeArrayBuffer.prototype;
const resizableOf = Object.getOwnPropertyDescriptor(nativePrototype, 'resizable').get;
const maxByteLengthOf = Object.getOwnPropertyDescriptor(nativePrototype, 'maxByteLength').get;
const { apply, ownKeys, getOwnPropertyDescriptor, getPrototypeOf, setPrototypeOf } = Reflect;
const { trunc } = Math;

// ECMAScript ToIndex, run here (a `valueOf` runs in this frame, not V8's).
function toIndex(value, message) {
  const number = value === undefined ? 0 : trunc(+value) || 0;
  if (number < 0 || number > Number.MAX_SAFE_INTEGER) throw new RangeError(message);
  return number;
}

// Whether a resizable buffer was ever made in this isolate: only then does
// `structuredClone` look for them in what it made.
let resizableMade = false;

const ArrayBufferConstructor = new Proxy(NativeArrayBuffer, {
  construct(target, args, newTarget) {
    const length = toIndex(args[0], 'Invalid array buffer length');
    const options = args[1];
    let max;
    if (internal.isObject(options)) {
      const requested = options.maxByteLength;
      if (requested !== undefined) max = toIndex(requested, 'Invalid array buffer max length');
    }
    const proto = newTarget === ArrayBufferConstructor ? nativePrototype : newTarget.prototype;
    let buffer;
    if (max === undefined) {
      buffer = new NativeArrayBuffer(length);
    } else {
      if (length > max) throw new RangeError('Invalid array buffer max length');
      // Over the limit this stops the worker (memory_limit).
      host.memoryReserve(max);
      resizableMade = true;
      buffer = new NativeArrayBuffer(length, { maxByteLength: max });
    }
    if (proto !== nativePrototype) setPrototypeOf(buffer, internal.isObject(proto) ? proto : nativePrototype);
    return buffer;
  },
});

internal.defineGlobal('ArrayBuffer', ArrayBufferConstructor);
Object.defineProperty(nativePrototype, 'constructor', {
  value: ArrayBufferConstructor, writable: true, enumerable: false, configurable: true,
});

const viewBuffer = Object.getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), 'buffer').get;
const dataViewBuffer = Object.getOwnPropertyDescriptor(DataView.prototype, 'buffer').get;
const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size').get;
const mapForEach = Map.prototype.forEach;
const setForEach = Set.prototype.forEach;
const isView = ArrayBuffer.isView;

// `getter` applied to `v`, or undefined when `v` lacks its brand (intrinsic
// getters throw then; `instanceof` could be fooled by `Symbol.hasInstance`).
function branded(getter, v) {
  try {
    return apply(getter, v, []);
  } catch {
    return undefined;
  }
}

// Reserves for every resizable buffer in `value`, a graph `structuredClone`
// has just made (plain data: V8's deserializer runs no worker code, and
// the intrinsics used here were taken before any worker code ran).
internal.reserveCloned = function reserveCloned(value) {
  if (!resizableMade || !internal.isObject(value)) return;
  const seen = new Set();
  const stack = [value];
  const visit = (v) => { if (internal.isObject(v) && !seen.has(v)) stack.push(v); };
  while (stack.length > 0) {
    const v = stack.pop();
    if (seen.has(v)) continue;
    seen.add(v);
    if (isView(v)) {
      visit(branded(viewBuffer, v) ?? branded(dataViewBuffer, v));
      continue;
    }
    const resizable = branded(resizableOf, v);
    if (resizable !== undefined) {
      if (resizable) host.memoryReserve(apply(maxByteLengthOf, v, []));
      continue;
    }
    if (branded(mapSize, v) !== undefined) apply(mapForEach, v, [(val, key) => { visit(key); visit(val); }]);
    else if (branded(setSize, v) !== undefined) apply(setForEach, v, [visit]);
    for (const key of ownKeys(v)) {
      const d = getOwnPropertyDescriptor(v, key);
      if (d !== undefined && 'value' in d) visit(d.value);
    }
  }
};

// Builtins that make a string or fill an array of any size in one step V8
// cannot interrupt: asked for more than the worker's memory has room for,
// they end at `memory_limit` before they start (host.memoryCheck), instead
// of taking hundreds of MiB past the limit (the near-heap-limit grant) and
// holding the thread for seconds. The wrappers convert their arguments
// themselves and pass the natives primitives (and `fill` an explicit
// range within the one checked), so what was checked is what is made.
const HUGE = 1 << 20;
const nativeRepeat = String.prototype.repeat;
const nativePadStart = String.prototype.padStart;
const nativePadEnd = String.prototype.padEnd;
const nativeFill = Array.prototype.fill;
const { max, min } = Math;

function toIntegerOrInfinity(value) {
  const number = +value;
  return number !== number ? 0 : trunc(number);
}

function coercibleString(value, method) {
  if (value === null || value === undefined) {
    throw new TypeError(`String.prototype.${method} called on null or undefined`);
  }
  return `${value}`;
}

function redefine(target, name, method) {
  Object.defineProperty(target, name, { value: method, writable: true, enumerable: false, configurable: true });
}

redefine(String.prototype, 'repeat', {
  repeat(count) {
    const string = coercibleString(this, 'repeat');
    const times = +count;
    const size = string.length * times;
    if (size > HUGE && size !== Infinity) host.memoryCheck(size);
    return apply(nativeRepeat, string, [times]);
  },
}.repeat);

for (const [name, native] of [['padStart', nativePadStart], ['padEnd', nativePadEnd]]) {
  redefine(String.prototype, name, {
    [name](maxLength, ...fill) {
      const string = coercibleString(this, name);
      const length = +maxLength;
      const filler = fill[0] === undefined ? undefined : `${fill[0]}`;
      if (length > HUGE && filler !== '') host.memoryCheck(length);
      return apply(native, string, filler === undefined ? [length] : [length, filler]);
    },
  }[name]);
}

redefine(Array.prototype, 'fill', {
  fill(value, ...range) {
    if (this === null || this === undefined) {
      throw new TypeError('Array.prototype.fill called on null or undefined');
    }
    const object = Object(this);
    const length = min(max(toIntegerOrInfinity(object.length), 0), Number.MAX_SAFE_INTEGER);
    const start = toIntegerOrInfinity(range[0]);
    const from = start < 0 ? max(length + start, 0) : min(start, length);
    const end = range[1] === undefined ? length : toIntegerOrInfinity(range[1]);
    const to = end < 0 ? max(length + end, 0) : min(end, length);
    // At least 4 bytes an element (compressed pointers).
    if ((to - from) * 4 > HUGE) host.memoryCheck((to - from) * 4);
    return apply(nativeFill, object, [value, from, to]);
  },
}.fill);
