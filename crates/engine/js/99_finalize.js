// 99_finalize.js — runs last: hide the host from worker code and remove the
// shared-memory primitives (Spectre hygiene). `__isolane_internal` stays for
// the engine, which takes it into a private slot before any worker code runs.
'use strict';

function removeSharedMemory() {
  delete globalThis.SharedArrayBuffer;
  if (typeof Atomics === 'object' && Atomics !== null) {
    delete Atomics.wait;
    delete Atomics.waitAsync;
  }
}

delete globalThis.__host;
removeSharedMemory();

// V8 installs SharedArrayBuffer again on every context it deserialises from
// the snapshot, after this file ran. The engine reads `__isolane_internal`
// from each new context before any worker code runs, so that read removes it
// again (and the engine then deletes this accessor).
const internalObject = globalThis.__isolane_internal;
Object.defineProperty(globalThis, '__isolane_internal', {
  get() {
    removeSharedMemory();
    return internalObject;
  },
  enumerable: false,
  configurable: true,
});
