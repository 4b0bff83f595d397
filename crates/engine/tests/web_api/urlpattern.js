// URLPattern (URL Pattern Standard): constructor forms, component patterns, test/exec, errors, a router.

export default suite(async () => {
  await test('URLPattern is a global interface', () => {
    const d = Object.getOwnPropertyDescriptor(globalThis, 'URLPattern');
    assert(d && !d.enumerable && d.configurable && d.writable, 'non-enumerable, configurable, writable');
    eq(Object.prototype.toString.call(new URLPattern()), '[object URLPattern]');
    for (const name of ['test', 'exec', 'protocol', 'pathname', 'hasRegExpGroups']) {
      assert(Object.getOwnPropertyDescriptor(URLPattern.prototype, name).enumerable, `${name} is enumerable`);
    }
    throws(() => URLPattern.prototype.test.call({}, 'https://a/'), TypeError, 'brand check');
    throws(() => Object.getOwnPropertyDescriptor(URLPattern.prototype, 'pathname').get.call({}), TypeError, 'getter brand check');
    throws(() => URLPattern(), TypeError, 'needs new');
  });
  await test('a pattern string with a base URL', () => {
    const p = new URLPattern('/books/:id', 'https://example.com');
    eq(p.protocol, 'https');
    eq(p.hostname, 'example.com');
    eq(p.pathname, '/books/:id');
    eq(p.search, '*');
    eq(p.hash, '*');
    eq(p.username, '*');
    assert(p.test('https://example.com/books/42'), 'matches');
    assert(!p.test('https://example.com/books/42/more'), 'a segment more');
    assert(!p.test('http://example.com/books/42'), 'other protocol');
    assert(p.test('/books/7', 'https://example.com'), 'relative input with a base');
    const m = p.exec('https://example.com/books/42?x=1#top');
    eq(m.pathname.groups.id, '42');
    eq(m.pathname.input, '/books/42');
    eq(m.search.input, 'x=1');
    eq(m.hash.input, 'top');
    deepEq(m.inputs, ['https://example.com/books/42?x=1#top']);
    deepEq(p.exec('/books/9', 'https://example.com').inputs, ['/books/9', 'https://example.com']);
  });
  await test('an init dictionary', () => {
    const p = new URLPattern({ pathname: '/api/:version/*', hostname: '{:sub.}?example.com' });
    eq(p.pathname, '/api/:version/*');
    eq(p.protocol, '*');
    const m = p.exec({ hostname: 'eu.example.com', pathname: '/api/v2/users/1' });
    eq(m.hostname.groups.sub, 'eu');
    eq(m.pathname.groups.version, 'v2');
    eq(m.pathname.groups['0'], 'users/1');
    deepEq(m.inputs, [{ hostname: 'eu.example.com', pathname: '/api/v2/users/1' }]);
    eq(p.exec({ hostname: 'example.com', pathname: '/api/v1/x' }).hostname.groups.sub, undefined, 'unmatched optional group');
    assert(p.test('https://example.com/api/v1/x'), 'a URL string against an init pattern');
    const withBase = new URLPattern({ pathname: '/a/:b', baseURL: 'https://example.com/x?q#h' });
    eq(withBase.protocol, 'https');
    eq(withBase.hostname, 'example.com');
    eq(withBase.search, '*', 'search is a wildcard once pathname is given');
  });
  await test('no input matches every URL', () => {
    const p = new URLPattern();
    assert(p.test('https://user:pw@example.com:8080/a?b#c'), 'everything');
    assert(p.test(), 'test() with no input');
    eq(new URLPattern({}).pathname, '*');
  });
  await test('regular-expression groups and modifiers', () => {
    const p = new URLPattern({ pathname: '/post/:id(\\d+)/:slug?' });
    assert(p.hasRegExpGroups, 'hasRegExpGroups');
    assert(!new URLPattern({ pathname: '/post/:id' }).hasRegExpGroups, 'no regexp groups');
    assert(p.test({ pathname: '/post/12/hello' }), 'digits and a slug');
    assert(p.test({ pathname: '/post/12' }), 'optional slug');
    assert(!p.test({ pathname: '/post/ab' }), 'not digits');
    const files = new URLPattern({ pathname: '/static/:path+.:ext(js|css)' });
    const m = files.exec({ pathname: '/static/a/b/app.css' });
    eq(m.pathname.groups.path, 'a/b/app');
    eq(m.pathname.groups.ext, 'css');
  });
  await test('ignoreCase', () => {
    const p = new URLPattern({ pathname: '/Admin/*' }, { ignoreCase: true });
    assert(p.test({ pathname: '/admin/x' }), 'case-insensitive');
    assert(!new URLPattern({ pathname: '/Admin/*' }).test({ pathname: '/admin/x' }), 'case-sensitive by default');
    const q = new URLPattern('/Admin/*', 'https://example.com', { ignoreCase: true });
    assert(q.test('https://example.com/ADMIN/y'), 'with a base URL and options');
  });
  await test('errors', () => {
    throws(() => new URLPattern('/relative'), TypeError, 'relative without base');
    throws(() => new URLPattern({ pathname: '/x' }, 'https://example.com'), TypeError, 'init with a separate base');
    throws(() => new URLPattern({ pathname: '/(' }), TypeError, 'unbalanced group');
    throws(() => new URLPattern({ pathname: '/:id([)' }), TypeError, 'invalid regexp');
    throws(() => new URLPattern({ pathname: '*'.repeat(8193) }), TypeError, 'a pattern part over 8 Ki characters');
    const longest = '/' + 'a'.repeat(8191);
    assert(new URLPattern({ pathname: longest }).test({ pathname: longest }), 'the longest pattern works');
    eq(new URLPattern({ pathname: '/*' }).test({ pathname: '/' + 'a'.repeat(60000) }), true, 'a long input');
    throws(() => new URLPattern({ pathname: '/*' }).test({ pathname: 'a'.repeat(70000) }), TypeError, 'an input part over 64 Ki characters');
    const p = new URLPattern({ pathname: '/x' });
    throws(() => p.test({ pathname: '/x' }, 'https://example.com'), TypeError, 'test: init with a separate base');
    throws(() => p.exec({ pathname: '/x' }, 'https://example.com'), TypeError, 'exec: init with a separate base');
    eq(p.exec('not a url'), null, 'an input that is no URL does not match');
    eq(p.test('/x', 'not a base'), false, 'an invalid base does not match');
  });
  await test('a router', () => {
    const routes = [
      [new URLPattern({ pathname: '/users/:id' }), (g) => `user ${g.id}`],
      [new URLPattern({ pathname: '/users' }), () => 'users'],
      [new URLPattern({ pathname: '/*' }), () => 'fallback'],
    ];
    const route = (url) => {
      for (const [p, h] of routes) {
        const m = p.exec(url);
        if (m) return h(m.pathname.groups);
      }
      return null;
    };
    eq(route('https://w.example/users/7'), 'user 7');
    eq(route('https://w.example/users'), 'users');
    eq(route('https://w.example/other'), 'fallback');
    eq(route('https://w.example/users/%E2%82%AC'), 'user %E2%82%AC', 'groups keep the percent-encoding');
  });
});
