// The global scope: self, navigator, Date/performance, removed primitives, no eval, DOMException and error types.

export default suite(async () => {
  await test('self and the globals a worker expects', () => {
    eq(self, globalThis);
    for (const name of ['fetch', 'Request', 'Response', 'Headers', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder',
      'ReadableStream', 'WritableStream', 'TransformStream', 'atob', 'btoa', 'crypto', 'setTimeout', 'clearTimeout',
      'setInterval', 'clearInterval', 'queueMicrotask', 'structuredClone', 'AbortController', 'AbortSignal', 'Event',
      'EventTarget', 'DOMException', 'console', 'performance', 'navigator', 'Blob', 'File', 'addEventListener']) {
      assert(name in globalThis, `${name} is defined`);
      const d = Object.getOwnPropertyDescriptor(globalThis, name);
      assert(d && !d.enumerable && d.configurable, `${name} is non-enumerable and configurable`);
    }
    eq(typeof navigator.userAgent, 'string');
    eq(typeof __host, 'undefined', 'the host object is hidden');
    eq(typeof __isolane_internal, 'undefined', 'the internal object is hidden');
  });
  await test('SharedArrayBuffer and Atomics.wait are removed', () => {
    eq(typeof SharedArrayBuffer, 'undefined');
    eq(typeof Atomics, 'object', 'Atomics itself stays');
    eq(typeof Atomics.wait, 'undefined');
    eq(typeof Atomics.waitAsync, 'undefined');
    eq(typeof Atomics.add, 'function');
  });
  await test('code generation from strings is disallowed', () => {
    throws(() => eval('1 + 1'), EvalError, 'eval');
    throws(() => new Function('return 1'), EvalError, 'new Function');
  });
  await test('Date and performance use the host clock', () => {
    const now = Date.now();
    eq(typeof now, 'number');
    assert(now > 1.6e12, 'a plausible epoch time');
    const d = new Date();
    assert(d instanceof Date, 'instanceof Date');
    assert(Math.abs(d.getTime() - now) < 5000, 'new Date() is close to Date.now()');
    eq(new Date(0).getTime(), 0, 'explicit time');
    eq(new Date(2020, 0, 2).getFullYear(), 2020, 'components');
    eq(typeof Date(), 'string', 'Date() without new is a string');
    eq(Date.UTC(1970, 0, 1), 0);
    eq(Date.parse('1970-01-01T00:00:01Z'), 1000);
    eq(Date.length, 7);
    eq(Date.prototype.constructor, Date);
    class Sub extends Date {}
    assert(new Sub() instanceof Date, 'subclassable');
    eq(typeof performance.now(), 'number');
    eq(performance.timeOrigin, 0, 'timeOrigin is 0 (as workerd)');
    assert(Math.abs(performance.now() - Date.now()) < 5000, 'performance.now() is close to Date.now()');
  });
  await test('DOMException', () => {
    const e = new DOMException('msg', 'NotFoundError');
    eq(e.name, 'NotFoundError');
    eq(e.message, 'msg');
    eq(e.code, 8);
    assert(e instanceof Error, 'instanceof Error');
    eq(Object.prototype.toString.call(e), '[object DOMException]');
    eq(String(e), 'NotFoundError: msg');
    eq(typeof e.stack, 'string');
    eq(new DOMException().name, 'Error');
    eq(new DOMException().message, '');
    eq(new DOMException('x').code, 0);
    eq(new DOMException('x', 'Custom').code, 0, 'unknown names have code 0');
    eq(new DOMException('x', { name: 'AbortError', cause: 'c' }).cause, 'c', 'options object');
    eq(DOMException.ABORT_ERR, 20);
    eq(e.DATA_CLONE_ERR, 25);
    deepEq(Object.keys(e), [], 'no own enumerable properties');
    throws(() => Object.getOwnPropertyDescriptor(DOMException.prototype, 'name').get.call({}), TypeError, 'brand check');
  });
  await test('illegal constructors', () => {
    for (const C of [AbortSignal, ReadableStreamDefaultController, ReadableByteStreamController, WritableStreamDefaultController,
      TransformStreamDefaultController, ReadableStreamBYOBRequest]) {
      throws(() => new C(), TypeError, C.name);
    }
  });
  await test('Blob and File', async () => {
    const b = new Blob(['ab', new Uint8Array([99]), new Blob(['d'])], { type: 'Text/Plain' });
    eq(b.size, 4);
    eq(b.type, 'text/plain');
    eq(await b.text(), 'abcd');
    eq(hex(await b.arrayBuffer()), '61626364');
    eq(hex(await b.bytes()), '61626364');
    eq(await b.slice(1, 3).text(), 'bc');
    eq(await b.slice(-2).text(), 'cd');
    eq(b.slice(0, 1, 'x/y').type, 'x/y');
    const chunks = [];
    for await (const c of b.stream()) chunks.push(...c);
    eq(hex(new Uint8Array(chunks)), '61626364');
    eq(new Blob().size, 0);
    eq(new Blob(['\u00e9']).size, 2, 'UTF-8');
    eq(new Blob([], { type: '\u00e9' }).type, '', 'non-ASCII type dropped');
    throws(() => new Blob('not a sequence'), TypeError, 'string parts');
    const f = new File(['x'], 'name.txt', { type: 'text/plain', lastModified: 42 });
    assert(f instanceof Blob, 'File is a Blob');
    eq(f.name, 'name.txt');
    eq(f.lastModified, 42);
    eq(Object.prototype.toString.call(f), '[object File]');
    throws(() => new File(['x']), TypeError, 'File needs a name');
  });
});
