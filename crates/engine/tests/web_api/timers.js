// setTimeout / setInterval / clear*, queueMicrotask, scheduler.wait.

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
    // Waits on what happened, not on a clock: each inner interval clears
    // itself on its second tick, and the test goes on when both have.
    const log = [];
    await new Promise((resolve) => {
      let outer = 0;
      let finished = 0;
      const o = setInterval(() => {
        const n = ++outer;
        let inner = 0;
        const i = setInterval(() => {
          log.push(`${n}.${++inner}`);
          if (inner === 2) {
            clearInterval(i);
            if (++finished === 2) resolve();
          }
        }, 1);
        if (n === 2) clearInterval(o);
      }, 5);
    });
    // A cleared 1 ms interval would tick again before this 10 ms timeout.
    await new Promise((resolve) => setTimeout(resolve, 10));
    deepEq(log.filter((x) => x.startsWith('1.')), ['1.1', '1.2']);
    deepEq(log.filter((x) => x.startsWith('2.')), ['2.1', '2.2']);
    eq(log.length, 4, 'no interval ticks after it is cleared');
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
