// 99_finalize.js — runs last: hide the host from worker code and remove the
// blocking shared-memory primitives (Spectre hygiene). `SharedArrayBuffer`
// itself never exists: the engine starts V8 with
// `--enable-sharedarraybuffer-per-context` and enables it for no context.
// `__isolane_internal` stays for the engine, which takes it into a private
// slot before any worker code runs.
'use strict';

// Node's built-ins are not in the snapshot: they load when a Worker first
// imports one (src/modules/node.rs) and reach the host through `internal`,
// which worker code never sees.
internal.host = host;
delete globalThis.__host;
delete Atomics.wait;
delete Atomics.waitAsync;
