// structuredClone.

export default suite(async () => {
  await test('primitives and plain data', () => {
    for (const v of [1, -0, NaN, 'str', true, null, undefined, 10n]) {
      assert(Object.is(structuredClone(v), v), `primitive ${String(v)}`);
    }
    const src = { a: [1, { b: 'c' }], d: new Date(5), r: /x/gi, m: new Map([[1, { k: 2 }]]), s: new Set(['q']) };
    const c = structuredClone(src);
    assert(c !== src && c.a !== src.a && c.a[1] !== src.a[1], 'deep copy');
    deepEq(c.a, [1, { b: 'c' }]);
    assert(c.d instanceof Date && c.d.getTime() === 5, 'Date');
    assert(c.r instanceof RegExp && c.r.source === 'x' && c.r.flags === 'gi', 'RegExp');
    assert(c.m instanceof Map && c.m.get(1).k === 2, 'Map');
    assert(c.s instanceof Set && c.s.has('q'), 'Set');
  });
  await test('cycles and shared references', () => {
    const o = { name: 'o' };
    o.self = o;
    o.list = [o, o];
    const c = structuredClone(o);
    assert(c.self === c, 'cycle kept');
    assert(c.list[0] === c && c.list[1] === c, 'shared refs kept');
  });
  await test('binary data', () => {
    const u = new Uint8Array([1, 2, 3]);
    const c = structuredClone(u);
    assert(c instanceof Uint8Array && c !== u, 'Uint8Array');
    eq(hex(c), '010203');
    const both = structuredClone({ a: u, b: u });
    assert(both.a === both.b, 'same view twice stays shared');
    const ab = structuredClone(new ArrayBuffer(4));
    assert(ab instanceof ArrayBuffer && ab.byteLength === 4, 'ArrayBuffer');
    const dv = structuredClone(new DataView(new ArrayBuffer(2)));
    assert(dv instanceof DataView, 'DataView');
  });
  await test('errors are cloned', () => {
    const e = structuredClone(new RangeError('r'));
    assert(e instanceof RangeError, 'RangeError');
    eq(e.message, 'r');
  });
  await test('class instances become plain objects', () => {
    class P { constructor() { this.x = 1; } get y() { return 2; } }
    const c = structuredClone(new P());
    eq(Object.getPrototypeOf(c), Object.prototype);
    eq(c.x, 1);
    eq(c.y, undefined);
  });
  await test('DataCloneError', () => {
    for (const [what, v] of [['function', () => {}], ['symbol', Symbol('s')], ['object with a function', { f() {} }],
      ['WeakMap', new WeakMap()], ['Promise', Promise.resolve()], ['Request', new Request('https://a.com')],
      ['Headers', new Headers()], ['ReadableStream', new ReadableStream()]]) {
      const e = throws(() => structuredClone(v), 'DataCloneError', what);
      assert(e instanceof DOMException, `${what}: a DOMException`);
      eq(e.code, 25, `${what}: legacy code`);
    }
    throws(() => structuredClone(), TypeError, 'no argument');
  });
  await test('transfer', () => {
    const ab = new ArrayBuffer(8);
    const c = structuredClone(ab, { transfer: [ab] });
    eq(c.byteLength, 8);
    // detaching needs ArrayBuffer.prototype.transfer (V8 >= 11.4; not in node 20's V8)
    if (typeof ArrayBuffer.prototype.transfer === 'function') eq(ab.byteLength, 0, 'original detached');
    throws(() => structuredClone(1, { transfer: [{}] }), 'DataCloneError', 'non-transferable');
    const x = new ArrayBuffer(1);
    throws(() => structuredClone(x, { transfer: [x, x] }), 'DataCloneError', 'duplicate');
    throws(() => structuredClone(1, { transfer: 5 }), TypeError, 'transfer not iterable');
  });
});
