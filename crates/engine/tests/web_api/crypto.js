// crypto.getRandomValues / randomUUID / subtle.digest.

const te = new TextEncoder();

export default suite(async () => {
  await test('getRandomValues', () => {
    const a = new Uint8Array(32);
    const r = crypto.getRandomValues(a);
    eq(r, a, 'returns the same array');
    assert(a.some((x) => x !== 0), 'filled');
    for (const T of [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]) {
      const arr = new T(4);
      eq(crypto.getRandomValues(arr), arr, T.name);
    }
    const big = new Uint8Array(65536);
    crypto.getRandomValues(big);
    const view = new Uint8Array(new ArrayBuffer(16), 4, 8);
    crypto.getRandomValues(view);
    eq(new Uint8Array(view.buffer, 0, 4).every((x) => x === 0), true, 'only the view is filled');
    eq(crypto.getRandomValues(new Uint8Array(0)).length, 0, 'empty');
  });
  await test('getRandomValues errors', () => {
    const q = throws(() => crypto.getRandomValues(new Uint8Array(65537)), 'QuotaExceededError', 'more than 65536 bytes');
    assert(q instanceof DOMException, 'QuotaExceededError is a DOMException');
    throws(() => crypto.getRandomValues(new Uint32Array(16385)), 'QuotaExceededError', 'byte length counts');
    throws(() => crypto.getRandomValues(new Float32Array(4)), 'TypeMismatchError', 'float array');
    throws(() => crypto.getRandomValues(new Float64Array(4)), 'TypeMismatchError', 'double array');
    throws(() => crypto.getRandomValues(new DataView(new ArrayBuffer(4))), 'TypeMismatchError', 'DataView');
    throws(() => crypto.getRandomValues([1, 2, 3]), TypeError, 'plain array');
    throws(() => crypto.getRandomValues(new ArrayBuffer(4)), TypeError, 'ArrayBuffer');
    throws(() => crypto.getRandomValues(), TypeError, 'missing');
    throws(() => crypto.getRandomValues.call({}, new Uint8Array(1)), TypeError, 'unbound');
  });
  await test('randomUUID', () => {
    const re = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const seen = new Set();
    for (let i = 0; i < 50; i++) {
      const u = crypto.randomUUID();
      assert(re.test(u), `v4 format: ${u}`);
      seen.add(u);
    }
    eq(seen.size, 50, 'unique');
  });
  await test('digest known answers', async () => {
    eq(hex(await crypto.subtle.digest('SHA-1', te.encode('abc'))), 'a9993e364706816aba3e25717850c26c9cd0d89d');
    eq(hex(await crypto.subtle.digest('SHA-256', te.encode('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    eq(hex(await crypto.subtle.digest('SHA-384', te.encode('abc'))),
      'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7');
    eq(hex(await crypto.subtle.digest('SHA-512', te.encode('abc'))),
      'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f');
    eq(hex(await crypto.subtle.digest('SHA-256', new Uint8Array(0))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'empty');
  });
  await test('digest argument forms', async () => {
    const expected = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    const data = te.encode('abc');
    const result = crypto.subtle.digest('sha-256', data);
    assert(result instanceof Promise, 'returns a Promise');
    const buf = await result;
    assert(buf instanceof ArrayBuffer, 'resolves to an ArrayBuffer');
    eq(buf.byteLength, 32);
    eq(hex(await crypto.subtle.digest('Sha-256', data)), expected, 'case-insensitive');
    eq(hex(await crypto.subtle.digest({ name: 'SHA-256' }, data)), expected, '{ name }');
    eq(hex(await crypto.subtle.digest({ name: 'sha-256', extra: 1 }, data)), expected, '{ name } lower case');
    eq(hex(await crypto.subtle.digest('SHA-256', data.buffer)), expected, 'ArrayBuffer');
    eq(hex(await crypto.subtle.digest('SHA-256', new DataView(data.buffer))), expected, 'DataView');
    const padded = new Uint8Array([0, 0x61, 0x62, 0x63, 0]);
    eq(hex(await crypto.subtle.digest('SHA-256', padded.subarray(1, 4))), expected, 'a view with an offset');
  });
  await test('digest errors reject', async () => {
    await rejects(() => crypto.subtle.digest('MD4', new Uint8Array(1)), 'NotSupportedError', 'unknown algorithm');
    await rejects(() => crypto.subtle.digest('SHA256', new Uint8Array(1)), 'NotSupportedError', 'SHA256 without the dash');
    await rejects(() => crypto.subtle.digest({}, new Uint8Array(1)), TypeError, 'object without a name');
    await rejects(() => crypto.subtle.digest('SHA-256', 'abc'), TypeError, 'string data');
    await rejects(() => crypto.subtle.digest('SHA-256', [1, 2]), TypeError, 'array data');
    await rejects(() => crypto.subtle.digest('SHA-256'), TypeError, 'missing data');
  });
  await test('objects and brands', () => {
    eq(Object.prototype.toString.call(crypto), '[object Crypto]');
    eq(Object.prototype.toString.call(crypto.subtle), '[object SubtleCrypto]');
    assert(crypto.subtle instanceof SubtleCrypto, 'SubtleCrypto');
    eq(crypto.subtle, crypto.subtle, 'same object');
    throws(() => new Crypto(), TypeError, 'Crypto not constructible');
    throws(() => new SubtleCrypto(), TypeError, 'SubtleCrypto not constructible');
  });
});
