// CompressionStream / DecompressionStream (Compression Standard). Vectors:
// WPT compression/resources/decompression-input.js ('expected output' in
// each format); the corruption cases follow WPT's
// decompression-corrupt-input.any.js, compression-bad-chunks.any.js,
// decompression-extra-input.any.js and decompression-split-chunk.any.js.

const FORMATS = ['deflate', 'deflate-raw', 'gzip'];
const EXPECTED = 'expected output';
const VECTORS = {
  deflate: [120, 156, 75, 173, 40, 72, 77, 46, 73, 77, 81, 200, 47, 45, 41, 40, 45, 1, 0, 48, 173, 6, 36],
  gzip: [31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 75, 173, 40, 72, 77, 46, 73, 77, 81, 200, 47, 45, 41, 40, 45, 1, 0, 176, 1, 57, 179, 15, 0, 0, 0],
  'deflate-raw': [0x4b, 0xad, 0x28, 0x48, 0x4d, 0x2e, 0x49, 0x4d, 0x51, 0xc8, 0x2f, 0x2d, 0x29, 0x28, 0x2d, 0x01, 0x00],
};

async function readAll(readable) {
  const parts = [];
  let total = 0;
  for await (const chunk of readable) {
    assert(chunk instanceof Uint8Array, 'chunks are Uint8Arrays');
    parts.push(chunk);
    total += chunk.byteLength;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.byteLength; }
  return out;
}

// Writes `chunks` (not awaited one by one, as WPT does) and reads everything.
function run(stream, chunks) {
  const writer = stream.writable.getWriter();
  for (const c of chunks) writer.write(c).catch(() => {});
  writer.close().catch(() => {});
  return readAll(stream.readable);
}

// 'success', 'error' (a TypeError) or 'corrupt' (other output), as WPT's tryDecompress.
async function tryDecompress(input, format) {
  try {
    const out = await run(new DecompressionStream(format), [input]);
    return new TextDecoder().decode(out) === EXPECTED ? 'success' : 'corrupt';
  } catch (e) {
    return e instanceof TypeError ? 'error' : e.name;
  }
}

function corrupt(input, offset, length, value) {
  const out = new Uint8Array(input);
  if (offset < 0) offset += out.length;
  out.fill(value, offset, offset + length);
  return out;
}

