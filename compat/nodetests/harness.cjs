// The test API that Node's tests, as the npm ports of Node's modules ship
// them, expect (tape's `test`, `t.equal`, `test.onFinish`; mocha's `test`),
// over node:assert, and the Worker-side runner: run(load) evaluates one test
// file, then its registered tests one after another, then the onFinish
// callbacks (the files' mustCall checks). A file passes as a Node test does:
// nothing throws and every registered test ends without a failed assertion.
const assert = require("node:assert");

const tests = [];
const finishers = [];

function assertions(state) {
  const check = (fn) => (...args) => {
    state.count++;
    fn(...args);
    if (state.plan !== undefined && state.count >= state.plan) state.done();
  };
  return {
    ok: check((v, msg) => assert.ok(v, msg)),
    notOk: check((v, msg) => assert.ok(!v, msg)),
    equal: check((a, b, msg) => assert.strictEqual(a, b, msg)),
    notEqual: check((a, b, msg) => assert.notStrictEqual(a, b, msg)),
    deepEqual: check((a, b, msg) => assert.deepStrictEqual(a, b, msg)),
    notDeepEqual: check((a, b, msg) => assert.notDeepStrictEqual(a, b, msg)),
    looseEqual: check((a, b, msg) => assert.equal(a, b, msg)),
    throws: check((fn, expected, msg) => assert.throws(fn, ...(expected === undefined ? [] : [expected]), msg)),
    doesNotThrow: check((fn, msg) => assert.doesNotThrow(fn, msg)),
    ifError: check((e) => assert.ifError(e)),
    pass: check(() => {}),
    fail: check((msg) => assert.fail(msg)),
  };
}

function aliases(t) {
  const names = { ok: ["assert", "true"], notOk: ["false", "notok"], equal: ["equals", "is", "strictEqual", "isEqual"],
    notEqual: ["notEquals", "isNot", "notStrictEqual"], deepEqual: ["same", "deepEquals", "isEquivalent"],
    notDeepEqual: ["notSame"], ifError: ["error"] };
  for (const [name, others] of Object.entries(names)) for (const other of others) t[other] = t[name];
  return t;
}

function runOne(entry) {
  return new Promise((resolve, reject) => {
    const listeners = [];
    const state = { count: 0, plan: undefined, finished: false };
    state.done = () => {
      if (state.finished) return;
      state.finished = true;
      for (const fn of listeners) fn();
      resolve();
    };
    const t = aliases(assertions(state));
    t.plan = (n) => (state.plan = n);
    t.end = (error) => (error ? reject(error) : state.done());
    t.on = (event, fn) => event === "end" && listeners.push(fn);
    t.comment = () => {};
    t.skip = () => {};
    t.timeoutAfter = () => {};
    try {
      const out = entry.fn(t);
      if (out && typeof out.then === "function") out.then(() => entry.mocha && state.done(), reject);
      else if (entry.mocha && entry.fn.length === 0) state.done();
    } catch (error) {
      reject(error);
    }
  });
}

function test(name, opts, fn) {
  if (typeof opts === "function") [fn, opts] = [opts, {}];
  if (opts?.skip || !fn) return;
  tests.push({ name, fn });
}
test.onFinish = (fn) => finishers.push(fn);
test.skip = () => {};
test.only = test;

/** mocha's `test(name, fn)`: sync unless it takes `done` or returns a promise. */
function mochaTest(name, fn) {
  tests.push({ name, mocha: true, fn: fn.length ? (t) => fn((e) => t.end(e)) : fn });
}

/** The `exports["test …"] = function (assert) {…}` form (CommonJS test runners). */
function exportedTests(mod) {
  const exported = mod && (mod.default ?? mod);
  if (!exported || typeof exported !== "object") return;
  for (const [name, fn] of Object.entries(exported)) {
    if (name.startsWith("test") && typeof fn === "function") tests.push({ name, mocha: true, fn: () => fn(assert) });
  }
}

async function run(load) {
  exportedTests(await load());
  for (const entry of tests) {
    await Promise.race([
      runOne(entry),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`test "${entry.name}" did not end`)), 5000)),
    ]).catch((error) => {
      throw new Error(`${entry.name}: ${error && error.message}`);
    });
  }
  for (const fn of finishers) fn();
  return tests.length;
}

module.exports = test;
module.exports.test = test;
module.exports.mocha = { test: mochaTest, it: mochaTest, describe: (name, fn) => fn() };
module.exports.run = run;
