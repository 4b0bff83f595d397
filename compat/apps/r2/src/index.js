// Every R2 bucket method, option and error a Worker meets, as JSON
// (`/probe`), and the routes cli/tests/dev_r2.rs streams through.

function describe(o) {
  if (o === null || o === undefined) return o ?? null;
  const out = {
    class: o.constructor.name,
    key: o.key, version: o.version, size: o.size, etag: o.etag, httpEtag: o.httpEtag,
    uploaded: o.uploaded instanceof Date ? o.uploaded.toISOString() : String(o.uploaded),
    httpMetadata: o.httpMetadata, customMetadata: o.customMetadata,
    range: o.range, checksums: JSON.parse(JSON.stringify(o.checksums)), storageClass: o.storageClass,
    hasBody: 'body' in o,
  };
  return out;
}

async function step(f) {
  try {
    return await f();
  } catch (e) {
    return { error: `${e.name}: ${e.message}` };
  }
}

async function md5Hex(text) {
  const d = await crypto.subtle.digest('MD5', new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function sha256(text) {
  return crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
}

function listed(page) {
  return {
    keys: page.objects.map((o) => o.key),
    meta: page.objects.map((o) => [o.httpMetadata, o.customMetadata]),
    truncated: page.truncated, cursor: page.cursor, delimitedPrefixes: page.delimitedPrefixes,
  };
}

async function probe(B) {
  const r = {};
  const put = await B.put('a/1.txt', 'hello world', {
    httpMetadata: { contentType: 'text/plain', cacheControl: 'max-age=60', contentLanguage: 'en' },
    customMetadata: { owner: 'ann', n: '1' },
  });
  r.put = describe(put);
  r.head = describe(await B.head('a/1.txt'));
  r.headMissing = await B.head('missing');
  r.getMissing = await B.get('missing');
  const got = await B.get('a/1.txt');
  r.get = describe(got);
  r.bodyUsedBefore = got.bodyUsed;
  r.text = await got.text();
  r.bodyUsedAfter = got.bodyUsed;
  for (const [name, range] of Object.entries({
    offsetLength: { offset: 1, length: 3 }, suffix: { suffix: 5 }, offset: { offset: 6 },
    length: { length: 4 }, bigSuffix: { suffix: 100 }, longLength: { offset: 8, length: 100 },
    headers: new Headers({ range: 'bytes=0-1' }), headersOpen: new Headers({ range: 'bytes=3-' }),
    headersSuffix: new Headers({ range: 'bytes=-3' }),
  })) {
    r[`range_${name}`] = await step(async () => {
      const o = await B.get('a/1.txt', { range });
      return { range: o.range, text: await o.text() };
    });
  }
  r.rangeBad = await step(() => B.get('a/1.txt', { range: { offset: 100 } }).then(describe));
  const etag = put.etag;
  r.onlyIfMatch = await step(async () => describe(await B.get('a/1.txt', { onlyIf: { etagMatches: etag } })));
  r.onlyIfNoneMatch = await step(async () => describe(await B.get('a/1.txt', { onlyIf: { etagDoesNotMatch: etag } })));
  r.onlyIfHeaders = await step(async () => describe(await B.get('a/1.txt', { onlyIf: new Headers({ 'if-none-match': `"${etag}"` }) })));
  r.onlyIfHeadersMatch = await step(async () => describe(await B.get('a/1.txt', { onlyIf: new Headers({ 'if-match': `"${etag}"` }) })));
  r.onlyIfBefore = await step(async () => describe(await B.get('a/1.txt', { onlyIf: { uploadedBefore: new Date(0) } })));
  r.onlyIfAfter = await step(async () => describe(await B.get('a/1.txt', { onlyIf: { uploadedAfter: new Date(0) } })));
  r.putOnlyIfFails = await step(async () => describe(await B.put('a/1.txt', 'other', { onlyIf: { etagMatches: 'nope' } })));
  r.putOnlyIfHolds = await step(async () => describe(await B.put('a/2.txt', 'two', { onlyIf: { etagDoesNotMatch: 'nope' } })));
  r.afterFailedPut = await (await B.get('a/1.txt')).text();

  r.putArrayBuffer = await step(async () => describe(await B.put('b/ab', new TextEncoder().encode('array buffer').buffer)));
  r.putView = await step(async () => describe(await B.put('b/view', new Uint8Array([1, 2, 3, 4]).subarray(1))));
  r.putBlob = await step(async () => describe(await B.put('b/blob', new Blob(['a blob']))));
  r.putStream = await step(async () => describe(await B.put('b/stream', new Response('a stream body').body)));
  r.putNull = await step(async () => describe(await B.put('b/null', null)));
  r.getNull = await step(async () => (await B.get('b/null')).text());
  r.getView = await step(async () => [...new Uint8Array(await (await B.get('b/view')).arrayBuffer())]);
  r.md5Good = await step(async () => describe(await B.put('c/md5', 'digest me', { md5: await md5Hex('digest me') })));
  r.md5Bad = await step(async () => describe(await B.put('c/md5bad', 'digest me', { md5: await md5Hex('other') })));
  r.sha256Good = await step(async () => describe(await B.put('c/sha', 'digest me', { sha256: await sha256('digest me') })));
  r.sha256Bad = await step(async () => describe(await B.put('c/shabad', 'digest me', { sha256: await sha256('no') })));
  r.twoHashes = await step(async () => describe(await B.put('c/two', 'x', { md5: await md5Hex('x'), sha256: await sha256('x') })));
  r.keyTooLong = await step(async () => describe(await B.put('k'.repeat(1025), 'x')));
  r.metadataTooLarge = await step(async () => describe(await B.put('c/meta', 'x', { customMetadata: { big: 'm'.repeat(9000) } })));
  r.httpHeaders = await step(async () => describe(await B.put('c/headers', 'x', { httpMetadata: new Headers({ 'content-type': 'application/json', 'cache-control': 'no-store' }) })));
  r.json = await step(async () => { await B.put('c/json', '{"a":[1,2]}'); return (await B.get('c/json')).json(); });
  r.blob = await step(async () => { const b = await (await B.get('a/1.txt')).blob(); return [b.type, b.size]; });
  r.writeHttpMetadata = await step(async () => {
    const h = new Headers();
    (await B.head('a/1.txt')).writeHttpMetadata(h);
    return [...h];
  });

  r.listAll = await step(async () => listed(await B.list()));
  r.listPrefix = await step(async () => listed(await B.list({ prefix: 'b/' })));
  r.listDelimiter = await step(async () => listed(await B.list({ delimiter: '/' })));
  r.listPrefixDelimiter = await step(async () => listed(await B.list({ prefix: 'a/', delimiter: '/' })));
  r.listLimit = await step(async () => {
    const first = await B.list({ limit: 2 });
    const second = await B.list({ limit: 2, cursor: first.cursor });
    return [listed(first), listed(second)];
  });
  r.listDelimiterLimit = await step(async () => {
    const first = await B.list({ limit: 2, delimiter: '/' });
    const second = await B.list({ limit: 2, delimiter: '/', cursor: first.cursor });
    return [listed(first), listed(second)];
  });
  r.listStartAfter = await step(async () => listed(await B.list({ startAfter: 'b/blob' })));
  r.listInclude = await step(async () => listed(await B.list({ prefix: 'a/', include: ['httpMetadata', 'customMetadata'] })));
  r.listLimitZero = await step(async () => listed(await B.list({ limit: 0 })));
  r.listLimitHigh = await step(async () => listed(await B.list({ limit: 1001 })));

  r.deleteOne = await step(async () => { await B.delete('b/null'); return B.head('b/null'); });
  r.deleteMany = await step(async () => { await B.delete(['b/ab', 'b/view', 'nothing']); return listed(await B.list({ prefix: 'b/' })); });

  const five = 'p'.repeat(5 * 1024 * 1024);
  r.multipart = await step(async () => {
    const up = await B.createMultipartUpload('m/big', { httpMetadata: { contentType: 'text/x-parts' }, customMetadata: { by: 'parts' } });
    const p2 = await up.uploadPart(2, 'the end');
    const p1 = await up.uploadPart(1, five);
    const resumed = B.resumeMultipartUpload('m/big', up.uploadId);
    const done = await resumed.complete([p1, p2]);
    const o = await B.get('m/big', { range: { suffix: 9 } });
    return { key: up.key, parts: [p1.partNumber, p2.partNumber], done: describe(done), tail: await o.text(), size: (await B.head('m/big')).size };
  });
  r.multipartTooSmall = await step(async () => {
    const up = await B.createMultipartUpload('m/small');
    const p1 = await up.uploadPart(1, 'tiny');
    const p2 = await up.uploadPart(2, 'tiny');
    return describe(await up.complete([p1, p2]));
  });
  r.multipartUneven = await step(async () => {
    const up = await B.createMultipartUpload('m/uneven');
    const p1 = await up.uploadPart(1, five);
    const p2 = await up.uploadPart(2, five + 'x');
    const p3 = await up.uploadPart(3, 'end');
    return describe(await up.complete([p1, p2, p3]));
  });
  r.multipartWrongEtag = await step(async () => {
    const up = await B.createMultipartUpload('m/wrong');
    const p1 = await up.uploadPart(1, 'tiny');
    return describe(await up.complete([{ partNumber: 1, etag: 'not-it' }]));
  });
  r.multipartOnePart = await step(async () => {
    const up = await B.createMultipartUpload('m/one');
    const p1 = await up.uploadPart(1, 'just one small part');
    return describe(await up.complete([p1]));
  });
  r.multipartAbort = await step(async () => {
    const up = await B.createMultipartUpload('m/aborted');
    await up.uploadPart(1, 'x');
    await up.abort();
    return await step(() => up.uploadPart(2, 'y'));
  });
  r.multipartUnknown = await step(() => B.resumeMultipartUpload('m/x', 'abcdef').uploadPart(1, 'x'));
  r.finalList = await step(async () => listed(await B.list()));
  return r;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const k = url.searchParams.get('k');
    switch (url.pathname) {
      case '/':
        return new Response('ok');
      case '/probe':
        return Response.json(await probe(env.B));
      case '/put': {
        const o = await env.B.put(k, request.body);
        return Response.json({ size: o.size, etag: o.etag });
      }
      case '/get': {
        const o = await env.B.get(k);
        if (o === null) return new Response('none', { status: 404 });
        return new Response(o.body, { headers: { etag: o.httpEtag } });
      }
      case '/put-text':
        await env.B.put(k, url.searchParams.get('v'));
        return new Response('ok');
      case '/generate': {
        // `mib` MiB made here, a block at a time: byte i is i % 251.
        const size = Number(url.searchParams.get('mib')) << 20;
        const block = new Uint8Array(251 * 4096);
        for (let i = 0; i < block.length; i++) block[i] = i % 251;
        let sent = 0;
        const stream = new ReadableStream({
          pull(controller) {
            const n = Math.min(block.length, size - sent);
            if (n === 0) { controller.close(); return; }
            // The same block each time: put() copies a chunk before it pulls the next.
            controller.enqueue(block.subarray(0, n));
            sent += n;
          },
        }, { highWaterMark: 0 });
        const o = await env.B.put(k, stream);
        return Response.json({ size: o.size, etag: o.etag });
      }
      case '/get-text': {
        const o = await env.B.get(k);
        return new Response(o === null ? 'none' : await o.text());
      }
    }
    return new Response('?', { status: 404 });
  },
};
