// fetch() against a local HTTP server whose base URL is env.TARGET (see README.md for its endpoints).

export default suite(async (request, env) => {
  const T = env.TARGET;
  assert(typeof T === 'string' && T.startsWith('http'), 'env.TARGET is the test server');
  await test('GET and response basics', async () => {
    const res = await fetch(`${T}/echo?q=1`);
    assert(res instanceof Response, 'a Response');
    eq(res.status, 200);
    eq(res.ok, true);
    eq(res.url, `${T}/echo?q=1`);
    eq(res.headers.get('content-type'), 'application/json');
    eq(res.headers.get('x-echo'), 'yes');
    deepEq(res.headers.getSetCookie(), ['a=1', 'b=2']);
    throws(() => res.headers.set('x', 'y'), TypeError, 'fetched response headers are immutable');
    assert(res.body instanceof ReadableStream, 'body is a stream');
    const j = await res.json();
    eq(j.method, 'GET');
    eq(j.url, '/echo?q=1');
    eq(j.body, '');
    eq(res.bodyUsed, true);
  });
  await test('POST with a body, headers, methods', async () => {
    const res = await fetch(`${T}/echo`, { method: 'POST', body: 'hello \u00e9', headers: { 'X-Custom': 'v1' } });
    const j = await res.json();
    eq(j.method, 'POST');
    eq(j.body, 'hello \u00e9');
    eq(j.headers['x-custom'], 'v1');
    eq(j.headers['content-type'], 'text/plain;charset=UTF-8');
    const put = await (await fetch(`${T}/echo`, { method: 'put', body: new Uint8Array([104, 105]) })).json();
    eq(put.method, 'PUT');
    eq(put.body, 'hi');
    const streamed = await (await fetch(`${T}/echo`, {
      method: 'POST',
      body: ReadableStream.from([new TextEncoder().encode('str'), new TextEncoder().encode('eam')]),
      duplex: 'half',
    })).json();
    eq(streamed.body, 'stream', 'a stream body is buffered and sent');
    const fromRequest = await (await fetch(new Request(`${T}/echo`, { method: 'DELETE', headers: { k: 'v' } }))).json();
    eq(fromRequest.method, 'DELETE');
    eq(fromRequest.headers.k, 'v');
  });
  await test('status codes and empty bodies', async () => {
    const nf = await fetch(`${T}/nowhere`);
    eq(nf.status, 404);
    eq(nf.ok, false);
    eq(await nf.text(), 'not found');
    const s = await fetch(`${T}/status?code=503&body=down`);
    eq(s.status, 503);
    eq(await s.text(), 'down');
    const nc = await fetch(`${T}/status?code=204`);
    eq(nc.status, 204);
    eq(await nc.text(), '');
    const head = await fetch(`${T}/echo`, { method: 'HEAD' });
    eq(head.status, 200);
    eq(await head.text(), '');
  });
  await test('streamed response body', async () => {
    const res = await fetch(`${T}/stream`);
    const reader = res.body.getReader();
    let text = '';
    let chunks = 0;
    const d = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      assert(value instanceof Uint8Array, 'chunks are Uint8Array');
      chunks++;
      text += d.decode(value, { stream: true });
    }
    eq(text, 'chunk0;chunk1;chunk2;chunk3;chunk4;');
    assert(chunks >= 1, 'at least one chunk');
    const big = await fetch(`${T}/big`);
    const buf = await big.arrayBuffer();
    eq(buf.byteLength, 1 << 20);
    eq(new Uint8Array(buf)[12345], 7);
  });
  await test('clone a fetched response', async () => {
    const res = await fetch(`${T}/echo`);
    const c = res.clone();
    eq((await res.json()).method, 'GET');
    eq((await c.json()).method, 'GET');
    const again = await fetch(`${T}/echo`);
    const copy = new Response(again.body, again);
    copy.headers.set('x-added', '1');
    eq(copy.headers.get('x-added'), '1', 'new Response(body, res) has mutable headers');
  });
  await test('errors', async () => {
    await rejects(fetch('/relative'), TypeError, 'relative URL');
    await rejects(fetch('not a url'), TypeError, 'bad URL');
    await rejects(fetch(`${T}/echo`, { method: 'GET', body: 'x' }), TypeError, 'GET with body');
    await rejects(fetch('http://127.0.0.1:9/'), TypeError, 'connection refused');
    await rejects(fetch(), TypeError, 'no argument');
  });
  await test('redirects: follow, manual, error', async () => {
    const res = await fetch(`${T}/redirect?n=2&to=/echo`);
    eq(res.status, 200);
    eq(res.redirected, true);
    eq(res.url, `${T}/echo`);
    eq((await res.json()).method, 'GET');
    const direct = await fetch(`${T}/echo`);
    eq(direct.redirected, false);
    await direct.arrayBuffer();
    const post303 = await (await fetch(`${T}/redirect?code=303`, { method: 'POST', body: 'x' })).json();
    eq(post303.method, 'GET', '303 turns POST into GET');
    eq(post303.body, '');
    const post307 = await (await fetch(`${T}/redirect?code=307`, { method: 'POST', body: 'kept' })).json();
    eq(post307.method, 'POST', '307 keeps the method');
    eq(post307.body, 'kept', '307 keeps the body');
    const manual = await fetch(`${T}/redirect`, { redirect: 'manual' });
    eq(manual.status, 302);
    eq(manual.redirected, false);
    eq(manual.headers.get('location'), '/echo');
    eq(manual.url, `${T}/redirect`);
    await manual.arrayBuffer();
    eq(new Request(`${T}/`, { redirect: 'manual' }).redirect, 'manual');
    await rejects(fetch(`${T}/redirect`, { redirect: 'error' }), TypeError, "redirect: 'error'");
    await rejects(fetch(new Request(`${T}/redirect`, { redirect: 'error' })), TypeError, "a Request's redirect mode");
    await rejects(fetch(`${T}/redirect?n=21`), TypeError, 'more than 20 redirects');
  });
  await test('AbortSignal', async () => {
    await rejects(fetch(`${T}/echo`, { signal: AbortSignal.abort() }), 'AbortError', 'already aborted');
    const ac = new AbortController();
    const p = fetch(`${T}/slow`, { signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await rejects(p, 'AbortError', 'aborted while waiting');
    const reason = new RangeError('custom reason');
    await rejects(fetch(`${T}/slow`, { signal: AbortSignal.abort(reason) }), RangeError, 'custom reason');
    await rejects(fetch(`${T}/slow`, { signal: AbortSignal.timeout(20) }), 'TimeoutError', 'timeout');
    const ac2 = new AbortController();
    const res = await fetch(`${T}/stream`, { signal: ac2.signal });
    const reader = res.body.getReader();
    await reader.read();
    ac2.abort();
    await rejects(reader.read(), 'AbortError', 'abort errors the body stream');
  });
  await test('request headers the connection owns', async () => {
    const target = new URL(T);
    // A proxy copies the incoming request's headers: its Host is not sent,
    // the target's is (Host is a forbidden request header; workerd does the same).
    const copied = await (await fetch(`${T}/echo`, { headers: { host: 'incoming.example', 'x-kept': '1', connection: 'x-hop', 'keep-alive': '5', te: 'trailers', upgrade: 'h2c' } })).json();
    eq(copied.headers.host, target.host, 'the target URL host');
    eq(copied.headers['x-kept'], '1');
    eq(copied.headers.upgrade, undefined, 'upgrade is not sent');
    eq(copied.headers['keep-alive'], undefined, 'keep-alive is not sent');
    eq(copied.headers.te, undefined, 'te is not sent');
    // Content-Length is the body's, whatever the worker wrote.
    const lying = await (await fetch(`${T}/echo`, { method: 'POST', body: 'abc', headers: { 'content-length': '99' } })).json();
    eq(lying.headers['content-length'], '3');
    eq(lying.body, 'abc');
    // A POST or PUT with a null body says Content-Length: 0 (Fetch Standard).
    for (const method of ['PUT', 'POST']) {
      const empty = await (await fetch(`${T}/echo`, { method })).json();
      eq(empty.headers['content-length'], '0', `${method} without a body`);
    }
    const get = await (await fetch(`${T}/echo`)).json();
    eq(get.headers['content-length'], undefined, 'a GET has none');
    const emptyBody = await (await fetch(`${T}/echo`, { method: 'POST', body: '' })).json();
    eq(emptyBody.headers['content-length'], '0', 'an empty body');
  });
  await test('data: URLs', async () => {
    const plain = await fetch('data:,Hello%2C%20World%21');
    eq(plain.status, 200);
    eq(plain.statusText, 'OK');
    eq(plain.ok, true);
    eq(plain.url, 'data:,Hello%2C%20World%21');
    eq(plain.redirected, false);
    deepEq([...plain.headers], [['content-type', 'text/plain;charset=US-ASCII']], 'the default MIME type');
    throws(() => plain.headers.set('x', 'y'), TypeError, 'immutable headers');
    assert(plain.body instanceof ReadableStream, 'a body stream');
    eq(await plain.text(), 'Hello, World!');
    const b64 = await fetch('data:text/plain;base64,aGVsbG8gZGF0YQ==');
    eq(b64.headers.get('content-type'), 'text/plain');
    eq(await b64.text(), 'hello data');
    const ws = await fetch('data:;base64, aGV sbG8=');
    eq(await ws.text(), 'hello', 'forgiving base64 skips whitespace');
    const mime = await fetch('data:TEXT/Plain;Charset="x";foo=bar,abc#frag');
    eq(mime.headers.get('content-type'), 'text/plain;charset=x;foo=bar', 'the MIME type serialised');
    eq(await mime.text(), 'abc', 'the fragment is not body');
    eq((await fetch('data:foo,abc')).headers.get('content-type'), 'text/plain;charset=US-ASCII', 'an invalid MIME type');
    eq(hex(await (await fetch('data:;base64,/wD+')).arrayBuffer()), 'ff00fe', 'binary');
    eq(hex(await (await fetch('data:,%FF%00%zz')).arrayBuffer()), 'ff00257a7a', 'percent-decoding');
    eq(await (await fetch(new Request('data:,posted', { method: 'POST', body: 'ignored' }))).text(), 'posted', 'any method');
    await rejects(fetch('data:text/plain'), TypeError, 'no comma');
    await rejects(fetch('data:;base64,a'), TypeError, 'invalid base64');
    await rejects(fetch('data:,a', { signal: AbortSignal.abort() }), 'AbortError', 'an aborted signal');
    // Hostile: a data: URL past the 16 MiB bound is refused, not decoded.
    const big = 'data:,' + 'a'.repeat(4 << 20);
    eq((await (await fetch(big)).arrayBuffer()).byteLength, 4 << 20, '4 MiB is fine');
    const huge = 'data:;base64,' + 'QUFB'.repeat((16 << 20) / 4);
    const e = await rejects(fetch(huge), TypeError, 'over 16 MiB');
    assert(/at most/.test(e.message), e.message);
  });
  await test('a patched Object.prototype.then cannot reach a fetched body', async () => {
    const res = await fetch(`${T}/stream`);
    let called = 0;
    let text;
    Object.prototype.then = function then(onFulfilled) { delete Object.prototype.then; called++; onFulfilled({ chunk: new Uint8Array([120]) }); };
    try { text = await res.text(); } finally { delete Object.prototype.then; }
    eq(text, 'chunk0;chunk1;chunk2;chunk3;chunk4;');
    eq(called, 0, 'then was never looked up');
  });
});
