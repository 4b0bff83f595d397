// The lazy globals (src/host/lazy.rs): URLPattern, caches/Cache/CacheStorage and
// HTMLRewriter run their files on first read, yet look and behave like ordinary
// data properties before and after; a Worker that patches built-ins or deletes
// the global while the files run breaks only its own view of them.

export default suite(async () => {
  await test('before any read: an ordinary data property (getOwnPropertyDescriptor loads it)', () => {
    assert('HTMLRewriter' in globalThis, 'in');
    assert(Object.getOwnPropertyNames(globalThis).includes('HTMLRewriter'), 'an own property name');
    assert(!Object.keys(globalThis).includes('HTMLRewriter'), 'not enumerable');
    const d = Object.getOwnPropertyDescriptor(globalThis, 'HTMLRewriter');
    eq(typeof d.value, 'function', 'a value, not a getter');
    eq(d.get, undefined, 'no getter');
    assert(d.writable && d.configurable && !d.enumerable, 'writable, configurable, not enumerable');
    eq(d.value, HTMLRewriter, 'the same class on every read');
    eq(typeof HTMLRewriter, 'function');
    eq(new HTMLRewriter().on('p', {}) instanceof HTMLRewriter, true);
  });
  await test('assigned before its first read: the assignment wins and the files never matter', () => {
    globalThis.URLPattern = 42;
    eq(URLPattern, 42);
    eq(Object.getOwnPropertyDescriptor(globalThis, 'URLPattern').value, 42);
    URLPattern = 'again';
    eq(globalThis.URLPattern, 'again', 'assignment by name');
  });
  await test('deleted before its first read: gone', () => {
    assert(delete globalThis.Cache, 'delete');
    eq(typeof Cache, 'undefined');
    assert(!('Cache' in globalThis), 'not in');
    // Its unit's other globals still load.
    eq(typeof caches.default.match, 'function');
    eq(Object.prototype.toString.call(caches), '[object CacheStorage]');
    eq(caches, globalThis.caches, 'one CacheStorage');
  });
  await test('redefined before its first read', () => {
    Object.defineProperty(globalThis, 'CacheStorage', { value: 7, writable: false, configurable: true });
    eq(CacheStorage, 7);
    const d = Object.getOwnPropertyDescriptor(globalThis, 'CacheStorage');
    assert(!d.writable && d.configurable, 'the new attributes');
  });
  await test('read through another receiver', () => {
    const child = Object.create(globalThis);
    eq(typeof Reflect.get(globalThis, 'HTMLRewriter', {}), 'function', 'Reflect.get with a receiver');
    eq(child.HTMLRewriter, HTMLRewriter, 'through the prototype chain');
  });
});
