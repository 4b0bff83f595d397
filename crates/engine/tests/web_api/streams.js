// ReadableStream (default and byte), WritableStream, TransformStream, queuing strategies.

async function readAll(stream) {
  const reader = stream.getReader();
  const out = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

export default suite(async () => {
  await test('pull-based ReadableStream with a default reader', async () => {
    let n = 0;
    const rs = new ReadableStream({
      pull(c) {
        if (n < 3) c.enqueue(n++);
        else c.close();
      },
    });
    eq(rs.locked, false);
    const reader = rs.getReader();
    eq(rs.locked, true);
    deepEq(await reader.read(), { value: 0, done: false });
    deepEq(await reader.read(), { value: 1, done: false });
    deepEq(await reader.read(), { value: 2, done: false });
    deepEq(await reader.read(), { done: true }, 'end (value undefined)');
    const end = await reader.read();
    eq(end.done, true, 'stays done');
    eq(end.value, undefined);
    await reader.closed;
    reader.releaseLock();
    eq(rs.locked, false);
  });
  await test('start, desiredSize and highWaterMark', async () => {
    let ctrl;
    const rs = new ReadableStream({ start(c) { ctrl = c; } }, { highWaterMark: 2 });
    eq(ctrl.desiredSize, 2);
    ctrl.enqueue('a');
    eq(ctrl.desiredSize, 1);
    ctrl.enqueue('b');
    ctrl.enqueue('c');
    eq(ctrl.desiredSize, -1);
    ctrl.close();
    eq(ctrl.desiredSize, -1, 'close requested, chunks still queued');
    deepEq(await readAll(rs), ['a', 'b', 'c']);
    const sized = new ReadableStream({ start(c) { ctrl = c; } }, { highWaterMark: 10, size: (chunk) => chunk.length });
    ctrl.enqueue('abcd');
    eq(ctrl.desiredSize, 6, 'custom size');
    void sized;
    const counted = new ReadableStream({ start(c) { ctrl = c; } }, new CountQueuingStrategy({ highWaterMark: 3 }));
    eq(ctrl.desiredSize, 3);
    void counted;
    const bytesStrategy = new ByteLengthQueuingStrategy({ highWaterMark: 16 });
    eq(bytesStrategy.highWaterMark, 16);
    eq(bytesStrategy.size(new Uint8Array(5)), 5);
    eq(new CountQueuingStrategy({ highWaterMark: 1 }).size(), 1);
  });
  await test('async start delays pull', async () => {
    const log = [];
    const rs = new ReadableStream({
      async start() { await tick(); log.push('start'); },
      pull(c) { log.push('pull'); c.close(); },
    });
    await readAll(rs);
    deepEq(log, ['start', 'pull']);
  });
  await test('constructor argument errors', () => {
    throws(() => new ReadableStream({ type: 'nope' }), TypeError, 'bad type');
    throws(() => new ReadableStream({ pull: 5 }), TypeError, 'pull not a function');
    throws(() => new ReadableStream({ start: 'x' }), TypeError, 'start not a function');
    throws(() => new ReadableStream({}, { highWaterMark: -1 }), RangeError, 'negative highWaterMark');
    throws(() => new ReadableStream({}, { highWaterMark: NaN }), RangeError, 'NaN highWaterMark');
    throws(() => new ReadableStream({}, { size: 5 }), TypeError, 'size not a function');
    throws(() => new ReadableStream({ type: 'bytes' }, { size: () => 1 }), RangeError, 'byte stream with size');
    throws(() => new ReadableStream({ start() { throw new SyntaxError('from start'); } }), SyntaxError, 'start throwing');
    throws(() => new ReadableStreamDefaultController(), TypeError, 'controller constructor');
    throws(() => new CountQueuingStrategy(), TypeError, 'strategy without init');
  });
  await test('errors: controller.error, pull rejecting, enqueue after close', async () => {
    const boom = new Error('boom');
    const rs = new ReadableStream({ start(c) { c.error(boom); } });
    const r = rs.getReader();
    eq(await r.read().catch((e) => e), boom, 'read rejects with the error');
    eq(await r.closed.catch((e) => e), boom, 'closed rejects');
    const rs2 = new ReadableStream({ pull() { throw new RangeError('pull failed'); } });
    await rejects(rs2.getReader().read(), RangeError, 'pull throwing errors the stream');
    let ctrl;
    const rs3 = new ReadableStream({ start(c) { ctrl = c; } });
    ctrl.close();
    throws(() => ctrl.enqueue('x'), TypeError, 'enqueue after close');
    throws(() => ctrl.close(), TypeError, 'close twice');
    void rs3;
    let thrownByEnqueue = null;
    const rs4 = new ReadableStream({ start(c) { try { c.enqueue(1); } catch (e) { thrownByEnqueue = e; } } }, { size() { throw new URIError('size'); } });
    assert(thrownByEnqueue instanceof URIError, 'enqueue rethrows the size error');
    await rejects(rs4.getReader().read(), URIError, 'size throwing errors the stream');
  });
  await test('locking', async () => {
    const rs = new ReadableStream();
    const reader = rs.getReader();
    throws(() => rs.getReader(), TypeError, 'second reader');
    await rejects(rs.cancel(), TypeError, 'cancel while locked');
    throws(() => new ReadableStreamDefaultReader(rs), TypeError, 'reader constructor on a locked stream');
    const pending = reader.read();
    reader.releaseLock();
    await rejects(pending, TypeError, 'pending read rejects on releaseLock');
    await rejects(reader.read(), TypeError, 'read after releaseLock');
    await rejects(reader.closed, TypeError, 'closed rejects after releaseLock');
    rs.getReader();
    throws(() => new ReadableStreamDefaultReader({}), TypeError, 'reader on a non-stream');
    throws(() => rs.getReader({ mode: 'nope' }), TypeError, 'bad mode');
  });
  await test('cancel', async () => {
    let reason;
    const rs = new ReadableStream({
      start(c) { c.enqueue('x'); },
      cancel(r) { reason = r; return 'ignored'; },
    });
    eq(await rs.cancel('why'), undefined, 'resolves with undefined');
    eq(reason, 'why');
    const r = rs.getReader();
    deepEq(await r.read(), { done: true }, 'cancelled stream reads as done');
    const rs2 = new ReadableStream({ cancel() { throw new EvalError('cancel failed'); } });
    await rejects(rs2.cancel(), EvalError, 'cancel errors propagate');
    const rs3 = new ReadableStream({ pull(c) { c.enqueue(1); } });
    const reader3 = rs3.getReader();
    await reader3.cancel('stop');
    deepEq(await reader3.read(), { done: true }, 'reader.cancel');
  });
  await test('tee', async () => {
    const rs = ReadableStream.from(['a', 'b', 'c']);
    const [x, y] = rs.tee();
    eq(rs.locked, true, 'source locked');
    const [ax, ay] = await Promise.all([readAll(x), readAll(y)]);
    deepEq(ax, ['a', 'b', 'c']);
    deepEq(ay, ['a', 'b', 'c']);
    let cancelReason;
    const src = new ReadableStream({ pull(c) { c.enqueue(1); }, cancel(r) { cancelReason = r; } });
    const [p, q] = src.tee();
    const pc = p.cancel('one'); // settles only once both branches are cancelled
    await tick();
    eq(cancelReason, undefined, 'source cancelled only when both are');
    await q.cancel('two');
    await pc;
    deepEq(cancelReason, ['one', 'two'], 'composite reason');
    const failing = new ReadableStream({ start(c) { c.error(new TypeError('tee error')); } });
    const [f1, f2] = failing.tee();
    await rejects(f1.getReader().read(), TypeError, 'branch 1 errors');
    await rejects(f2.getReader().read(), TypeError, 'branch 2 errors');
  });
  await test('async iteration', async () => {
    const out = [];
    for await (const v of ReadableStream.from([1, 2, 3])) out.push(v);
    deepEq(out, [1, 2, 3]);
    let cancelled = false;
    const rs = new ReadableStream({ pull(c) { c.enqueue('x'); }, cancel() { cancelled = true; } });
    for await (const v of rs) { void v; break; }
    eq(cancelled, true, 'break cancels');
    eq(rs.locked, false, 'and releases the lock');
    let cancelled2 = false;
    const rs2 = new ReadableStream({ pull(c) { c.enqueue('x'); }, cancel() { cancelled2 = true; } });
    for await (const v of rs2.values({ preventCancel: true })) { void v; break; }
    eq(cancelled2, false, 'preventCancel');
    eq(rs2.locked, false);
    const errored = new ReadableStream({ start(c) { c.error(new RangeError('iter')); } });
    await rejects((async () => { for await (const v of errored) void v; })(), RangeError, 'iteration rethrows');
    const it = ReadableStream.from([1])[Symbol.asyncIterator]();
    eq(typeof it.next, 'function');
    eq(Object.getPrototypeOf(Object.getPrototypeOf(it)) === Object.getPrototypeOf(Object.getPrototypeOf((async function* () {})())), false, 'not a generator');
  });
  await test('ReadableStream.from', async () => {
    async function* gen() { yield 'a'; await tick(); yield 'b'; }
    deepEq(await readAll(ReadableStream.from(gen())), ['a', 'b'], 'async generator');
    deepEq(await readAll(ReadableStream.from(new Set([1, 2]))), [1, 2], 'sync iterable');
    deepEq(await readAll(ReadableStream.from([Promise.resolve(7)])), [7], 'sync iterable of promises is awaited');
    deepEq(await readAll(ReadableStream.from('hi')), ['h', 'i'], 'string');
    deepEq(await readAll(ReadableStream.from(ReadableStream.from([5]))), [5], 'a ReadableStream');
    throws(() => ReadableStream.from(5), TypeError, 'number');
    throws(() => ReadableStream.from({}), TypeError, 'plain object');
    throws(() => ReadableStream.from(null), TypeError, 'null');
    let returned = false;
    const iterable = { [Symbol.asyncIterator]() { return { next: async () => ({ value: 1, done: false }), return: async () => { returned = true; return {}; } }; } };
    await ReadableStream.from(iterable).cancel('x');
    eq(returned, true, 'cancel calls return()');
  });
  await test('WritableStream', async () => {
    const written = [];
    let closed = false;
    const ws = new WritableStream({
      write(chunk) { written.push(chunk); },
      close() { closed = true; },
    });
    const w = ws.getWriter();
    eq(ws.locked, true);
    eq(w.desiredSize, 1);
    await w.ready;
    await w.write('a');
    await w.write('b');
    await w.close();
    deepEq(written, ['a', 'b']);
    eq(closed, true);
    await w.closed;
    await rejects(w.write('c'), TypeError, 'write after close');
    throws(() => ws.getWriter(), TypeError, 'second writer');
    w.releaseLock();
    eq(ws.locked, false);
    await rejects(w.write('d'), TypeError, 'write after release');
  });
  await test('WritableStream backpressure and errors', async () => {
    let release;
    const ws = new WritableStream({
      write() { return new Promise((r) => { release = r; }); },
    }, { highWaterMark: 1 });
    const w = ws.getWriter();
    const p1 = w.write(1);
    eq(w.desiredSize, 0, 'one queued');
    const p2 = w.write(2);
    eq(w.desiredSize, -1);
    await tick();
    release();
    await p1;
    await tick();
    release();
    await p2;
    eq(w.desiredSize, 1);
    const failing = new WritableStream({ write() { throw new RangeError('write failed'); } });
    const fw = failing.getWriter();
    await rejects(fw.write('x'), RangeError, 'write rejects');
    await rejects(fw.closed, RangeError, 'closed rejects');
    await rejects(fw.write('y'), RangeError, 'later writes reject with the stored error');
    let abortReason;
    const ab = new WritableStream({ abort(r) { abortReason = r; } });
    await ab.abort('stop');
    eq(abortReason, 'stop');
    await rejects(ab.getWriter().write('z'), undefined, 'errored after abort');
    throws(() => new WritableStream({ type: 'bytes' }), RangeError, 'type must be undefined');
    let ctrl;
    const ws2 = new WritableStream({ start(c) { ctrl = c; } });
    assert(ctrl.signal instanceof AbortSignal, 'controller.signal');
    const w2 = ws2.getWriter();
    w2.abort('bye');
    eq(ctrl.signal.aborted, true, 'abort signals the controller');
    eq(ctrl.signal.reason, 'bye');
  });
  await test('TransformStream passthrough and transform', async () => {
    const { readable, writable } = new TransformStream();
    const w = writable.getWriter();
    w.write('a');
    w.write('b');
    w.close();
    deepEq(await readAll(readable), ['a', 'b'], 'identity');
    const upper = new TransformStream({
      transform(chunk, c) { c.enqueue(chunk.toUpperCase()); c.enqueue('|'); },
      flush(c) { c.enqueue('END'); },
    });
    const out = readAll(ReadableStream.from(['x', 'y']).pipeThrough(upper));
    deepEq(await out, ['X', '|', 'Y', '|', 'END']);
    const failing = new TransformStream({ transform() { throw new SyntaxError('bad chunk'); } });
    const fw = failing.writable.getWriter();
    const pendingRead = failing.readable.getReader().read(); // the readable must pull before a write runs
    await rejects(fw.write('x'), SyntaxError, 'transform error rejects the write');
    await rejects(pendingRead, SyntaxError, 'and errors the readable');
    const term = new TransformStream({ start(c) { c.enqueue('only'); c.terminate(); } });
    deepEq(await readAll(term.readable), ['only'], 'terminate closes the readable');
    await rejects(term.writable.getWriter().write('x'), TypeError, 'and errors the writable');
    throws(() => new TransformStream({ readableType: 'bytes' }), RangeError, 'readableType');
    throws(() => new TransformStream({ writableType: 'bytes' }), RangeError, 'writableType');
  });
  await test('pipeTo', async () => {
    const got = [];
    const ws = new WritableStream({ write(c) { got.push(c); } });
    await ReadableStream.from([1, 2, 3]).pipeTo(ws);
    deepEq(got, [1, 2, 3]);
    await rejects(ReadableStream.from([1]).pipeTo(ws), TypeError, 'destination closed');
    let aborted;
    const ws2 = new WritableStream({ abort(r) { aborted = r; } });
    const erroring = new ReadableStream({ start(c) { c.error('src error'); } });
    eq(await erroring.pipeTo(ws2).catch((e) => e), 'src error', 'source error propagates');
    eq(aborted, 'src error', 'destination aborted');
    let cancelled;
    const src = new ReadableStream({ pull(c) { c.enqueue(1); }, cancel(r) { cancelled = r; } });
    const bad = new WritableStream({ write() { throw new Error('sink broke'); } });
    const e = await src.pipeTo(bad).catch((x) => x);
    eq(e && e.message, 'sink broke');
    eq(cancelled && cancelled.message, 'sink broke', 'source cancelled with the sink error');
    const kept = [];
    const keepOpen = new WritableStream({ write(c) { kept.push(c); } });
    await ReadableStream.from(['k']).pipeTo(keepOpen, { preventClose: true });
    const w = keepOpen.getWriter();
    await w.write('still open');
    deepEq(kept, ['k', 'still open'], 'preventClose');
    await rejects(ReadableStream.from([]).pipeTo({}), TypeError, 'destination not a WritableStream');
    const locked = ReadableStream.from([1]);
    locked.getReader();
    await rejects(locked.pipeTo(new WritableStream()), TypeError, 'locked source');
  });
  await test('pipeTo with an AbortSignal', async () => {
    const ac = new AbortController();
    let cancelled = false;
    const src = new ReadableStream({ pull(c) { return tick().then(() => c.enqueue('x')); }, cancel() { cancelled = true; } });
    const sink = [];
    const p = src.pipeTo(new WritableStream({ write(c) { sink.push(c); } }), { signal: ac.signal });
    await tick();
    ac.abort();
    await rejects(p, 'AbortError', 'rejects with the abort reason');
    eq(cancelled, true, 'source cancelled');
    const already = AbortSignal.abort('early');
    eq(await ReadableStream.from([1]).pipeTo(new WritableStream(), { signal: already }).catch((e) => e), 'early');
    await rejects(ReadableStream.from([1]).pipeTo(new WritableStream(), { signal: 'nope' }), TypeError, 'bad signal');
  });
  await test('pipeThrough', async () => {
    const ts = new TransformStream({ transform(c, ctl) { ctl.enqueue(c * 2); } });
    const out = ReadableStream.from([1, 2]).pipeThrough(ts);
    eq(out, ts.readable, 'returns the readable side');
    deepEq(await readAll(out), [2, 4]);
    throws(() => ReadableStream.from([1]).pipeThrough({}), TypeError, 'not a pair');
    const locked = new TransformStream();
    locked.writable.getWriter();
    throws(() => ReadableStream.from([1]).pipeThrough(locked), TypeError, 'locked writable');
  });
  await test('byte streams: default reader and BYOB reader', async () => {
    let i = 0;
    const rs = new ReadableStream({
      type: 'bytes',
      pull(c) {
        if (i++ < 2) c.enqueue(new Uint8Array([i, i, i]));
        else c.close();
      },
    });
    const chunks = await readAll(rs);
    eq(chunks.length, 2);
    assert(chunks[0] instanceof Uint8Array, 'Uint8Array chunks');
    eq(hex(chunks[1]), '020202');
    let n = 0;
    const byob = new ReadableStream({
      type: 'bytes',
      pull(c) {
        const req = c.byobRequest;
        if (n >= 6) { c.close(); if (req) req.respond(0); return; }
        const v = req.view;
        v[0] = n++;
        v[1] = n++;
        req.respond(2);
      },
    });
    const reader = byob.getReader({ mode: 'byob' });
    assert(reader instanceof ReadableStreamBYOBReader, 'BYOB reader');
    let { value, done } = await reader.read(new Uint8Array(4));
    eq(done, false);
    eq(hex(value), '0001');
    ({ value } = await reader.read(new Uint8Array(4), { min: 4 }));
    eq(hex(value), '02030405', 'min fills across pulls');
    ({ value, done } = await reader.read(new Uint8Array(4)));
    eq(done, true);
    eq(value.byteLength, 0);
    throws(() => new ReadableStream().getReader({ mode: 'byob' }), TypeError, 'BYOB reader on a default stream');
    await rejects(reader.read(new Uint8Array(0)), TypeError, 'zero-length view');
    await rejects(reader.read('x'), TypeError, 'not a view');
    await rejects(reader.read(new Uint8Array(2), { min: 3 }), RangeError, 'min larger than the view');
  });
  await test('byte stream: enqueue then BYOB reads split a chunk', async () => {
    const rs = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(new Uint8Array([1, 2, 3, 4, 5])); c.close(); } });
    const r = rs.getReader({ mode: 'byob' });
    const a = await r.read(new Uint8Array(2));
    eq(hex(a.value), '0102');
    const b = await r.read(new Uint16Array(1));
    eq(b.value.constructor, Uint16Array, 'view type kept');
    eq(b.value.length, 1);
    const c = await r.read(new Uint8Array(8));
    eq(hex(c.value), '05');
    const d = await r.read(new Uint8Array(8));
    eq(d.done, true);
    let ctrl;
    new ReadableStream({ type: 'bytes', start(cc) { ctrl = cc; } });
    throws(() => ctrl.enqueue('str'), TypeError, 'byte controller enqueue of a string');
    throws(() => ctrl.enqueue(new Uint8Array(0)), TypeError, 'empty chunk');
  });
  await test('autoAllocateChunkSize gives default readers a byobRequest', async () => {
    const rs = new ReadableStream({
      type: 'bytes',
      autoAllocateChunkSize: 16,
      pull(c) {
        const v = c.byobRequest.view;
        eq(v.byteLength, 16);
        v[0] = 42;
        c.byobRequest.respond(1);
        c.close();
      },
    });
    const chunks = await readAll(rs);
    eq(chunks.length, 1);
    eq(hex(chunks[0]), '2a');
    throws(() => new ReadableStream({ type: 'bytes', autoAllocateChunkSize: 0 }), TypeError, 'zero autoAllocateChunkSize');
  });
  await test('byte stream tee', async () => {
    const rs = new ReadableStream({ type: 'bytes', start(c) { c.enqueue(new Uint8Array([9, 8])); c.close(); } });
    const [a, b] = rs.tee();
    const [ca, cb] = await Promise.all([readAll(a), readAll(b)]);
    eq(hex(ca[0]), '0908');
    eq(hex(cb[0]), '0908');
    assert(ca[0] !== cb[0], 'branches get distinct chunks');
  });
  await test('toStringTag and brand checks', () => {
    eq(Object.prototype.toString.call(new ReadableStream()), '[object ReadableStream]');
    eq(Object.prototype.toString.call(new WritableStream()), '[object WritableStream]');
    eq(Object.prototype.toString.call(new TransformStream()), '[object TransformStream]');
    eq(Object.prototype.toString.call(new ReadableStream().getReader()), '[object ReadableStreamDefaultReader]');
    throws(() => ReadableStream.prototype.getReader.call({}), TypeError, 'getReader on a plain object');
    throws(() => Object.getOwnPropertyDescriptor(ReadableStream.prototype, 'locked').get.call({}), TypeError, 'locked getter');
    throws(() => ReadableStream(), TypeError, 'without new');
  });
  // Cloudflare Workers' byte transform streams; behaviour as seen on workerd 1.20261117.
  const race = (p) => Promise.race([p.then(() => 'resolved', (e) => `rejected ${e.name}`), new Promise((r) => setTimeout(() => r('pending'), 20))]);
  await test('IdentityTransformStream', async () => {
    const its = new IdentityTransformStream();
    assert(its instanceof TransformStream, 'a TransformStream');
    eq(Object.prototype.toString.call(its), '[object IdentityTransformStream]');
    throws(() => IdentityTransformStream(), TypeError, 'without new');
    const reader = its.readable.getReader();
    const writer = its.writable.getWriter();
    const chunk = bytes(1, 2, 3);
    const written = writer.write(chunk);
    eq(chunk.byteLength, 3, 'the written buffer is copied, not detached');
    eq(await race(written), 'pending', 'a write waits for a reader');
    const first = await reader.read();
    eq(hex(first.value), '010203');
    assert(first.value.buffer !== chunk.buffer, 'a copy');
    eq(await race(written), 'resolved', 'the write resolves once read');
    await writer.write(new Uint8Array(0));
    writer.write('hé');
    eq(hex((await reader.read()).value), '68c3a9', 'a string is written as UTF-8');
    writer.write(new Uint16Array([0x0201]).buffer);
    eq(hex((await reader.read()).value), '0102', 'an ArrayBuffer');
    await rejects(writer.write({}), TypeError, 'an object that is not bytes');
    await rejects(reader.read(), TypeError, 'errors the readable too');
    // BYOB reads: the readable is a byte stream.
    const b = new IdentityTransformStream();
    const byob = b.readable.getReader({ mode: 'byob' });
    const w = b.writable.getWriter();
    w.write(bytes(1, 2, 3, 4));
    w.close();
    eq(hex((await byob.read(new Uint8Array(2))).value), '0102');
    eq(hex((await byob.read(new Uint8Array(8))).value), '0304');
    eq((await byob.read(new Uint8Array(8))).done, true);
    // highWaterMark sizes the writable side in bytes.
    const h = new IdentityTransformStream({ highWaterMark: 10 });
    const hw = h.writable.getWriter();
    eq(hw.desiredSize, 10);
    hw.write(bytes(1, 2, 3));
    eq(hw.desiredSize, 7);
    // abort and cancel cross over.
    const a = new IdentityTransformStream();
    a.writable.abort(new RangeError('boom'));
    await rejects(a.readable.getReader().read(), RangeError, 'abort errors the readable');
    const c = new IdentityTransformStream();
    await c.readable.cancel(new RangeError('cxl'));
    await rejects(c.writable.getWriter().write(bytes(1)), RangeError, 'cancel errors the writable');
    // Piped through, as a Response body.
    const p = new IdentityTransformStream();
    const source = new ReadableStream({ start(ctl) { ctl.enqueue(bytes(104, 105)); ctl.close(); } });
    source.pipeTo(p.writable);
    eq(await new Response(p.readable).text(), 'hi');
  });
  await test('FixedLengthStream', async () => {
    const f = new FixedLengthStream(3);
    assert(f instanceof IdentityTransformStream && f instanceof TransformStream, 'an IdentityTransformStream');
    eq(Object.prototype.toString.call(f), '[object FixedLengthStream]');
    throws(() => new FixedLengthStream(), TypeError, 'a length is required');
    throws(() => new FixedLengthStream(-1), TypeError, 'negative');
    throws(() => new FixedLengthStream(NaN), TypeError, 'NaN');
    throws(() => new FixedLengthStream(2 ** 53), TypeError, '2^53');
    new FixedLengthStream(2 ** 53 - 1);
    new FixedLengthStream(5n);
    new FixedLengthStream('5');
    const w = f.writable.getWriter();
    w.write(bytes(1, 2));
    w.write(bytes(3));
    w.close();
    eq(await new Response(f.readable).text(), '\x01\x02\x03', 'exactly the declared length');
    // Too many bytes: the write rejects, the readable errors after what fitted.
    const many = new FixedLengthStream(3);
    const mw = many.writable.getWriter();
    const mr = many.readable.getReader();
    const ok = mw.write(bytes(1, 2));
    const over = mw.write(bytes(3, 4));
    eq(hex((await mr.read()).value), '0102');
    await ok;
    await rejects(over, TypeError, 'a write past the length');
    await rejects(mr.read(), TypeError, 'the readable errors');
    const one = new FixedLengthStream(1.5);
    await rejects(one.writable.getWriter().write(bytes(1, 2)), TypeError, 'a fractional length is truncated');
    // Too few: close rejects and the readable errors.
    const few = new FixedLengthStream(3);
    const fw = few.writable.getWriter();
    const fr = few.readable.getReader();
    fw.write(bytes(1, 2));
    const closed = fw.close();
    eq(hex((await fr.read()).value), '0102');
    await rejects(closed, TypeError, 'close before every byte');
    await rejects(fr.read(), TypeError, 'the readable errors');
    // A hostile length: a huge declared length costs nothing until bytes come.
    const huge = new FixedLengthStream(2 ** 53 - 1);
    const hw = huge.writable.getWriter();
    hw.write(bytes(1));
    const hc = hw.close();
    await rejects(huge.readable.getReader().read().then(() => hc), TypeError, 'closing a huge stream early');
    const zero = new FixedLengthStream(0);
    zero.writable.getWriter().close();
    eq(await new Response(zero.readable).text(), '');
  });
  await test('pipe options are read in Web IDL order and a throwing getter stops the pipe', async () => {
    // WPT streams/piping/throwing-options.any.js
    const order = ['preventAbort', 'preventCancel', 'preventClose', 'signal'];
    for (const failing of order) {
      for (const pipe of ['pipeTo', 'pipeThrough']) {
        const touched = [];
        const options = {};
        for (const name of order) {
          Object.defineProperty(options, name, {
            get() { touched.push(name); if (name === failing) throw new Error(name); return undefined; },
          });
        }
        const rs = new ReadableStream();
        const ts = new TransformStream();
        if (pipe === 'pipeTo') await rejects(rs.pipeTo(ts.writable, options), Error, `${pipe} ${failing}`);
        else throws(() => rs.pipeThrough(ts, options), Error, `${pipe} ${failing}`);
        deepEq(touched, order.slice(0, order.indexOf(failing) + 1), `${pipe} reads up to ${failing}`);
        eq(rs.locked, false, `${pipe} left the source unlocked`);
        eq(ts.writable.locked, false, `${pipe} left the destination unlocked`);
      }
    }
  });
  await test('a pipe never writes synchronously from enqueue()', async () => {
    // WPT streams/piping/general-addition.any.js (whatwg/streams#1243)
    let ctrl;
    const writes = [];
    let inEnqueue = false;
    const done = new ReadableStream({ start(c) { ctrl = c; } }, { highWaterMark: 0 })
      .pipeTo(new WritableStream({ write(chunk) { writes.push([chunk, inEnqueue]); } }));
    await Promise.resolve();
    for (const chunk of ['a', 'b']) {
      inEnqueue = true;
      ctrl.enqueue(chunk);
      inEnqueue = false;
      await tick();
    }
    ctrl.close();
    await done;
    deepEq(writes, [['a', false], ['b', false]], 'every chunk written, none from inside enqueue()');
  });
  await test('tee and pipeTo never call a patched Promise.prototype.then or Promise', async () => {
    // WPT streams/readable-streams/patched-global.any.js
    const realThen = Promise.prototype.then;
    const RealPromise = Promise;
    let calls = 0;
    let ctrl;
    let teed, piped;
    const ws = new WritableStream();
    Promise.prototype.then = function patched(...args) { calls++; return Reflect.apply(realThen, this, args); };
    globalThis.Promise = function Patched() { calls++; throw new Error('patched Promise'); };
    try {
      teed = new ReadableStream({ start(c) { ctrl = c; } }).tee();
      piped = new ReadableStream({ start(c) { c.enqueue('x'); c.close(); } }).pipeTo(ws);
      ctrl.enqueue('y');
      ctrl.close();
      await null;
      await null;
      await null;
    } finally {
      Promise.prototype.then = realThen;
      globalThis.Promise = RealPromise;
    }
    eq(calls, 0, 'no patched then or Promise');
    await piped;
    deepEq(await Promise.all(teed.map((b) => readAll(b))), [['y'], ['y']]);
  });
  await test('tee of a byte stream: a BYOB read({ min }) on one branch reaches the source as it is', async () => {
    // WPT streams/readable-byte-streams/read-min.any.js, tee() with read({ min })
    let ctrl;
    let pulls = 0;
    const rs = new ReadableStream({ type: 'bytes', start(c) { ctrl = c; }, pull() { pulls++; } });
    const [r1, r2] = rs.tee().map((b) => b.getReader({ mode: 'byob' }));
    await Promise.resolve();
    const read1 = r1.read(new Uint8Array(3), { min: 3 });
    const read2 = r2.read(new Uint8Array(1));
    eq(pulls, 1);
    eq(ctrl.byobRequest.view.byteLength, 3, 'the source sees branch 1\'s view');
    ctrl.byobRequest.view[0] = 1;
    ctrl.byobRequest.respond(1);
    eq(hex((await read2).value), '01', 'branch 2 gets a copy at once');
    eq(pulls, 2);
    eq(ctrl.byobRequest.view.byteLength, 2, 'what branch 1 still needs');
    ctrl.byobRequest.view.set([2, 3]);
    ctrl.byobRequest.respond(2);
    eq(hex((await read1).value), '010203', 'branch 1 waits for its minimum');
    eq(hex((await r2.read(new Uint8Array(2))).value), '0203', 'branch 2 from its queue');
    eq(pulls, 2);
    // Closing with a BYOB read pending on a branch ends both.
    const end1 = r1.read(new Uint8Array(4));
    ctrl.close();
    ctrl.byobRequest.respond(0);
    const last = await end1;
    eq(last.done, true);
    eq(last.value.byteLength, 0);
    eq((await r2.read(new Uint8Array(1))).done, true);
  });
  await test('tee of a byte stream: an error of the source reaches both branches after a reader switch', async () => {
    let ctrl;
    const rs = new ReadableStream({ type: 'bytes', start(c) { ctrl = c; } });
    const [b1, b2] = rs.tee();
    const byob = b1.getReader({ mode: 'byob' });
    const plain = b2.getReader();
    const p1 = byob.read(new Uint8Array(2));
    await Promise.resolve();
    ctrl.enqueue(bytes(9));
    eq(hex((await p1).value), '09');
    eq(hex((await plain.read()).value), '09');
    const p2 = plain.read();
    await Promise.resolve();
    ctrl.error(new RangeError('boom'));
    await rejects(p2, RangeError, 'the default branch');
    await rejects(byob.read(new Uint8Array(1)), RangeError, 'the BYOB branch');
  });
});
