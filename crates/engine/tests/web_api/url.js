// URL and URLSearchParams.
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
  await test('URL components', () => {
    const u = new URL('https://user:pa%20ss@Example.COM:8443/a/./b/../c?x=1&y=%20#frag');
    eq(u.href, 'https://user:pa%20ss@example.com:8443/a/c?x=1&y=%20#frag');
    eq(u.origin, 'https://example.com:8443');
    eq(u.protocol, 'https:');
    eq(u.username, 'user');
    eq(u.password, 'pa%20ss');
    eq(u.host, 'example.com:8443');
    eq(u.hostname, 'example.com');
    eq(u.port, '8443');
    eq(u.pathname, '/a/c');
    eq(u.search, '?x=1&y=%20');
    eq(u.hash, '#frag');
    eq(String(u), u.href);
    eq(u.toString(), u.href);
    eq(u.toJSON(), u.href);
    eq(JSON.stringify({ u }), `{"u":"${u.href}"}`);
  });
  await test('URL parsing details', () => {
    eq(new URL('HTTP://EXAMPLE.com:80/').href, 'http://example.com/', 'default port dropped');
    eq(new URL('http://example.com').pathname, '/');
    eq(new URL('https://example.com/a b').pathname, '/a%20b');
    eq(new URL('https://example.com/?q=a b').search, '?q=a%20b');
    eq(new URL('https://münchen.de/').hostname, 'xn--mnchen-3ya.de', 'IDNA');
    eq(new URL('http://[::1]:8080/').hostname, '[::1]');
    eq(new URL('http://0x7f.1/').hostname, '127.0.0.1', 'IPv4 number forms');
    eq(new URL('mailto:a@b.c').pathname, 'a@b.c');
    eq(new URL('data:text/plain,hi').origin, 'null');
    eq(new URL('blob:https://a.com/uuid').origin, 'https://a.com');
    eq(new URL('file:///tmp/x').href, 'file:///tmp/x');
    eq(new URL('  https://a.com/  ').href, 'https://a.com/', 'leading/trailing C0 and space trimmed');
    eq(new URL('https://a.com/\ud800').pathname, '/%EF%BF%BD', 'lone surrogate -> U+FFFD');
  });
  await test('URL with base', () => {
    eq(new URL('/x?y', 'https://a.com/b/c').href, 'https://a.com/x?y');
    eq(new URL('d', 'https://a.com/b/c').href, 'https://a.com/b/d');
    eq(new URL('../d', 'https://a.com/b/c/e').href, 'https://a.com/b/d');
    eq(new URL('//other.org/p', 'https://a.com/').href, 'https://other.org/p');
    eq(new URL('?q', 'https://a.com/p#h').href, 'https://a.com/p?q');
    eq(new URL('https://x.org/', 'https://a.com/').href, 'https://x.org/', 'absolute input ignores base');
    eq(new URL('/x', new URL('https://a.com/')).href, 'https://a.com/x', 'URL object as base');
  });
  await test('URL errors', () => {
    throws(() => new URL('nope'), TypeError, 'relative without base');
    throws(() => new URL('/x', 'nope'), TypeError, 'bad base');
    throws(() => new URL('https://exa mple.com/'), TypeError, 'space in host');
    throws(() => new URL('http://[::1/'), TypeError, 'bad IPv6');
    throws(() => new URL('http://a.com:99999/'), TypeError, 'port out of range');
    throws(() => new URL(''), TypeError, 'empty');
    throws(() => new URL(), TypeError, 'no argument');
    throws(() => new URL(Symbol('x')), TypeError, 'symbol');
    throws(() => URL('https://a.com'), TypeError, 'called without new');
  });
  await test('URL.canParse and URL.parse', () => {
    eq(URL.canParse('https://a.com'), true);
    eq(URL.canParse('nope'), false);
    eq(URL.canParse('/x', 'https://a.com'), true);
    eq(URL.canParse('/x', 'nope'), false);
    eq(URL.parse('nope'), null);
    const u = URL.parse('/p?q', 'https://a.com');
    assert(u instanceof URL, 'URL.parse returns a URL');
    eq(u.href, 'https://a.com/p?q');
    throws(() => URL.canParse(), TypeError, 'canParse without arguments');
  });
  await test('URL setters', () => {
    const u = new URL('https://a.com/p?q=1#h');
    u.protocol = 'http';
    eq(u.href, 'http://a.com/p?q=1#h');
    u.protocol = 'mailto';
    eq(u.protocol, 'http:', 'cannot change special to non-special');
    u.username = 'me';
    u.password = 'secret';
    eq(u.href, 'http://me:secret@a.com/p?q=1#h');
    u.host = 'b.org:81';
    eq(u.host, 'b.org:81');
    u.hostname = 'c.net';
    eq(u.host, 'c.net:81');
    u.port = '80';
    eq(u.port, '', 'default port becomes empty');
    u.port = 'abc';
    eq(u.port, '', 'invalid port ignored');
    u.port = '8080x';
    eq(u.port, '8080', 'leading digits');
    u.pathname = 'x y/z';
    eq(u.pathname, '/x%20y/z');
    u.search = 'a=1';
    eq(u.search, '?a=1');
    u.search = '';
    eq(u.href, 'http://me:secret@c.net:8080/x%20y/z#h', 'empty search removes ?');
    u.hash = 'top';
    eq(u.hash, '#top');
    u.hash = '';
    eq(u.href, 'http://me:secret@c.net:8080/x%20y/z');
    u.href = 'https://new.example/';
    eq(u.host, 'new.example');
    throws(() => { u.href = 'not a url'; }, TypeError, 'bad href');
    eq(u.href, 'https://new.example/', 'unchanged after a failed href set');
    u.hostname = 'bad host';
    eq(u.hostname, 'new.example', 'invalid hostname ignored');
  });
  await test('URL searchParams is live in both directions', () => {
    const u = new URL('https://a.com/?a=1&b=2');
    const p = u.searchParams;
    assert(p === u.searchParams, 'same object every time');
    eq(p.get('a'), '1');
    p.append('c', 'x y');
    eq(u.search, '?a=1&b=2&c=x+y');
    p.delete('a');
    eq(u.href, 'https://a.com/?b=2&c=x+y');
    u.search = '?z=9';
    eq(p.get('z'), '9');
    eq(p.has('b'), false);
    p.delete('z');
    eq(u.href, 'https://a.com/', 'empty params remove the ?');
    u.href = 'https://b.com/?k=v';
    eq(p.get('k'), 'v', 'href setter updates params');
    u.hash = 'x';
    eq(p.get('k'), 'v');
  });
  await test('URLSearchParams constructor forms', () => {
    eq(new URLSearchParams('?a=1&b=2').toString(), 'a=1&b=2', 'leading ? stripped');
    eq(new URLSearchParams('a=1&&b=&=c&d').toString(), 'a=1&b=&=c&d=', 'empty pieces');
    eq(new URLSearchParams([['a', '1'], ['a', '2']]).getAll('a').join(), '1,2', 'sequence');
    eq(new URLSearchParams({ x: 1, y: 'z' }).toString(), 'x=1&y=z', 'record');
    eq(new URLSearchParams(new URLSearchParams('q=1')).toString(), 'q=1', 'copy');
    eq(new URLSearchParams(new Map([['m', 'n']])).toString(), 'm=n', 'any iterable of pairs');
    eq(new URLSearchParams().toString(), '');
    eq(new URLSearchParams(undefined).size, 0);
    throws(() => new URLSearchParams([['a']]), TypeError, 'pair of one');
    throws(() => new URLSearchParams([['a', 'b', 'c']]), TypeError, 'pair of three');
    throws(() => new URLSearchParams([1]), TypeError, 'non-iterable item');
  });
  await test('URLSearchParams decoding and encoding', () => {
    const p = new URLSearchParams('a=b+c&d=%20%26%3D&e=%zz&f=%C3%A9&g=%FF');
    eq(p.get('a'), 'b c', '+ is space');
    eq(p.get('d'), ' &=');
    eq(p.get('e'), '%zz', 'bad escapes kept');
    eq(p.get('f'), '\u00e9');
    eq(p.get('g'), '\ufffd', 'invalid UTF-8 replaced');
    const q = new URLSearchParams();
    q.append('k y', 'v&w=x+y/\u00e9*-._~!');
    eq(q.toString(), 'k+y=v%26w%3Dx%2By%2F%C3%A9*-._%7E%21');
    q.append('s', '\ud800');
    eq(q.toString().endsWith('&s=%EF%BF%BD'), true, 'lone surrogate');
  });
  await test('URLSearchParams methods', () => {
    const p = new URLSearchParams('a=1&b=2&a=3');
    eq(p.size, 3);
    eq(p.get('a'), '1');
    eq(p.get('zz'), null);
    deepEq(p.getAll('a'), ['1', '3']);
    deepEq(p.getAll('zz'), []);
    eq(p.has('a'), true);
    eq(p.has('a', '3'), true, 'has with value');
    eq(p.has('a', '2'), false);
    p.delete('a', '1');
    eq(p.toString(), 'b=2&a=3', 'delete with value');
    p.set('a', '9');
    p.append('a', '10');
    p.set('a', 'x');
    eq(p.toString(), 'b=2&a=x', 'set replaces the first, removes the rest');
    p.set('new', 'y');
    eq(p.toString(), 'b=2&a=x&new=y');
    p.delete('b');
    eq(p.toString(), 'a=x&new=y');
    eq(p.has('a', undefined), true, 'undefined value means any');
    throws(() => p.get(), TypeError, 'get without arguments');
    throws(() => p.append('a'), TypeError, 'append with one argument');
  });
  await test('URLSearchParams sort is stable, by code units', () => {
    const p = new URLSearchParams('z=1&a=2&\u00e9=3&a=1&A=0&\ud83d\ude00=e&\ufb03=f');
    p.sort();
    eq([...p.keys()].join(','), 'A,a,a,z,\u00e9,\ud83d\ude00,\ufb03');
    eq(p.getAll('a').join(), '2,1');
  });
  await test('URLSearchParams iteration', () => {
    const p = new URLSearchParams('a=1&b=2');
    deepEq([...p], [['a', '1'], ['b', '2']]);
    deepEq([...p.entries()], [['a', '1'], ['b', '2']]);
    deepEq([...p.keys()], ['a', 'b']);
    deepEq([...p.values()], ['1', '2']);
    const it = p[Symbol.iterator]();
    // the standard's tag; workerd says "[object EntryIterator]"
    assert(/^\[object (URLSearchParams Iterator|EntryIterator)\]$/.test(Object.prototype.toString.call(it)), 'iterator toStringTag');
    eq(typeof it[Symbol.iterator], 'function', 'iterators are iterable');
    const seen = [];
    p.forEach(function (value, key, obj) { seen.push(key + value); assert(obj === p, 'third argument'); assert(this === seen, 'thisArg'); }, seen);
    deepEq(seen, ['a1', 'b2']);
    const live = p.keys();
    eq(live.next().value, 'a');
    p.append('c', '3');
    eq(live.next().value, 'b');
    eq(live.next().value, 'c', 'iterator sees later appends');
    eq(live.next().done, true);
    throws(() => p.forEach(1), TypeError, 'forEach callback not a function');
  });
  await test('brand checks and toStringTag', () => {
    eq(Object.prototype.toString.call(new URL('https://a.com')), '[object URL]');
    eq(Object.prototype.toString.call(new URLSearchParams()), '[object URLSearchParams]');
    throws(() => URL.prototype.toString.call({}), TypeError, 'URL method on a plain object');
    throws(() => Object.getOwnPropertyDescriptor(URL.prototype, 'href').get.call({}), TypeError, 'href getter on a plain object');
    throws(() => URLSearchParams.prototype.get.call({}, 'a'), TypeError, 'URLSearchParams method on a plain object');
    eq(typeof Object.getOwnPropertyDescriptor(URL.prototype, 'href').set, 'function', 'href is an accessor on the prototype');
    deepEq(Object.keys(new URL('https://a.com')), [], 'no own enumerable properties');
  });
});
