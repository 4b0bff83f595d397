// AbortController and AbortSignal.

export default suite(async () => {
  await test('AbortController.abort()', () => {
    const ac = new AbortController();
    const s = ac.signal;
    assert(s instanceof AbortSignal, 'signal');
    assert(s instanceof EventTarget, 'signals are event targets');
    eq(s.aborted, false);
    eq(s.reason, undefined);
    s.throwIfAborted();
    let events = 0;
    let viaProp = 0;
    s.addEventListener('abort', (e) => { events++; eq(e.type, 'abort'); eq(e.isTrusted, true, 'trusted'); });
    s.onabort = () => viaProp++;
    ac.abort();
    eq(s.aborted, true);
    assert(s.reason instanceof DOMException, 'default reason is a DOMException');
    eq(s.reason.name, 'AbortError');
    ac.abort('again');
    eq(events, 1, 'abort fires once');
    eq(viaProp, 1, 'onabort');
    eq(s.reason.name, 'AbortError', 'the first reason stays');
    const e = throws(() => s.throwIfAborted(), 'AbortError');
    eq(e, s.reason, 'throwIfAborted throws the reason itself');
  });
  await test('custom reasons', () => {
    const ac = new AbortController();
    const why = new RangeError('why');
    ac.abort(why);
    eq(ac.signal.reason, why);
    eq(throws(() => ac.signal.throwIfAborted(), RangeError), why);
    const ac2 = new AbortController();
    ac2.abort('text');
    let thrown;
    try { ac2.signal.throwIfAborted(); } catch (x) { thrown = x; }
    eq(thrown, 'text', 'non-error reasons thrown as is');
    const ac3 = new AbortController();
    ac3.abort(undefined);
    eq(ac3.signal.reason.name, 'AbortError', 'undefined means the default');
    const ac4 = new AbortController();
    ac4.abort(null);
    eq(ac4.signal.reason, null, 'null is a reason');
  });
  await test('AbortSignal.abort()', () => {
    const s = AbortSignal.abort();
    eq(s.aborted, true);
    eq(s.reason.name, 'AbortError');
    eq(AbortSignal.abort(42).reason, 42);
  });
  await test('AbortSignal.timeout()', async () => {
    const s = AbortSignal.timeout(5);
    eq(s.aborted, false);
    await new Promise((resolve) => s.addEventListener('abort', resolve));
    eq(s.aborted, true);
    assert(s.reason instanceof DOMException, 'DOMException');
    eq(s.reason.name, 'TimeoutError');
    eq(AbortSignal.timeout(0).aborted, false, 'never synchronous');
    throws(() => AbortSignal.timeout(-1), TypeError, 'negative');
    throws(() => AbortSignal.timeout(), TypeError, 'missing');
  });
  await test('AbortSignal.any()', () => {
    const a = new AbortController();
    const b = new AbortController();
    const any = AbortSignal.any([a.signal, b.signal]);
    eq(any.aborted, false);
    let fired = 0;
    any.addEventListener('abort', () => fired++);
    b.abort('b first');
    eq(any.aborted, true);
    eq(any.reason, 'b first');
    a.abort('a later');
    eq(any.reason, 'b first');
    eq(fired, 1);
    const pre = AbortSignal.any([new AbortController().signal, AbortSignal.abort('pre')]);
    eq(pre.aborted, true, 'already aborted input');
    eq(pre.reason, 'pre');
    const empty = AbortSignal.any([]);
    eq(empty.aborted, false);
    const c = new AbortController();
    const nested = AbortSignal.any([AbortSignal.any([c.signal])]);
    c.abort('deep');
    eq(nested.reason, 'deep', 'nested any');
    throws(() => AbortSignal.any([{}]), TypeError, 'not a signal');
    throws(() => AbortSignal.any(5), TypeError, 'not iterable');
  });
  await test('constructors and brands', () => {
    throws(() => new AbortSignal(), TypeError, 'AbortSignal is not constructible');
    eq(Object.prototype.toString.call(new AbortController()), '[object AbortController]');
    eq(Object.prototype.toString.call(AbortSignal.abort()), '[object AbortSignal]');
    throws(() => Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted').get.call({}), TypeError, 'aborted getter brand check');
    throws(() => AbortController.prototype.abort.call({}), TypeError, 'abort brand check');
  });
  await test('abort listeners run in order, errors reported', () => {
    const ac = new AbortController();
    const log = [];
    ac.signal.addEventListener('abort', () => { log.push(1); throw new Error('listener error (expected in the log)'); });
    ac.signal.addEventListener('abort', () => log.push(2));
    ac.abort();
    deepEq(log, [1, 2]);
  });
});
