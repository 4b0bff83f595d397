// Our own stand-in for the `test/common` module that Node's
// test/parallel/test-*.js files require (`require('../common')`), written
// for a Worker: the helpers those files use (mustCall and friends,
// expectsError, invalidArgTypeHelper, the platform flags), and `run`, the
// Worker-side runner. run(load) evaluates one test file, waits until the
// timers it started have fired or been cleared, calls its `process.on('exit')`
// listeners, then checks that every mustCall was called as often as it said.
// A file passes as in Node: nothing throws (at load, in a timer, as an
// unhandled rejection), all its async work settles, every mustCall was called.
// A helper this file does not have throws, naming itself, so the printout
// says which one the file needed.
const assert = require("node:assert");
const util = require("node:util");

const SETTLE_MS = 5000;
const calls = [];
const errors = [];
const exitListeners = [];
const pending = new Set();
const warnings = [];

const original = {
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
};

function callSite() {
  const line = (new Error().stack ?? "").split("\n")[3] ?? "";
  return line.trim();
}

function track(fn, exact, min, name) {
  const record = { name: name ?? (fn && fn.name) ?? "<anonymous>", exact, min, actual: 0, site: callSite() };
  calls.push(record);
  const wrapped = function (...args) {
    record.actual++;
    return fn ? fn.apply(this, args) : undefined;
  };
  Object.defineProperty(wrapped, "length", { value: fn ? fn.length : 0 });
  Object.defineProperty(wrapped, "name", { value: fn ? fn.name : "mustCall" });
  return wrapped;
}

function mustCall(fn, exact = 1) {
  if (typeof fn === "number") [fn, exact] = [undefined, fn];
  return track(fn, exact, undefined);
}

function mustCallAtLeast(fn, min = 1) {
  if (typeof fn === "number") [fn, min] = [undefined, fn];
  return track(fn, undefined, min);
}

function mustNotCall(message) {
  const site = callSite();
  return function mustNotCall(...args) {
    const shown = args.map((a) => util.inspect(a)).join(", ");
    throw new assert.AssertionError({ message: `${message ?? "function should not have been called"} at ${site}; called with ${shown}` });
  };
}

function mustSucceed(fn, exact) {
  return mustCall(function (error, ...args) {
    assert.ifError(error);
    return fn ? fn.apply(this, args) : undefined;
  }, exact);
}

/** `expectsError(fn, settings)` asserts fn throws such an error;
 * `expectsError(settings, exact)` returns a mustCall that checks the error it
 * gets and returns true, so it also serves as assert.throws' validator. */
function expectsError(first, second, exact) {
  if (typeof first === "function" && typeof second === "object" && second !== null) {
    assert.throws(first, matcher(second));
    return undefined;
  }
  const check = matcher(first);
  return mustCall((error) => check(error), typeof second === "number" ? second : exact);
}

/** A validator for assert.throws: `type` by instanceof, `message` by equality or RegExp, the rest deeply equal. */
function matcher(expected) {
  if (typeof expected !== "object" || expected === null || expected instanceof RegExp) {
    return (error) => {
      assert.throws(() => { throw error; }, expected);
      return true;
    };
  }
  return (error) => {
    for (const [key, value] of Object.entries(expected)) {
      if (key === "type") assert.ok(error instanceof value, `expected a ${value.name}, got ${util.inspect(error)}`);
      else if (key === "message" && value instanceof RegExp) assert.match(String(error && error.message), value);
      else assert.deepStrictEqual(error && error[key], value, `error.${key}`);
    }
    return true;
  };
}

/** What Node's ERR_INVALID_ARG_TYPE message appends about the value received. */
function invalidArgTypeHelper(value) {
  if (value === null || value === undefined) return ` Received ${value}`;
  if (typeof value === "function") return ` Received function ${value.name}`;
  if (typeof value === "object") {
    const name = value.constructor && value.constructor.name;
    return name ? ` Received an instance of ${name}` : ` Received ${util.inspect(value, { depth: -1 })}`;
  }
  let shown = util.inspect(value, { colors: false });
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return ` Received type ${typeof value} (${shown})`;
}

const VIEW_TYPES = ["Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
  "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array", "DataView"];

