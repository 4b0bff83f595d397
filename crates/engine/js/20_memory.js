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

// V8 adds `WebAssembly` to each context as it is made from the snapshot,
// so the engine calls this once per new context (isolate.rs).
internal.refuseWebAssembly = function refuseWebAssembly() {
  const wasm = globalThis.WebAssembly;
  if (!internal.isObject(wasm)) return;
  const refused = {};
  for (const name of Object.getOwnPropertyNames(wasm)) {
    const value = wasm[name];
    if (typeof value !== 'function' || /Error$/.test(name)) {
      refused[name] = value;
    } else if (name === 'validate') {
      refused[name] = function validate() { return false; };
    } else if (name[0] === name[0].toLowerCase()) {
      // compile, instantiate, compileStreaming, instantiateStreaming
      refused[name] = { [name]() { return Promise.reject(new wasm.CompileError(WASM_REFUSED)); } }[name];
    } else {
      // Module, Instance, Memory, Table, Global, Tag, Exception
      refused[name] = { [name]: class { constructor() { throw new wasm.CompileError(WASM_REFUSED); } } }[name];
    }
  }
  Object.defineProperty(refused, Symbol.toStringTag, { value: 'WebAssembly', configurable: true });
  internal.defineGlobal('WebAssembly', refused);
};
