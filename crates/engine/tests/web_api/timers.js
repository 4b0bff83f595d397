// setTimeout / setInterval / clear*, queueMicrotask, scheduler.wait.
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export default suite(async () => {
  await test('setTimeout returns a number and runs with arguments', async () => {
    let got;
    const id = setTimeout((a, b) => { got = [a, b]; }, 1, 'x', 2);
    eq(typeof id, 'number');
    assert(id > 0, 'positive id');
    await sleep(20);
    deepEq(got, ['x', 2]);
  });
  await test('ordering by delay, then by creation', async () => {
    const log = [];
    setTimeout(() => log.push('c'), 30);
    setTimeout(() => log.push('a'), 0);
    setTimeout(() => log.push('b'), 0);
    setTimeout(() => log.push('neg'), -5);
    await sleep(60);
    deepEq(log, ['a', 'b', 'neg', 'c']);
  });
  await test('clearTimeout', async () => {
    let ran = false;
    const id = setTimeout(() => { ran = true; }, 5);
    clearTimeout(id);
    clearTimeout(id);
    clearTimeout(123456789);
    clearTimeout();
    clearTimeout(null);
    clearTimeout('nonsense');
    await sleep(20);
    eq(ran, false);
  });
  await test('setInterval, clearInterval from inside', async () => {
    let n = 0;
    await new Promise((resolve) => {
      const id = setInterval(() => {
        n++;
        if (n === 3) { clearInterval(id); resolve(); }
      }, 2);
    });
    await sleep(20);
    eq(n, 3, 'stopped after clearInterval');
  });
  await test('nested intervals and timeouts', async () => {
    const log = [];
    await new Promise((resolve) => {
      let outer = 0;
      const o = setInterval(() => {
        outer++;
        let inner = 0;
        const i = setInterval(() => {
          log.push(`${outer}.${++inner}`);
          if (inner === 2) clearInterval(i);
        }, 1);
        if (outer === 2) {
          clearInterval(o);
          setTimeout(resolve, 30);
        }
      }, 5);
    });
    deepEq(log.filter((x) => x.startsWith('1.')), ['1.1', '1.2']);
    deepEq(log.filter((x) => x.startsWith('2.')), ['2.1', '2.2']);
  });
  await test('clearTimeout and clearInterval are interchangeable', async () => {
    let n = 0;
    const id = setInterval(() => n++, 1);
    clearTimeout(id);
    const t = setTimeout(() => n++, 1);
    clearInterval(t);
    await sleep(15);
    eq(n, 0);
  });
  await test('a throwing timer callback does not stop other timers', async () => {
    let after = false;
    setTimeout(() => { throw new Error('timer error (expected in the log)'); }, 0);
    setTimeout(() => { after = true; }, 1);
    await sleep(15);
    eq(after, true);
  });
  await test('argument errors', () => {
    throws(() => setTimeout('1 + 1', 1), TypeError, 'string callbacks are not evaluated');
    throws(() => setTimeout(), TypeError, 'no callback');
    throws(() => setInterval({}, 1), TypeError, 'object callback');
  });
  await test('queueMicrotask', async () => {
    const log = [];
    queueMicrotask(() => log.push('micro'));
    Promise.resolve().then(() => log.push('promise'));
    setTimeout(() => log.push('timeout'), 0);
    log.push('sync');
    await sleep(5);
    deepEq(log, ['sync', 'micro', 'promise', 'timeout']);
    throws(() => queueMicrotask(), TypeError, 'missing');
    throws(() => queueMicrotask('x'), TypeError, 'not a function');
    let after = false;
    queueMicrotask(() => { throw new Error('microtask error (expected in the log)'); });
    queueMicrotask(() => { after = true; });
    await sleep(1);
    eq(after, true, 'an error does not stop later microtasks');
  });
  await test('scheduler.wait', async () => {
    let done = false;
    const p = scheduler.wait(5).then(() => { done = true; });
    eq(done, false);
    await p;
    eq(done, true);
    const ac = new AbortController();
    const w = scheduler.wait(1000, { signal: ac.signal });
    ac.abort();
    await rejects(w, 'AbortError', 'aborted wait');
  });
});
