// 20_memory.js — the memory V8 does not allocate through the engine's
// ArrayBuffer allocator (see src/memory.rs), made to count against the
// worker's memory limit or refused:
// - a resizable ArrayBuffer reserves its `maxByteLength` up front, outside
//   the allocator, and grows into it without asking: the reservation is
//   charged when the buffer is made (host.memoryReserve), for the life of
//   the isolate;
// - WebAssembly is refused at once, with a clear error: a Wasm memory grows
//   from Wasm code, outside any accounting, and asynchronous compilation
//   needs V8 platform tasks that the engine does not run. The engine also
//   refuses Wasm code generation itself (isolate.rs), whatever a worker
//   finds to call.
'use strict';

const NativeArrayBuffer = ArrayBuffer;

internal.defineGlobal('ArrayBuffer', new Proxy(NativeArrayBuffer, {
  construct(target, args, newTarget) {
    const options = args[1];
    if (internal.isObject(options)) {
      const max = options.maxByteLength;
      // Over the limit this stops the worker (memory_limit).
      if (max !== undefined) host.memoryReserve(Number(max));
    }
    return Reflect.construct(target, args, newTarget);
  },
}));

const WASM_REFUSED = 'WebAssembly is not available on Isolane: Wasm memory cannot yet be held to the worker\'s memory limit.';

// What the worker sees as `WebAssembly`, built once into the snapshot.
const refusedWasm = {};
function wasmRefusal() {
  return new refusedWasm.CompileError(WASM_REFUSED);
}
for (const name of ['compile', 'instantiate', 'compileStreaming', 'instantiateStreaming']) {
  refusedWasm[name] = { [name]() { return Promise.reject(wasmRefusal()); } }[name];
}
refusedWasm.validate = function validate() { return false; };
for (const name of ['Module', 'Instance', 'Memory', 'Table', 'Global', 'Tag', 'Exception']) {
  refusedWasm[name] = { [name]: class { constructor() { throw wasmRefusal(); } } }[name];
}
refusedWasm.CompileError = Error;
Object.defineProperty(refusedWasm, Symbol.toStringTag, { value: 'WebAssembly', configurable: true });

// V8 adds `WebAssembly` to each context as it is made from the snapshot,
// so the engine calls this once per new context (isolate.rs): the real
// one's error classes are kept, everything else refuses.
internal.refuseWebAssembly = function refuseWebAssembly() {
  const wasm = globalThis.WebAssembly;
  if (!internal.isObject(wasm) || wasm === refusedWasm) return;
  refusedWasm.CompileError = wasm.CompileError;
  refusedWasm.LinkError = wasm.LinkError;
  refusedWasm.RuntimeError = wasm.RuntimeError;
  internal.defineGlobal('WebAssembly', refusedWasm);
};
// Compiled now, into the snapshot (which has no WebAssembly: a no-op).
internal.refuseWebAssembly();
