// 99_finalize.js — runs last: hide the host from worker code and remove the
// shared-memory primitives (Spectre hygiene). `__isolane_internal` stays for
// the engine, which takes it into a private slot before any worker code runs.
'use strict';

delete globalThis.__host;
delete globalThis.SharedArrayBuffer;
if (typeof Atomics === 'object' && Atomics !== null) {
  delete Atomics.wait;
  delete Atomics.waitAsync;
}
