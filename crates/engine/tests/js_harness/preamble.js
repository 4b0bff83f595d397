// The Web API suites' test harness: every runner puts it before the suite's
// own text (tests/web_api.rs, js_harness/harness.js), so a suite is this file and
// its own, read as one worker script (tests/web_api/README.md).
let results;
const fmt = (v) => { try { return typeof v === 'string' ? JSON.stringify(v) : typeof v === 'bigint' ? `${v}n` : JSON.stringify(v) ?? String(v); } catch { return String(v); } };
async function test(name, fn) {
  try {
    await fn();
    results.passed++;
  } catch (e) {
    results.failed.push({ name, error: String((e && e.stack) || e) });
  }
}
function assert(cond, msg = 'assertion failed') { if (!cond) throw new Error(msg); }
function eq(actual, expected, msg = 'eq') {
  if (!Object.is(actual, expected)) throw new Error(`${msg}: expected ${fmt(expected)}, got ${fmt(actual)}`);
}
function deepEq(actual, expected, msg = 'deepEq') {
  const a = JSON.stringify(actual), b = JSON.stringify(expected);
  if (a !== b) throw new Error(`${msg}: expected ${b}, got ${a}`);
}
function checkError(e, expected, msg) {
  if (typeof expected === 'function') {
    if (!(e instanceof expected)) throw new Error(`${msg}: expected ${expected.name}, got ${e && e.name}: ${e && e.message}`);
  } else if (typeof expected === 'string') {
    if (!e || e.name !== expected) throw new Error(`${msg}: expected error named ${expected}, got ${e && e.name}: ${e && e.message}`);
    if (!['Error', 'TypeError', 'RangeError', 'SyntaxError', 'EvalError', 'ReferenceError'].includes(expected) && !(e instanceof DOMException)) {
      throw new Error(`${msg}: expected a DOMException named ${expected}`);
    }
  }
}
function throws(fn, expected, msg = 'throws') {
  try { fn(); } catch (e) { checkError(e, expected, msg); return e; }
  throw new Error(`${msg}: did not throw`);
}
async function rejects(p, expected, msg = 'rejects') {
  let promise;
  try { promise = typeof p === 'function' ? p() : p; } catch (e) { throw new Error(`${msg}: threw synchronously instead of rejecting: ${e}`); }
  assert(promise && typeof promise.then === 'function', `${msg}: did not return a promise`);
  try { await promise; } catch (e) { checkError(e, expected, msg); return e; }
  throw new Error(`${msg}: did not reject`);
}
const tick = () => new Promise((r) => setTimeout(r, 0));
const bytes = (...xs) => new Uint8Array(xs);
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
function suite(run) {
  return {
    async fetch(request, env, ctx) {
      results = { passed: 0, failed: [] };
      try {
        await run(request, env, ctx);
      } catch (e) {
        results.failed.push({ name: '(suite)', error: String((e && e.stack) || e) });
      }
      return new Response(JSON.stringify(results), { headers: { 'content-type': 'application/json' } });
    },
  };
}
