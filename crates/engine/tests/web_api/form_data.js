// FormData (XHR Standard), Request/Response.formData() and FormData bodies (Fetch Standard; WPT xhr/formdata, fetch/api/body/formdata-*.any.js for reference).

const CRLF = '\r\n';
const mp = (boundary, ...lines) => lines.join(CRLF);
const parse = (body, type = 'multipart/form-data; boundary=b') =>
  new Response(body, { headers: { 'content-type': type } }).formData();
const iso = async (r) => String.fromCharCode(...new Uint8Array(await r.arrayBuffer()));
const boundaryOf = (r) => {
  const t = r.headers.get('content-type');
  assert(t.startsWith('multipart/form-data; boundary='), `content type ${t}`);
  return t.slice('multipart/form-data; boundary='.length);
};

export default suite(async () => {
  await test('the interface', () => {
    eq(typeof FormData, 'function');
    eq(Object.prototype.toString.call(new FormData()), '[object FormData]');
    eq(Object.getOwnPropertyDescriptor(globalThis, 'FormData').enumerable, false, 'global not enumerable');
    for (const m of ['append', 'delete', 'get', 'getAll', 'has', 'set', 'entries', 'keys', 'values', 'forEach']) {
      const d = Object.getOwnPropertyDescriptor(FormData.prototype, m);
      assert(d && typeof d.value === 'function' && d.enumerable, `${m} is an enumerable method`);
    }
    eq(FormData.prototype[Symbol.iterator], FormData.prototype.entries, '@@iterator is entries');
    throws(() => FormData(), TypeError, 'needs new');
    throws(() => FormData.prototype.get.call({}, 'a'), TypeError, 'brand check');
  });

  await test('constructor takes no form', () => {
    new FormData(undefined);
    throws(() => new FormData(null), TypeError, 'null');
    throws(() => new FormData({}), TypeError, 'a plain object');
    throws(() => new FormData('form'), TypeError, 'a string');
  });

  await test('append, get, getAll, has, delete, set', () => {
    const fd = new FormData();
    eq(fd.get('a'), null, 'missing get is null');
    deepEq(fd.getAll('a'), [], 'missing getAll is empty');
    eq(fd.has('a'), false);
    fd.append('a', '1');
    fd.append('b', 2);
    fd.append('a', '3');
    eq(fd.get('a'), '1', 'first value');
    deepEq(fd.getAll('a'), ['1', '3']);
    eq(fd.get('b'), '2', 'values are converted to strings');
    eq(fd.has('b'), true);
    fd.set('a', 'x');
    deepEq([...fd], [['a', 'x'], ['b', '2']], 'set replaces the first and removes the rest');
    fd.set('c', 'y');
    deepEq([...fd.keys()], ['a', 'b', 'c'], 'set appends a new name');
    fd.delete('a');
    deepEq([...fd.keys()], ['b', 'c']);
    throws(() => fd.append('a'), TypeError, 'append needs two arguments');
    throws(() => fd.get(), TypeError, 'get needs one argument');
    throws(() => fd.append('a', 'v', 'f.txt'), TypeError, 'a filename needs a Blob');
    throws(() => fd.append(Symbol('s'), 'v'), TypeError, 'symbols are not strings');
  });

  await test('names and values are USVStrings', () => {
    const fd = new FormData();
    fd.append('a\uD800', 'b\uDC00');
    deepEq([...fd], [['a\uFFFD', 'b\uFFFD']]);
    eq(fd.get('a\uD800'), 'b\uFFFD', 'lookups convert too');
  });

  await test('Blob and File entries', async () => {
    const fd = new FormData();
    fd.append('blob', new Blob(['hello'], { type: 'text/plain' }));
    const f = fd.get('blob');
    assert(f instanceof File, 'a Blob becomes a File');
    eq(f.name, 'blob');
    eq(f.type, 'text/plain');
    eq(await f.text(), 'hello');
    assert(Math.abs(f.lastModified - Date.now()) < 1000, 'lastModified is now');
    eq(fd.get('blob'), f, 'the same File every time');
    fd.append('named', new Blob(['x']), 'x.bin');
    eq(fd.get('named').name, 'x.bin', 'filename argument');
    const file = new File(['data'], 'orig.txt', { type: 'text/csv', lastModified: 123 });
    fd.append('file', file);
    eq(fd.get('file'), file, 'a File without filename is kept as is');
    fd.set('file', file, 'renamed.txt');
    const renamed = fd.get('file');
    eq(renamed.name, 'renamed.txt');
    eq(renamed.type, 'text/csv');
    eq(renamed.lastModified, 123, 'lastModified kept');
    eq(await renamed.text(), 'data');
  });

  await test('iteration is live and ordered', () => {
    const fd = new FormData();
    for (const [k, v] of [['foo', '0'], ['baz', '1'], ['BAR', '2']]) fd.append(k, v);
    const keys = [];
    for (const [k] of fd) { keys.push(k); fd.delete('baz'); }
    deepEq(keys, ['foo', 'BAR'], 'removed entries are skipped');
    const fd2 = new FormData();
    for (const [k, v] of [['foo', '0'], ['baz', '1']]) fd2.append(k, v);
    const seen = [];
    for (const [k, v] of fd2) { seen.push(v); if (k === 'baz') fd2.append('new', '2'); }
    deepEq(seen, ['0', '1', '2'], 'appended entries are reached');
    deepEq([...fd2.values()], ['0', '1', '2']);
    const it = fd2.entries();
    eq(Object.prototype.toString.call(it), '[object FormData Iterator]');
    deepEq(it.next(), { value: ['foo', '0'], done: false });
    const calls = [];
    fd2.forEach(function (value, key, obj) { calls.push([key, value, obj === fd2, this.t]); }, { t: 1 });
    deepEq(calls, [['foo', '0', true, 1], ['baz', '1', true, 1], ['new', '2', true, 1]]);
  });

  await test('Response(formData) serialises multipart/form-data', async () => {
    const fd = new FormData();
    fd.append('a', '1');
    fd.append('b', new File(['contents'], 'b.txt', { type: 'text/plain' }));
    fd.append('c', new Blob(['raw']));
    const r = new Response(fd);
    const b = boundaryOf(r);
    assert(/^[0-9A-Za-z-]{27,70}$/.test(b), `boundary ${b}`);
    fd.append('late', 'x');
    eq(await iso(r), [
      `--${b}`, 'Content-Disposition: form-data; name="a"', '', '1',
      `--${b}`, 'Content-Disposition: form-data; name="b"; filename="b.txt"', 'Content-Type: text/plain', '', 'contents',
      `--${b}`, 'Content-Disposition: form-data; name="c"; filename="blob"', 'Content-Type: application/octet-stream', '', 'raw',
      `--${b}--`, '',
    ].join(CRLF), 'body (a snapshot of the entries)');
    assert(boundaryOf(new Response(fd)) !== b, 'a new boundary each time');
    const empty = new Response(new FormData());
    eq(await iso(empty), `--${boundaryOf(empty)}--\r\n`, 'an empty FormData');
  });

  await test('escaping and newline normalisation (HTML Standard)', async () => {
    const fd = new FormData();
    fd.append('a\nb"c', 'x\ry\nz\r\n');
    fd.append('f', new File([], 'q"\r\n.txt', { type: 'text/plain' }));
    const r = new Response(fd);
    const b = boundaryOf(r);
    eq(await iso(r), [
      `--${b}`, 'Content-Disposition: form-data; name="a%0D%0Ab%22c"', '', 'x\r\ny\r\nz\r\n',
      `--${b}`, 'Content-Disposition: form-data; name="f"; filename="q%22%0D%0A.txt"', 'Content-Type: text/plain', '', '',
      `--${b}--`, '',
    ].join(CRLF));
  });

  await test('Request with a FormData body', async () => {
    const fd = new FormData();
    fd.append('k', 'v');
    const req = new Request('http://x/', { method: 'POST', body: fd });
    assert(req.headers.get('content-type').startsWith('multipart/form-data; boundary='), 'content-type set');
    const back = await req.formData();
    deepEq([...back], [['k', 'v']]);
    const own = new Request('http://x/', { method: 'POST', body: fd, headers: { 'content-type': 'text/x-mine' } });
    eq(own.headers.get('content-type'), 'text/x-mine', 'an explicit content-type is kept');
  });

  await test('round trip', async () => {
    const fd = new FormData();
    fd.append('a', '1');
    fd.append('a', '2');
    fd.append('f', new File([new Uint8Array([0, 0x80, 0xff, 13, 10, 45, 45])], 'bin.dat', { type: 'application/x-thing' }));
    fd.append('g', new Blob(['more'], { type: 'text/html' }));
    fd.append('é', 'ü\n');
    const back = await new Response(fd).formData();
    deepEq([...back.keys()], ['a', 'a', 'f', 'g', 'é']);
    deepEq(back.getAll('a'), ['1', '2']);
    const f = back.get('f');
    assert(f instanceof File, 'a File');
    eq(f.name, 'bin.dat');
    eq(f.type, 'application/x-thing');
    eq(f.lastModified, 0, 'parsed files have lastModified 0');
    deepEq([...new Uint8Array(await f.arrayBuffer())], [0, 0x80, 0xff, 13, 10, 45, 45], 'bytes as they were');
    eq(back.get('g').name, 'blob');
    eq(back.get('g').type, 'text/html');
    eq(back.get('é'), 'ü\r\n', 'values come back newline-normalised');
  });

  await test('multipart parsing', async () => {
    const body = mp('b',
      '--b', 'Content-Disposition: form-data; name="field1"', '', 'value1',
      '--b', 'Content-Disposition: form-data; name="file"; filename="doc.txt"', '', 'file data',
      '--b', 'CONTENT-DISPOSITION: form-data; name="typed"; filename="t"', 'Content-Type: TEXT/HTML', 'X-Other: ignored', '', 'line1', 'line2',
      '--b', 'Content-Disposition: form-data; name="empty"', '', '',
      '--b', 'Content-Disposition: form-data; name="a"', '', 'x--b',
      '--b--', 'epilogue');
    const fd = await parse(body);
    deepEq([...fd.keys()], ['field1', 'file', 'typed', 'empty', 'a']);
    eq(fd.get('field1'), 'value1');
    eq(fd.get('file').type, 'text/plain', 'a file part without Content-Type is text/plain');
    eq(await fd.get('file').text(), 'file data');
    eq(fd.get('typed').type, 'text/html', 'Content-Type lower-cased');
    eq(await fd.get('typed').text(), 'line1\r\nline2');
    eq(fd.get('empty'), '');
    eq(fd.get('a'), 'x--b', 'a boundary not after CRLF is data');
    const quoted = await parse(mp('', '--a.b(c)', 'Content-Disposition: form-data; name="q"', '', 'v', '--a.b(c)--', ''), 'multipart/form-data; boundary="a.b(c)"');
    eq(quoted.get('q'), 'v', 'quoted boundary');
    const bytesBody = new Uint8Array([...new TextEncoder().encode('--b\r\nContent-Disposition: form-data; name="a"\r\n\r\nb'), 0xff, ...new TextEncoder().encode('\r\n--b--\r\n')]);
    eq((await parse(bytesBody)).get('a'), 'b\uFFFD', 'invalid UTF-8 in a value is replaced');
    deepEq([...(await parse('--b--\r\n'))], [], 'no parts');
  });

  await test('urlencoded parsing', async () => {
    const fd = await parse('a=1&b=two+words&b=%C3%A9t%C3%A9&&c', 'application/x-www-form-urlencoded;charset=UTF-8');
    deepEq([...fd], [['a', '1'], ['b', 'two words'], ['b', 'été'], ['c', '']]);
    const req = new Request('http://x/', { method: 'POST', body: new URLSearchParams('x=1&y=%20') });
    deepEq([...(await req.formData())], [['x', '1'], ['y', ' ']], 'a URLSearchParams body');
    deepEq([...(await parse('', 'application/x-www-form-urlencoded'))], [], 'empty body');
    deepEq([...(await parse('\uFEFFa=1', 'application/x-www-form-urlencoded'))], [['\uFEFFa', '1']], 'a BOM is kept');
  });

  await test('errors are TypeErrors', async () => {
    await rejects(parse('a=1', 'text/plain'), TypeError, 'another content type');
    await rejects(new Response('a=1').formData(), TypeError, 'text/plain from a string body');
    await rejects(new Response(new Uint8Array([1])).formData(), TypeError, 'no content type');
    await rejects(parse('--b--', 'multipart/form-data'), TypeError, 'no boundary');
    const cases = {
      'empty body': '',
      'only a delimiter': '--b',
      'no close delimiter': mp('b', '--b', 'Content-Disposition: form-data; name="a"', '', 'value'),
      'part without headers': mp('b', '--b', '', 'value', '--b--', ''),
      'no Content-Disposition': mp('b', '--b', 'Content-Type: text/plain', '', 'value', '--b--', ''),
      'no name': mp('b', '--b', 'Content-Disposition: form-data; filename="f"', '', 'value', '--b--', ''),
      'header without a colon': mp('b', '--b', 'Content-Disposition form-data; name="a"', '', 'value', '--b--', ''),
      'NUL in a header': mp('b', '--b', 'Content-Disposition: form-data; name="a"', 'X-Custom: a\u0000b', '', 'value', '--b--', ''),
    };
    for (const [what, body] of Object.entries(cases)) await rejects(parse(body), TypeError, what);
    const r = new Response('x', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    await r.formData();
    await rejects(r.formData(), TypeError, 'a used body');
  });

  await test('hostile: many parts and large bodies stay bounded', async () => {
    // 20,000 parts in one body: parsed linearly, one JS entry each.
    const n = 20000;
    let body = '';
    for (let i = 0; i < n; i++) body += `--b\r\nContent-Disposition: form-data; name="p"\r\n\r\n${i}\r\n`;
    body += '--b--\r\n';
    const fd = await parse(body);
    const all = fd.getAll('p');
    eq(all.length, n, 'every part');
    eq(all[n - 1], String(n - 1));
    // A 4 MiB file part: its bytes are the File's, unchanged.
    const big = new Uint8Array(4 << 20).fill(7);
    const sent = new FormData();
    sent.append('big', new Blob([big]));
    const back = (await new Response(sent).formData()).get('big');
    eq(back.size, big.byteLength);
    // A part whose headers never end, and 40 headers in one part (more than the parser keeps).
    await rejects(parse('--b\r\nContent-Disposition: form-data; name="a"\r\n' + 'X: y\r\n'.repeat(50000)), TypeError, 'unterminated headers');
    await rejects(parse(`--b\r\nContent-Disposition: form-data; name="a"\r\n${'X: y\r\n'.repeat(40)}\r\nv\r\n--b--\r\n`), TypeError, 'too many headers');
  });
});
