// Request, Response and the Body mixin, including the incoming request.

const te = new TextEncoder();
async function drain(stream) {
  const r = stream.getReader();
  let s = '';
  const d = new TextDecoder();
  for (;;) {
    const { value, done } = await r.read();
    if (done) return s + d.decode();
    s += d.decode(value, { stream: true });
  }
}

export default suite(async (request, env, ctx) => {
  await test('the incoming request', async () => {
    assert(request instanceof Request, 'a Request');
    eq(request.method, 'POST');
    eq(new URL(request.url).pathname + new URL(request.url).search, '/suite?x=1');
    eq(request.headers.get('content-type'), 'text/plain;charset=UTF-8');
    assert(request.body instanceof ReadableStream, 'body is a ReadableStream');
    eq(request.bodyUsed, false);
    eq(await request.text(), 'ping');
    eq(request.bodyUsed, true);
    await rejects(request.text(), TypeError, 'second read');
    assert(request.signal instanceof AbortSignal, 'signal');
    eq(request.signal.aborted, false);
    eq(typeof ctx.waitUntil, 'function');
    eq(typeof ctx.passThroughOnException, 'function');
    eq(Object.isFrozen(env), true, 'env is frozen');
  });
  await test('Request construction', () => {
    const r = new Request('https://a.com/p');
    eq(r.method, 'GET');
    eq(r.url, 'https://a.com/p');
    eq(r.body, null);
    eq(r.bodyUsed, false);
    eq(r.redirect, 'follow');
    eq(new Request('https://a.com', { method: 'post' }).method, 'POST', 'normalised');
    eq(new Request('https://a.com', { method: 'patch' }).method, 'PATCH', 'patch too, as workerd');
    eq(new Request('https://a.com', { method: 'Custom' }).method, 'Custom', 'others kept');
    eq(new Request('https://A.com:443/a/../b').url, 'https://a.com/b', 'URL serialised');
    eq(new Request(new URL('https://a.com/u')).url, 'https://a.com/u', 'URL object');
    eq(new Request('https://a.com', { redirect: 'manual' }).redirect, 'manual');
  });
  await test('Request errors', () => {
    throws(() => new Request('/relative'), TypeError, 'relative URL');
    throws(() => new Request('https://a.com', { method: 'GET', body: 'x' }), TypeError, 'GET with body');
    throws(() => new Request('https://a.com', { method: 'HEAD', body: 'x' }), TypeError, 'HEAD with body');
    throws(() => new Request('https://a.com', { method: 'bad method' }), TypeError, 'invalid method');
    throws(() => new Request('https://a.com', { method: 'CONNECT' }), TypeError, 'forbidden method');
    throws(() => new Request('https://a.com', { redirect: 'nope' }), TypeError, 'bad redirect');
    throws(() => new Request('https://a.com', { signal: {} }), TypeError, 'bad signal');
    throws(() => new Request('https://a.com', { headers: [['a']] }), TypeError, 'bad headers');
    throws(() => new Request(), TypeError, 'no argument');
  });
  await test('Request init members checked as the Fetch Standard says', () => {
    // WPT fetch/api/request/request-error.any.js
    const u = 'https://a.com/';
    throws(() => new Request(u, { window: 'x' }), TypeError, 'window not null');
    new Request(u, { window: null });
    new Request(u, { window: undefined });
    throws(() => new Request('https://user:pass@a.com/'), TypeError, 'credentials in the URL');
    throws(() => new Request('https://user@a.com/'), TypeError, 'a user name alone');
    throws(() => new Request(u, { mode: 'navigate' }), TypeError, 'navigate mode');
    throws(() => new Request(u, { referrer: 'http://:bad' }), TypeError, 'invalid referrer');
    new Request(u, { referrer: '' });
    new Request(u, { referrer: 'about:client' });
    throws(() => new Request(u, { mode: 'no-cors', method: 'PUT' }), TypeError, 'no-cors with a method not safelisted');
    new Request(u, { mode: 'no-cors', method: 'post' });
    throws(() => new Request(u, { cache: 'only-if-cached' }), TypeError, 'only-if-cached in the default mode');
    throws(() => new Request(u, { cache: 'only-if-cached', mode: 'cors' }), TypeError, 'only-if-cached with cors');
    new Request(u, { cache: 'only-if-cached', mode: 'same-origin' });
    new Request(u, { cache: 'no-store', credentials: 'include', mode: 'cors', referrerPolicy: 'no-referrer' });
    for (const member of ['referrerPolicy', 'mode', 'credentials', 'cache', 'redirect']) {
      throws(() => new Request(u, { [member]: 'BAD' }), TypeError, `bad ${member}`);
    }
    // A Request as input is not checked for credentials again (its URL is its own).
    eq(new Request(new Request(u), { mode: 'cors' }).url, u);
  });
  await test('Request bodies and content types', async () => {
    const r = new Request('https://a.com', { method: 'POST', body: 'hi' });
    eq(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
    eq(await r.text(), 'hi');
    const p = new Request('https://a.com', { method: 'POST', body: new URLSearchParams('a=1') });
    eq(p.headers.get('content-type'), 'application/x-www-form-urlencoded;charset=UTF-8');
    const own = new Request('https://a.com', { method: 'POST', body: 'x', headers: { 'content-type': 'text/x' } });
    eq(own.headers.get('content-type'), 'text/x', 'explicit content type kept');
    const bin = new Request('https://a.com', { method: 'PUT', body: new Uint8Array([1, 2]) });
    eq(bin.headers.has('content-type'), false, 'no content type for bytes');
    eq(hex(await bin.arrayBuffer()), '0102');
  });
  await test('Request from Request + init', async () => {
    const ac = new AbortController();
    const a = new Request('https://a.com/x', { method: 'POST', body: 'payload', headers: { 'x-a': '1' }, signal: ac.signal });
    const b = new Request(a, { headers: { 'x-b': '2' } });
    eq(b.url, 'https://a.com/x');
    eq(b.method, 'POST');
    eq(b.headers.get('x-a'), null, 'init headers replace');
    eq(b.headers.get('x-b'), '2');
    eq(a.bodyUsed, true, 'the body moved to the new request');
    eq(await b.text(), 'payload');
    ac.abort();
    eq(b.signal.aborted, true, 'follows the original signal');
    const c = new Request(new Request('https://a.com', { headers: { k: 'v' } }));
    eq(c.headers.get('k'), 'v', 'headers copied');
    const d = new Request(new Request('https://a.com', { method: 'PUT' }), { method: 'DELETE' });
    eq(d.method, 'DELETE');
    const used = new Request('https://a.com', { method: 'POST', body: 'x' });
    await used.text();
    throws(() => new Request(used), TypeError, 'a used body cannot be reused');
    throws(() => new Request(new Request('https://a.com', { method: 'POST', body: 'x' }), { method: 'GET' }), TypeError, 'GET with inherited body');
  });
  await test('Response construction', async () => {
    const r = new Response('hello');
    eq(r.status, 200);
    eq(r.ok, true);
    eq(r.statusText, '');
    eq(r.type, 'default');
    eq(r.url, '');
    eq(r.redirected, false);
    eq(r.headers.get('content-type'), 'text/plain;charset=UTF-8');
    eq(await r.text(), 'hello');
    const e = new Response(null, { status: 404, statusText: 'Not Found', headers: { 'x-y': 'z' } });
    eq(e.ok, false);
    eq(e.statusText, 'Not Found');
    eq(e.headers.get('x-y'), 'z');
    eq(e.body, null);
    eq(await e.text(), '', 'null body reads as empty');
    eq(new Response().status, 200);
    eq(new Response(undefined, { status: 204 }).status, 204);
    eq(new Response('', { status: 599 }).status, 599);
  });
  await test('Response errors', () => {
    throws(() => new Response('x', { status: 199 }), RangeError, 'status 199');
    throws(() => new Response('x', { status: 600 }), RangeError, 'status 600');
    throws(() => new Response('x', { status: 0 }), RangeError, 'status 0');
    throws(() => new Response('x', { status: 204 }), TypeError, 'body with 204');
    throws(() => new Response('x', { status: 304 }), TypeError, 'body with 304');
    throws(() => new Response('x', { statusText: 'bad\nline' }), TypeError, 'newline in statusText');
    throws(() => new Response('x', { statusText: '\u0100' }), TypeError, 'non-ByteString statusText');
    throws(() => new Response('x', { headers: { 'a b': 'c' } }), TypeError, 'bad header name');
  });
  await test('Response.json, redirect, error', async () => {
    const j = Response.json({ a: [1, 'x'] }, { status: 201, headers: { 'x-k': 'v' } });
    eq(j.status, 201);
    eq(j.headers.get('content-type'), 'application/json');
    eq(j.headers.get('x-k'), 'v');
    deepEq(await j.json(), { a: [1, 'x'] });
    eq(Response.json('s', { headers: { 'content-type': 'application/vnd.x+json' } }).headers.get('content-type'), 'application/vnd.x+json', 'explicit content type kept');
    throws(() => Response.json(undefined), TypeError, 'undefined is not JSON');
    throws(() => Response.json(() => {}), TypeError, 'function is not JSON');
    throws(() => Response.json(1n), TypeError, 'BigInt throws');
    const cyc = {};
    cyc.self = cyc;
    throws(() => Response.json(cyc), TypeError, 'cycle');
    throws(() => Response.json({}, { status: 204 }), TypeError, 'json with null body status');
    const r = Response.redirect('https://a.com/next');
    eq(r.status, 302);
    eq(r.headers.get('location'), 'https://a.com/next');
    eq(r.body, null);
    eq(Response.redirect('https://a.com/', 301).status, 301);
    eq(Response.redirect(new URL('https://b.com/x y'), 308).headers.get('location'), 'https://b.com/x%20y');
    throws(() => Response.redirect('https://a.com/', 200), RangeError, 'not a redirect status');
    throws(() => Response.redirect('/relative'), TypeError, 'relative URL');
    const e = Response.error();
    eq(e.type, 'error');
    eq(e.status, 0);
    eq(e.ok, false);
    eq(e.body, null);
  });
  await test('body mixin reads', async () => {
    eq(hex(await new Response(new Uint8Array([1, 2, 3])).arrayBuffer()), '010203');
    const ab = await new Response('x').arrayBuffer();
    assert(ab instanceof ArrayBuffer, 'arrayBuffer() gives an ArrayBuffer');
    const b = await new Response('abc').bytes();
    assert(b instanceof Uint8Array, 'bytes() gives a Uint8Array');
    eq(hex(b), '616263');
    deepEq(await new Response('{"k":[1]}').json(), { k: [1] });
    await rejects(new Response('{bad').json(), SyntaxError, 'bad JSON');
    eq(await new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0xff])).text(), 'h\ufffd', 'BOM stripped, invalid replaced');
    const blob = await new Response('blob!', { headers: { 'content-type': 'text/x-test' } }).blob();
    assert(blob instanceof Blob, 'blob() gives a Blob');
    eq(blob.type, 'text/x-test');
    eq(await blob.text(), 'blob!');
    const shared = new Uint8Array([7]);
    const r = new Response(shared);
    shared[0] = 8;
    eq(hex(await r.arrayBuffer()), '07', 'the body is a copy of the buffer');
    const fromBlob = new Response(new Blob(['bb'], { type: 'x/y' }));
    eq(fromBlob.headers.get('content-type'), 'x/y');
    eq(await fromBlob.text(), 'bb');
  });
  await test('bodyUsed and locked bodies', async () => {
    const r = new Response('once');
    await r.text();
    eq(r.bodyUsed, true);
    await rejects(r.text(), TypeError, 'text twice');
    await rejects(r.arrayBuffer(), TypeError, 'arrayBuffer after text');
    throws(() => r.clone(), TypeError, 'clone after use');
    const s = new Response('stream');
    const reader = s.body.getReader();
    eq(s.bodyUsed, false, 'locked is not used');
    await rejects(s.text(), TypeError, 'locked body');
    await reader.read();
    eq(s.bodyUsed, true, 'disturbed is used');
    const rs = new ReadableStream();
    rs.getReader();
    throws(() => new Response(rs), TypeError, 'a locked stream cannot be a body');
  });
  await test('stream bodies', async () => {
    const body = ReadableStream.from([te.encode('a'), te.encode('b')]);
    const r = new Response(body);
    eq(r.body, body, 'the same stream');
    eq(await r.text(), 'ab');
    const bad = new Response(ReadableStream.from(['not bytes']));
    await rejects(bad.text(), TypeError, 'string chunks are not bytes');
    const t = new Response('lazy');
    eq(await drain(t.body), 'lazy', 'a string body as a stream');
    eq(t.body === t.body, true, 'body is the same object each time');
  });
  await test('clone tees the body', async () => {
    const r = new Response(ReadableStream.from([te.encode('x'), te.encode('y')]), { status: 201, headers: { a: 'b' } });
    const c = r.clone();
    eq(c.status, 201);
    eq(c.headers.get('a'), 'b');
    c.headers.set('a', 'changed');
    eq(r.headers.get('a'), 'b', 'headers copied, not shared');
    eq(await r.text(), 'xy');
    eq(await c.text(), 'xy');
    const q = new Request('https://a.com', { method: 'POST', body: 'rq' });
    const qc = q.clone();
    eq(await q.text(), 'rq');
    eq(await qc.text(), 'rq');
    eq(qc.method, 'POST');
    const fixed = new Response('fixed');
    const fc = fixed.clone();
    eq(await fc.text(), 'fixed');
    eq(await fixed.text(), 'fixed');
  });
  await test('brands and toStringTag', () => {
    eq(Object.prototype.toString.call(new Request('https://a.com')), '[object Request]');
    eq(Object.prototype.toString.call(new Response()), '[object Response]');
    throws(() => Object.getOwnPropertyDescriptor(Response.prototype, 'status').get.call({}), TypeError, 'status getter');
    throws(() => Request.prototype.clone.call(new Response()), TypeError, 'Request.clone on a Response');
  });
  await test('body methods reject (not throw) on wrong receivers', async () => {
    await rejects(() => Response.prototype.text.call({}), TypeError, 'text');
    await rejects(() => Request.prototype.json.call(new Response('1')), TypeError, 'Request method on a Response');
  });
  // Every way of reading a body disturbs it (WPT fetch/api/response/response-stream-disturbed-*).
  await test('every consumption path disturbs the body', async () => {
    const sources = {
      bytes: () => new Response('hello'),
      stream: () => new Response(new ReadableStream({ start(c) { c.enqueue(te.encode('hello')); c.close(); } })),
    };
    for (const [kind, make] of Object.entries(sources)) {
      for (const method of ['text', 'arrayBuffer', 'blob', 'json', 'bytes']) {
        const r = make();
        r[method]().catch(() => {});
        eq(r.bodyUsed, true, `${kind}: ${method}() marks the body used at once`);
        throws(() => r.body.getReader(), TypeError, `${kind}: the body stays locked after ${method}()`);
        await rejects(r.text(), TypeError, `${kind}: text() after ${method}()`);
      }
      let r = make();
      const reader = r.body.getReader();
      eq(r.bodyUsed, false, `${kind}: locked is not disturbed`);
      await reader.read();
      reader.releaseLock();
      eq(r.bodyUsed, true, `${kind}: a read disturbs`);
      await rejects(r.text(), TypeError, `${kind}: text() after a read`);
      r = make();
      r.body.pipeTo(new WritableStream({}, { highWaterMark: 0 }));
      eq(r.bodyUsed, true, `${kind}: pipeTo disturbs at once`);
      await rejects(r.arrayBuffer(), TypeError, `${kind}: arrayBuffer() after pipeTo`);
      r = make();
      r.body.pipeThrough(new TransformStream());
      eq(r.bodyUsed, true, `${kind}: pipeThrough disturbs at once`);
      r = make();
      const [branch] = r.body.tee();
      await rejects(r.text(), TypeError, `${kind}: text() after tee (locked)`);
      await branch.getReader().read();
      eq(r.bodyUsed, true, `${kind}: reading a branch disturbs the original`);
      r = make();
      await r.body.cancel();
      eq(r.bodyUsed, true, `${kind}: cancel disturbs`);
      await rejects(r.blob(), TypeError, `${kind}: blob() after cancel`);
      r = make();
      for await (const chunk of r.body) { assert(chunk); break; }
      eq(r.bodyUsed, true, `${kind}: async iteration disturbs`);
      r = make();
      const moved = new Response(r.body);
      eq(await moved.text(), 'hello');
      eq(r.bodyUsed, true, `${kind}: a body read through another Response`);
      r = make();
      const req = new Request('http://x/', { method: 'POST', body: r.body });
      eq(await req.text(), 'hello');
      eq(r.bodyUsed, true, `${kind}: a body read through a Request`);
    }
  });
  await test('a read or cancel through the stream itself disturbs, in any state', async () => {
    const states = {
      open: () => new ReadableStream(),
      closed: () => new ReadableStream({ start(c) { c.close(); } }),
      errored: () => new ReadableStream({ start(c) { c.error(new Error('x')); } }),
    };
    for (const [state, make] of Object.entries(states)) {
      for (const action of ['read', 'cancel']) {
        const stream = make();
        const r = new Response(stream);
        eq(r.bodyUsed, false, `${state}: on construction`);
        const reader = stream.getReader();
        eq(r.bodyUsed, false, `${state}: after getReader`);
        reader[action]().catch(() => {});
        eq(r.bodyUsed, true, `${state}: after ${action}()`);
      }
    }
  });
  // WPT fetch/api/response/response-stream-with-broken-then: reading a body
  // must not look up `then` on objects a worker can reach.
  await test('a patched Object.prototype.then cannot reach a body read', async () => {
    for (const injected of [{ done: false, value: te.encode('bye') }, { done: false, value: 'bye' }, { done: false, value: undefined }, { done: true }, { done: false, value: 8.2 }]) {
      const stream = () => new ReadableStream({ start(c) { c.enqueue(te.encode('hello')); c.close(); } });
      for (const make of [() => new Response(stream()), () => new Response('hello')]) {
        const r = make();
        let called = 0;
        let text, error;
        Object.prototype.then = function then(onFulfilled) { delete Object.prototype.then; called++; onFulfilled(injected); };
        try {
          text = await r.text();
        } catch (e) {
          error = e;
        } finally {
          delete Object.prototype.then;
        }
        eq(error && `${error.name}: ${error.message}`, undefined, 'no error');
        eq(text, 'hello', 'the real body');
        eq(called, 0, 'then was never looked up');
      }
    }
    const r = new Response(ReadableStream.from([te.encode('a'), te.encode('b')]));
    let called = 0;
    Object.prototype.then = function then(onFulfilled) { delete Object.prototype.then; called++; onFulfilled('x'); };
    let json;
    try { json = await new Response('{"a":1}').json(); } finally { delete Object.prototype.then; }
    // json() resolves with the parsed object, which the standard's promise
    // resolution does look `then` up on: the patch may replace it, never the bytes read.
    assert(called === 0 || json === 'x', 'json() reads the real body');
    eq(await r.text(), 'ab');
  });
});
