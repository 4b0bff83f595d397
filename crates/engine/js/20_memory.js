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

const ArrayBufferConstructor = internal.proxy(NativeArrayBuffer, {
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

