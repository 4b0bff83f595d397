// How Isolane presents itself to runtime-detection code (navigator), CustomEvent, ErrorEvent, reportError.

export default suite(async () => {
  await test('navigator presents a Workers runtime', () => {
    eq(navigator.userAgent, 'Cloudflare-Workers', 'the user agent runtime detection looks for');
    assert(navigator.userAgent.startsWith('Cloudflare-Workers'), 'prefix check (hono/adapter getRuntimeKey)');
    eq(navigator.hardwareConcurrency, 1, 'one CPU, as workerd');
    eq(navigator.language, 'en');
    assert(navigator instanceof Navigator, 'a Navigator');
    eq(Object.prototype.toString.call(navigator), '[object Navigator]');
    throws(() => new Navigator(), TypeError, 'no constructor');
    const d = Object.getOwnPropertyDescriptor(Navigator.prototype, 'userAgent');
    assert(d.get && d.enumerable && !d.set, 'a read-only, enumerable accessor');
  });
  await test('no other runtime is detected', () => {
    eq(typeof Deno, 'undefined');
    eq(typeof Bun, 'undefined');
    eq(typeof EdgeRuntime, 'undefined');
    eq(typeof fastly, 'undefined');
    eq(typeof process, 'undefined', 'no node process object');
    eq(typeof window, 'undefined', 'not a browser window');
    eq(typeof document, 'undefined');
  });
  await test('CustomEvent', () => {
    const e = new CustomEvent('ping', { detail: { n: 1 }, cancelable: true });
    assert(e instanceof Event, 'an Event');
    eq(e.type, 'ping');
    eq(e.detail.n, 1);
    eq(e.cancelable, true);
    eq(new CustomEvent('x').detail, null, 'detail defaults to null');
    eq(Object.prototype.toString.call(e), '[object CustomEvent]');
    throws(() => new CustomEvent(), TypeError, 'type required');
    throws(() => Object.getOwnPropertyDescriptor(CustomEvent.prototype, 'detail').get.call(new Event('x')), TypeError, 'brand check');
    const target = new EventTarget();
    let seen = null;
    target.addEventListener('ping', (ev) => { seen = ev.detail; });
    target.dispatchEvent(new CustomEvent('ping', { detail: 'hello' }));
    eq(seen, 'hello', 'dispatched with its detail');
    const d = Object.getOwnPropertyDescriptor(globalThis, 'CustomEvent');
    assert(d && !d.enumerable && d.configurable, 'a non-enumerable global');
  });
  await test('ErrorEvent', () => {
    const err = new Error('boom');
    const e = new ErrorEvent('error', { message: 'boom', error: err, filename: 'w.js', lineno: 3, colno: 7 });
    assert(e instanceof Event, 'an Event');
    eq(e.message, 'boom');
    eq(e.error, err);
    eq(e.filename, 'w.js');
    eq(e.lineno, 3);
    eq(e.colno, 7);
    const empty = new ErrorEvent('error');
    eq(empty.message, '');
    eq(empty.error, undefined);
    eq(empty.lineno, 0);
  });
  await test('reportError dispatches an error event at the global', () => {
    throws(() => reportError(), TypeError, 'an argument is required');
    const seen = [];
    const listener = (e) => { seen.push([e.constructor.name, e.message, e.error, e.cancelable, e.isTrusted]); e.preventDefault(); };
    addEventListener('error', listener);
    const err = new TypeError('reported, and handled by a listener');
    const result = reportError(err);
    removeEventListener('error', listener);
    eq(result, undefined);
    eq(seen.length, 1);
    deepEq(seen[0].slice(0, 2), ['ErrorEvent', 'reported, and handled by a listener']);
    eq(seen[0][2], err, 'the error itself');
    eq(seen[0][3], true, 'cancelable');
    eq(seen[0][4], true, 'trusted');
    reportError('a reported string (expected in the log)');
  });
  await test('Workers stream classes and fetch(data:)', async () => {
    for (const name of ['IdentityTransformStream', 'FixedLengthStream']) {
      const d = Object.getOwnPropertyDescriptor(globalThis, name);
      assert(d && typeof d.value === 'function' && !d.enumerable && d.configurable, `${name} is a non-enumerable global`);
    }
    const { readable, writable } = new FixedLengthStream(5);
    const writer = writable.getWriter();
    writer.write(new TextEncoder().encode('fixed'));
    writer.close();
    const body = await new Response(readable).text();
    if (body !== 'fixed') throw new Error(`FixedLengthStream gave ${body}`);
    const data = await fetch('data:text/plain;base64,aGVsbG8gZGF0YQ==');
    if ((await data.text()) !== 'hello data') throw new Error('fetch(data:)');
  });
});