/** Every kind of ArrayBufferView over the bytes of `bytes` whose element size divides its length. */
function getArrayBufferViews(bytes) {
  const { buffer, byteOffset, byteLength } = bytes;
  const views = [];
  for (const name of VIEW_TYPES) {
    const Type = globalThis[name];
    const size = Type.BYTES_PER_ELEMENT ?? 1;
    if (byteLength % size === 0) views.push(new Type(buffer, byteOffset, byteLength / size));
  }
  return views;
}

function getBufferSources(bytes) {
  return [...getArrayBufferViews(bytes), new Uint8Array(bytes).buffer];
}

function expectWarning(name, expected, code) {
  warnings.push({ name, expected, code });
}

class Skip extends Error {}

const common = {
  mustCall, mustCallAtLeast, mustNotCall, mustSucceed, expectsError, expectWarning, invalidArgTypeHelper,
  fail: (message) => { throw new assert.AssertionError({ message: message ?? "fail" }); },
  getArrayBufferViews, getBufferSources,
  platformTimeout: (ms) => ms,
  mustNotMutateObjectDeep: (object) => object,
  allowGlobals: () => {},
  skip: (message) => { throw new Skip(`skipped: ${message}`); },
  printSkipMessage: () => {},
  hasIntl: typeof Intl === "object", hasCrypto: true, hasOpenSSL3: true, hasQuic: false, hasFipsCrypto: false,
  isWindows: false, isLinux: true, isOSX: false, isMacOS: false, isSunOS: false, isAIX: false, isIBMi: false,
  isFreeBSD: false, isOpenBSD: false, isLinuxPPCBE: false, isMainThread: true, isDumbTerminal: false,
  enoughTestMem: false, buildType: "Release", localhostIPv4: "127.0.0.1", PORT: 12346,
  run,
};

function wrapTimer(set, clear, once) {
  globalThis[set] = function (fn, ms, ...args) {
    const id = original[set].call(globalThis, () => {
      if (once) pending.delete(id);
      try {
        if (typeof fn === "function") fn(...args);
      } catch (error) {
        errors.push(error);
      }
    }, ms);
    pending.add(id);
    return id;
  };
  globalThis[clear] = function (id) {
    pending.delete(id);
    return original[clear].call(globalThis, id);
  };
}

/** `process.on('exit', fn)` listeners run at the end of run(); the rest go to the runtime's process. */
function captureExit() {
  const proc = globalThis.process;
  if (!proc) return;
  for (const method of ["on", "once", "addListener"]) {
    const own = proc[method];
    if (typeof own !== "function") continue;
    proc[method] = function (event, fn) {
      if (event === "exit") {
        exitListeners.push(fn);
        return this;
      }
      return own.call(this, event, fn);
    };
  }
}

function install() {
  wrapTimer("setTimeout", "clearTimeout", true);
  wrapTimer("setInterval", "clearInterval", false);
  captureExit();
  if (typeof globalThis.addEventListener === "function") {
    globalThis.addEventListener("unhandledrejection", (event) => errors.push(event.reason));
  }
}

function turn(ms) {
  return new Promise((resolve) => original.setTimeout.call(globalThis, resolve, ms));
}

async function settle() {
  const deadline = Date.now() + SETTLE_MS;
  await turn(0);
  while (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`did not settle: ${pending.size} timer(s) still pending after ${SETTLE_MS} ms`);
    await turn(5);
  }
  await turn(0);
}

function unmet() {
  return calls.filter((c) => (c.exact !== undefined ? c.actual !== c.exact : c.actual < c.min))
    .map((c) => `mustCall ${c.name}: expected ${c.exact !== undefined ? `exactly ${c.exact}` : `at least ${c.min}`}, called ${c.actual} (${c.site})`);
}

/** Evaluates the test file (`load` imports it) and checks it as Node would at exit. */
async function run(load) {
  install();
  await load();
  await settle();
  if (errors.length) throw errors[0];
  for (const fn of exitListeners) fn.call(globalThis.process, 0);
  const missing = unmet();
  if (missing.length) throw new Error(missing.slice(0, 3).join("; "));
  return calls.length;
}

module.exports = new Proxy(common, {
  get(target, key) {
    if (key in target || typeof key !== "string" || key === "then" || key === "__esModule" || key === "default") return target[key];
    throw new Error(`common.${key} is not in our test/common shim`);
  },
});
