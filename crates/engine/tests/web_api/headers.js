// Headers.

export default suite(async (request) => {
  await test('case-insensitive names, combined values', () => {
    const h = new Headers();
    h.append('Content-Type', 'text/plain');
    h.append('X-Multi', 'a');
    h.append('x-multi', 'b');
    eq(h.get('content-type'), 'text/plain');
    eq(h.get('CONTENT-TYPE'), 'text/plain');
    eq(h.get('x-multi'), 'a, b', 'joined with ", "');
    eq(h.has('X-MULTI'), true);
    eq(h.get('missing'), null);
    eq(h.has('missing'), false);
    h.set('x-multi', 'c');
    eq(h.get('x-multi'), 'c', 'set replaces all');
    h.delete('X-Multi');
    eq(h.has('x-multi'), false);
    h.delete('never-there');
  });
  await test('constructor forms', () => {
    eq(new Headers({ A: '1', b: 2 }).get('b'), '2', 'record');
    eq(new Headers([['a', '1'], ['A', '2']]).get('a'), '1, 2', 'sequence');
    const src = new Headers({ x: 'y' });
    const copy = new Headers(src);
    copy.set('x', 'z');
    eq(src.get('x'), 'y', 'a copy, not shared');
    eq(new Headers(new Map([['m', 'n']])).get('m'), 'n', 'iterable');
    eq([...new Headers()].length, 0);
    eq([...new Headers(undefined)].length, 0);
    throws(() => new Headers([['a']]), TypeError, 'pair of one');
    throws(() => new Headers([['a', 'b', 'c']]), TypeError, 'pair of three');
    throws(() => new Headers('a: b'), TypeError, 'string');
    throws(() => new Headers(5), TypeError, 'number');
  });
  await test('value normalisation', () => {
    const h = new Headers();
    h.set('a', '  spaced\t ');
    eq(h.get('a'), 'spaced', 'leading/trailing whitespace stripped');
    h.set('b', 'in  side');
    eq(h.get('b'), 'in  side', 'inner whitespace kept');
    h.set('c', '');
    eq(h.get('c'), '', 'empty value');
    h.set('d', '\u00e9');
    eq(h.get('d'), '\u00e9', 'latin-1 is a valid ByteString');
  });
  await test('invalid names and values', () => {
    const h = new Headers();
    throws(() => h.set('bad name', 'x'), TypeError, 'space in name');
    throws(() => h.set('', 'x'), TypeError, 'empty name');
    throws(() => h.set('a:b', 'x'), TypeError, 'colon in name');
    throws(() => h.set('\u00e9', 'x'), TypeError, 'non-token name');
    throws(() => h.set('a', 'x\ny'), TypeError, 'newline in value');
    throws(() => h.set('a', 'x\ry'), TypeError, 'CR in value');
    throws(() => h.set('a', 'x\0y'), TypeError, 'NUL in value');
    throws(() => h.set('a', '\u20ac'), TypeError, 'not a ByteString');
    throws(() => h.get('bad name'), TypeError, 'get with an invalid name');
    throws(() => h.has(''), TypeError, 'has with an invalid name');
    throws(() => h.append('a'), TypeError, 'append with one argument');
    throws(() => new Headers({ 'a b': 'c' }), TypeError, 'record with a bad name');
  });
  await test('iteration is sorted, lower-case, combined; set-cookie separate', () => {
    const h = new Headers();
    h.append('Zeta', '1');
    h.append('alpha', '2');
    h.append('Set-Cookie', 'a=1');
    h.append('Beta', '3');
    h.append('set-cookie', 'b=2');
    h.append('ALPHA', '4');
    deepEq([...h], [['alpha', '2, 4'], ['beta', '3'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2'], ['zeta', '1']]);
    deepEq([...h.keys()], ['alpha', 'beta', 'set-cookie', 'set-cookie', 'zeta']);
    deepEq([...h.values()], ['2, 4', '3', 'a=1', 'b=2', '1']);
    deepEq([...h.entries()].length, 5);
    const seen = [];
    h.forEach((v, k, obj) => { seen.push(`${k}=${v}`); assert(obj === h, 'third argument'); });
    eq(seen.join('|'), 'alpha=2, 4|beta=3|set-cookie=a=1|set-cookie=b=2|zeta=1');
    eq(h.get('set-cookie'), 'a=1, b=2', 'get combines set-cookie too');
    const it = h.keys();
    eq(it.next().value, 'alpha');
    h.append('aaa', 'x');
    eq(it.next().value, 'alpha', 'iteration re-sorts after changes');
  });
  await test('getSetCookie', () => {
    const h = new Headers([['set-cookie', 'a=1; Path=/'], ['x', 'y'], ['Set-Cookie', 'b=2, c=3']]);
    deepEq(h.getSetCookie(), ['a=1; Path=/', 'b=2, c=3']);
    deepEq(new Headers().getSetCookie(), []);
    const got = h.getSetCookie();
    got.push('mutated');
    eq(h.getSetCookie().length, 2, 'returns a copy');
  });
  await test('incoming request headers are immutable', () => {
    eq(request.headers.get('x-suite'), 'web_api');
    throws(() => request.headers.set('x', 'y'), TypeError, 'set');
    throws(() => request.headers.append('x', 'y'), TypeError, 'append');
    throws(() => request.headers.delete('x-suite'), TypeError, 'delete');
    eq(request.headers.get('x-suite'), 'web_api', 'unchanged');
    const copy = new Request(request.url, request).headers;
    copy.set('x', 'y');
    eq(copy.get('x'), 'y', 'a new Request has mutable headers');
    const h = new Headers(request.headers);
    h.set('x', 'z');
    eq(h.get('x'), 'z', 'a copy is mutable');
  });
  await test('Response.error() and Response.redirect() headers are immutable', () => {
    throws(() => Response.error().headers.set('a', 'b'), TypeError, 'error');
    throws(() => Response.redirect('https://a.com/').headers.set('a', 'b'), TypeError, 'redirect');
    const r = new Response('x');
    r.headers.set('a', 'b');
    eq(r.headers.get('a'), 'b', 'a constructed Response has mutable headers');
  });
  await test('brand checks', () => {
    eq(Object.prototype.toString.call(new Headers()), '[object Headers]');
    throws(() => Headers.prototype.get.call({}, 'a'), TypeError, 'get on a plain object');
    throws(() => Headers.prototype.set.call(new URLSearchParams(), 'a', 'b'), TypeError, 'set on another class');
    throws(() => Headers(), TypeError, 'called without new');
    deepEq(Object.keys(new Headers({ a: 'b' })), [], 'no own enumerable properties');
  });
});