export default suite(async () => {
  await test('constructors, formats and brand checks', () => {
    for (const C of [CompressionStream, DecompressionStream]) {
      for (const format of FORMATS) {
        const s = new C(format);
        assert(s.readable instanceof ReadableStream, `${C.name} readable`);
        assert(s.writable instanceof WritableStream, `${C.name} writable`);
        eq(s.readable, s.readable, 'the same readable each time');
        eq(Object.prototype.toString.call(s), `[object ${C.name}]`);
      }
      throws(() => new C(), TypeError, `${C.name}()`);
      throws(() => new C('a'), TypeError, `${C.name}('a')`);
      throws(() => new C('GZIP'), TypeError, `${C.name}('GZIP'): formats are case-sensitive`);
      throws(() => new C('brotli'), TypeError, `${C.name}('brotli') is not supported`);
      throws(() => new C({ toString() { throw new SyntaxError('boom'); } }), SyntaxError, 'the conversion error propagates');
      eq(new C({ toString() { return 'gzip'; } }).readable.locked, false, 'format converted with toString');
      throws(() => C('gzip'), TypeError, `${C.name} without new`);
      const readable = Object.getOwnPropertyDescriptor(C.prototype, 'readable');
      assert(readable.enumerable && typeof readable.get === 'function' && readable.set === undefined, 'readable is an enumerable getter');
      throws(() => readable.get.call({}), TypeError, 'readable on a plain object');
      throws(() => Object.getOwnPropertyDescriptor(C.prototype, 'writable').get.call(new TransformStream()), TypeError, 'writable on a TransformStream');
    }
    throws(() => Object.getOwnPropertyDescriptor(CompressionStream.prototype, 'readable').get.call(new DecompressionStream('gzip')), TypeError, 'one class is no other');
    eq(Object.getOwnPropertyDescriptor(globalThis, 'CompressionStream').enumerable, false, 'global not enumerable');
  });

  await test('the WPT vectors decompress to "expected output"', async () => {
    for (const format of FORMATS) {
      const out = await run(new DecompressionStream(format), [new Uint8Array(VECTORS[format])]);
      eq(new TextDecoder().decode(out), EXPECTED, format);
    }
  });

  await test('empty compressed streams decompress to nothing (WPT decompression-empty-input)', async () => {
    const empty = {
      gzip: [31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      deflate: [120, 156, 3, 0, 0, 0, 0, 1],
      'deflate-raw': [1, 0, 0, 255, 255],
    };
    for (const format of FORMATS) {
      const ds = new DecompressionStream(format);
      const reader = ds.readable.getReader();
      const writer = ds.writable.getWriter();
      const written = writer.write(new Uint8Array(empty[format]));
      writer.close();
      const { value, done } = await reader.read();
      eq(done, true, format);
      eq(value, undefined, format);
      await written;
    }
  });

  await test('round trips, with empty chunks and every BufferSource', async () => {
    const text = 'Hello, Isolane! '.repeat(1000);
    const enc = new TextEncoder().encode(text);
    for (const format of FORMATS) {
      const chunks = [new Uint8Array(0), enc.subarray(0, 7), enc.buffer.slice(7, 100), new DataView(enc.buffer, 100, 50),
        new Uint16Array(enc.buffer.slice(150, 160)), new Uint8Array(0), enc.subarray(160)];
      const packed = await run(new CompressionStream(format), chunks);
      assert(packed.byteLength < enc.byteLength / 10, `${format}: compressed ${packed.byteLength} bytes`);
      if (format === 'gzip') eq([...packed.subarray(0, 3)].join(), '31,139,8', 'gzip magic and method');
      if (format === 'deflate') eq(packed[0], 0x78, 'zlib header');
      const back = await run(new DecompressionStream(format), [packed.buffer, new Uint8Array(0)]);
      eq(new TextDecoder().decode(back), text, format);
      // Empty input compresses to a valid empty stream.
      const empty = await run(new CompressionStream(format), []);
      assert(empty.byteLength > 0, `${format}: an empty stream has a header or end block`);
      eq((await run(new DecompressionStream(format), [empty])).byteLength, 0, `${format}: empty round trip`);
    }
  });

  await test('pipeThrough and Response bodies', async () => {
    const data = new Uint8Array(300 * 1024);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
    const gz = await new Response(new Blob([data]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();
    const back = new Uint8Array(await new Response(new Response(gz).body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer());
    eq(back.length, data.length);
    assert(back.every((b, i) => b === data[i]), 'same bytes');
  });

  await test('chunks that are no BufferSource error both sides', async () => {
    for (const C of [CompressionStream, DecompressionStream]) {
      for (const bad of [undefined, null, 3.14, {}, [65], 'text']) {
        const s = new C('gzip');
        const reader = s.readable.getReader();
        const writer = s.writable.getWriter();
        const write = writer.write(bad);
        const read = reader.read();
        await rejects(write, TypeError, `${C.name} write(${fmt(bad)})`);
        await rejects(read, TypeError, `${C.name} read after write(${fmt(bad)})`);
        await rejects(writer.closed, TypeError, 'the writable is errored');
      }
    }
  });

  await test('corrupt, truncated and extra input error the stream with a TypeError', async () => {
    // [format, offset, length, value, result] after WPT decompression-corrupt-input.any.js
    const cases = [
      ['deflate', 0, 1, 0, 'error'], // CMF
      ['deflate', 1, 1, 218, 'success'], ['deflate', 1, 1, 1, 'success'], ['deflate', 1, 1, 94, 'success'],
      ['deflate', 1, 1, 157, 'error'], // FLG with a bad FCHECK
      ['deflate', 18, 1, 4, 'success'], ['deflate', 18, 1, 5, 'error'],
      ['deflate', -4, 4, 255, 'error'], // ADLER32
      ['gzip', 0, 2, 255, 'error'], // ID
      ['gzip', 2, 1, 0, 'error'], // CM
      ['gzip', 3, 1, 1, 'success'], // FTEXT
      ['gzip', 3, 1, 2, 'error'], // FHCRC, and the next two bytes are no header CRC
      ['gzip', 4, 4, 255, 'success'], ['gzip', 8, 1, 255, 'success'], ['gzip', 9, 1, 128, 'success'],
      ['gzip', 26, 1, 3, 'error'], ['gzip', 26, 1, 4, 'success'],
      ['gzip', -8, 4, 0, 'error'], // CRC
      ['gzip', -4, 4, 1, 'error'], // ISIZE
    ];
    for (const [format, offset, length, value, want] of cases) {
      eq(await tryDecompress(corrupt(VECTORS[format], offset, length, value), format), want, `${format} [${offset}]=${value}`);
    }
    for (const format of FORMATS) {
      const input = new Uint8Array(VECTORS[format]);
      eq(await tryDecompress(input.subarray(0, -1), format), 'error', `${format} truncated`);
      eq(await tryDecompress(new Uint8Array([...input, 0]), format), 'error', `${format} trailing junk`);
      eq(await tryDecompress(new Uint8Array([...input, ...input]), format), 'error', `${format} twice`);
      eq(await tryDecompress(new Uint8Array(0), format), 'error', `${format} empty input`);
    }
    // Compressed with a preset dictionary (WPT: Python zlib with zdict).
    eq(await tryDecompress(new Uint8Array([0x78, 0xbb, 0x74, 0xee, 0x09, 0x59, 0x2b, 0xc1, 0x2e, 0x0c, 0x00, 0x74, 0xee, 0x09, 0x59]), 'deflate'), 'error', 'dictionary');
  });

  await test('output before trailing data is still delivered (WPT decompression-extra-input)', async () => {
    for (const format of FORMATS) {
      const ds = new DecompressionStream(format);
      const reader = ds.readable.getReader();
      const writer = ds.writable.getWriter();
      writer.write(new Uint8Array([...VECTORS[format], 0])).catch(() => {});
      const { value } = await reader.read();
      eq(new TextDecoder().decode(value), EXPECTED, format);
      await rejects(reader.read(), TypeError, `${format}: then the error`);
      await rejects(writer.closed, TypeError, `${format}: the writable is errored too`);
    }
  });

  await test('input split into chunks of 1 to 15 bytes (WPT decompression-split-chunk)', async () => {
    for (const format of FORMATS) {
      const input = new Uint8Array(VECTORS[format]);
      for (let size = 1; size < 16; size++) {
        const chunks = [];
        for (let at = 0; at < input.length; at += size) chunks.push(input.slice(at, at + size));
        eq(new TextDecoder().decode(await run(new DecompressionStream(format), chunks)), EXPECTED, `${format} by ${size}`);
      }
    }
  });

  await test('a bomb inflates in bounded slices, only as fast as it is read', async () => {
    // 16 MiB of zeros, compressed here.
    const zeros = new Uint8Array(1 << 20);
    const cs = new CompressionStream('gzip');
    const w = cs.writable.getWriter();
    const packedP = readAll(cs.readable);
    for (let i = 0; i < 16; i++) await w.write(zeros);
    await w.close();
    const bomb = await packedP;
    assert(bomb.byteLength < 64 * 1024, `bomb is ${bomb.byteLength} bytes`);
    const ds = new DecompressionStream('gzip');
    const writer = ds.writable.getWriter();
    const written = writer.write(bomb);
    for (let i = 0; i < 10; i++) await tick();
    const reader = ds.readable.getReader();
    let total = 0, reads = 0, biggest = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      reads++;
      total += value.byteLength;
      biggest = Math.max(biggest, value.byteLength);
      if (reads === 1) eq(value.byteLength, 64 * 1024, 'the first slice waited for the reader');
      if (reads === 8) {
        // Nothing past the slices read was made: the write is still pending.
        let settled = false;
        written.then(() => { settled = true; }, () => { settled = true; });
        await tick();
        eq(settled, false, 'the write waits for the reader');
        writer.close().catch(() => {});
      }
    }
    eq(total, 16 << 20);
    assert(biggest <= 64 * 1024, `a slice of ${biggest} bytes`);
    await written;
  });

  await test('canceling the readable errors the writable, aborting the writable errors the readable', async () => {
    const ds = new DecompressionStream('deflate');
    const writer = ds.writable.getWriter();
    await ds.readable.cancel(new RangeError('enough'));
    await rejects(writer.write(new Uint8Array(VECTORS.deflate)), RangeError, 'write after cancel');
    const cs = new CompressionStream('gzip');
    const reader = cs.readable.getReader();
    await cs.writable.abort(new SyntaxError('stop'));
    await rejects(reader.read(), SyntaxError, 'read after abort');
    // A bomb canceled half way stops inflating.
    const bomb = await run(new CompressionStream('deflate'), [new Uint8Array(4 << 20)]);
    const ds2 = new DecompressionStream('deflate');
    const w2 = ds2.writable.getWriter();
    const pending = w2.write(bomb);
    const r2 = ds2.readable.getReader();
    await r2.read();
    await r2.cancel('done');
    await rejects(pending, TypeError, 'the pending write fails');
  });
});
