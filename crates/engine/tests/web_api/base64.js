// atob / btoa (forgiving-base64), including the exact error behaviour.
// ---- tiny test harness (same in every suite; suites are single-file workers) ----
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
// ---- end of harness ----

export default suite(async () => {
  await test('btoa', () => {
    eq(btoa(''), '');
    eq(btoa('f'), 'Zg==');
    eq(btoa('fo'), 'Zm8=');
    eq(btoa('foo'), 'Zm9v');
    eq(btoa('foob'), 'Zm9vYg==');
    eq(btoa('\x00\xff\xfe'), 'AP/+');
    eq(btoa(null), 'bnVsbA==', 'null -> "null"');
    eq(btoa(undefined), 'dW5kZWZpbmVk', 'undefined -> "undefined"');
    eq(btoa(12), 'MTI=');
  });
  await test('btoa errors', () => {
    const e = throws(() => btoa('\u0100'), 'InvalidCharacterError', 'code point above 0xFF');
    assert(e instanceof DOMException, 'is a DOMException');
    eq(e.code, 5, 'legacy code');
    throws(() => btoa('a\u20acb'), 'InvalidCharacterError', 'euro sign');
    throws(() => btoa('\ud83d\ude00'), 'InvalidCharacterError', 'emoji');
    throws(() => btoa(), TypeError, 'missing argument');
    throws(() => btoa(Symbol('x')), TypeError, 'symbol');
  });
  await test('atob', () => {
    eq(atob(''), '');
    eq(atob('Zg=='), 'f');
    eq(atob('Zg'), 'f', 'no padding');
    eq(atob('Zm9v'), 'foo');
    eq(atob(' Z m\t9\nv\f\r'), 'foo', 'ASCII whitespace is ignored');
    eq(atob('AP/+'), '\x00\xff\xfe');
    eq(atob(null), '\x9e\xe9e', 'null -> "null"');
    eq(atob('YQ'), 'a');
    eq(atob('YR=='), 'a', 'non-zero trailing bits are discarded');
  });
  await test('atob errors', () => {
    for (const bad of ['a', 'Zg=', 'abcde', 'Zg===', '=Zg=', 'Z=g=', 'Zm9v=', 'Zm9vY', '\u00ff\u00ff', 'Zg==Zg==', 'Zm-v', 'Zm_v', 'Zm9v\u00a0', undefined]) {
      const e = throws(() => atob(bad), 'InvalidCharacterError', `atob(${JSON.stringify(bad)})`);
      assert(e instanceof DOMException, 'DOMException');
    }
    throws(() => atob(), TypeError, 'missing argument');
  });
  await test('round trip of every byte', () => {
    let s = '';
    for (let i = 0; i < 256; i++) s += String.fromCharCode(i);
    eq(atob(btoa(s)), s);
    eq(btoa(s).length, 344);
  });
});
