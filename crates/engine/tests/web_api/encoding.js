// TextEncoder / TextDecoder / TextEncoderStream / TextDecoderStream (UTF-8;
// the other encodings: encoding_legacy.js).

export default suite(async () => {
  await test('TextEncoder basics', () => {
    const enc = new TextEncoder();
    eq(enc.encoding, 'utf-8');
    const out = enc.encode('h\u00e9\u20ac\u{1F600}');
    assert(out instanceof Uint8Array, 'Uint8Array');
    eq(hex(out), '68c3a9e282acf09f9880');
    eq(enc.encode().length, 0, 'no argument');
    eq(enc.encode(undefined).length, 0, 'undefined');
    eq(hex(enc.encode(null)), '6e756c6c', 'null -> "null"');
    eq(hex(enc.encode(12)), '3132', 'number');
  });
  await test('TextEncoder lone surrogates become U+FFFD', () => {
    eq(hex(new TextEncoder().encode('a\ud800b')), '61efbfbd62');
    eq(hex(new TextEncoder().encode('\udc00')), 'efbfbd');
  });
  await test('TextEncoder.encodeInto', () => {
    const enc = new TextEncoder();
    const dest = new Uint8Array(5);
    const r = enc.encodeInto('h\u00e9\u20ac', dest);
    deepEq({ read: r.read, written: r.written }, { read: 2, written: 3 }, 'partial: the euro sign does not fit');
    eq(hex(dest), '68c3a90000');
    const r2 = enc.encodeInto('\u{1F600}x', new Uint8Array(8));
    deepEq([r2.read, r2.written], [3, 5], 'surrogate pair counts 2 code units');
    throws(() => enc.encodeInto('x', new Uint16Array(2)), TypeError, 'not a Uint8Array');
    throws(() => enc.encodeInto('x'), TypeError, 'missing destination');
  });
  await test('TextDecoder labels', () => {
    for (const label of ['utf-8', 'UTF-8', 'utf8', ' unicode-1-1-utf-8 ', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8', '\tUtF8\n']) {
      eq(new TextDecoder(label).encoding, 'utf-8', label);
    }
    eq(new TextDecoder().encoding, 'utf-8', 'default');
    throws(() => new TextDecoder('nope'), RangeError, 'unknown label');
    throws(() => new TextDecoder('utf-7'), RangeError, 'utf-7');
  });
  await test('TextDecoder decode', () => {
    const dec = new TextDecoder();
    eq(dec.decode(bytes(0x68, 0xc3, 0xa9)), 'h\u00e9');
    eq(dec.decode(new Uint8Array([0x61, 0x62]).buffer), 'ab', 'ArrayBuffer');
    eq(dec.decode(new DataView(new Uint8Array([0x61, 0x62, 0x63]).buffer, 1)), 'bc', 'DataView with offset');
    eq(dec.decode(new Uint16Array([0x6261])), 'ab', 'other typed arrays are bytes');
    eq(dec.decode(), '', 'no argument');
    eq(dec.decode(undefined), '', 'undefined');
    throws(() => dec.decode('abc'), TypeError, 'a string is not a BufferSource');
    throws(() => dec.decode(null), TypeError, 'null is not a BufferSource');
    eq(dec.fatal, false);
    eq(dec.ignoreBOM, false);
  });
  await test('TextDecoder replacement and fatal', () => {
    eq(new TextDecoder().decode(bytes(0x61, 0xff, 0x62)), 'a\ufffdb');
    eq(new TextDecoder().decode(bytes(0xe2, 0x82)), '\ufffd', 'truncated sequence: one U+FFFD');
    eq(new TextDecoder().decode(bytes(0xf0, 0x80, 0x80, 0x80)), '\ufffd\ufffd\ufffd\ufffd', 'overlong');
    const fatal = new TextDecoder('utf-8', { fatal: true });
    eq(fatal.fatal, true);
    throws(() => fatal.decode(bytes(0x61, 0xff)), TypeError, 'fatal invalid byte');
    throws(() => fatal.decode(bytes(0xed, 0xa0, 0x80)), TypeError, 'fatal surrogate');
    eq(fatal.decode(bytes(0x61)), 'a', 'usable after an error');
  });
  await test('TextDecoder BOM', () => {
    eq(new TextDecoder().decode(bytes(0xef, 0xbb, 0xbf, 0x61)), 'a', 'stripped');
    eq(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes(0xef, 0xbb, 0xbf, 0x61)), '\ufeffa', 'kept');
    const d = new TextDecoder();
    eq(d.decode(bytes(0xef, 0xbb, 0xbf, 0x61)) + d.decode(bytes(0xef, 0xbb, 0xbf, 0x62)), 'ab', 'stripped at the start of every decode');
    eq(new TextDecoder().decode(bytes(0x61, 0xef, 0xbb, 0xbf)), 'a\ufeff', 'only at the start');
  });
  await test('TextDecoder stream option', () => {
    const d = new TextDecoder();
    const euro = [0xe2, 0x82, 0xac];
    let out = '';
    for (const b of euro) out += d.decode(bytes(b), { stream: true });
    out += d.decode();
    eq(out, '\u20ac', 'split three-byte sequence');
    const d2 = new TextDecoder();
    const emoji = [0xf0, 0x9f, 0x98, 0x80];
    eq(d2.decode(bytes(0x61, emoji[0], emoji[1]), { stream: true }), 'a');
    eq(d2.decode(bytes(emoji[2], emoji[3], 0x62), { stream: true }), '\u{1F600}b');
    eq(d2.decode(), '');
    const d3 = new TextDecoder();
    eq(d3.decode(bytes(0xe2, 0x82), { stream: true }), '');
    eq(d3.decode(), '\ufffd', 'incomplete at the end of the stream');
    const d4 = new TextDecoder();
    eq(d4.decode(bytes(0xef, 0xbb), { stream: true }) + d4.decode(bytes(0xbf, 0x61), { stream: true }) + d4.decode(), 'a', 'split BOM');
    const d5 = new TextDecoder('utf-8', { fatal: true });
    eq(d5.decode(bytes(0xe2), { stream: true }), '');
    throws(() => d5.decode(), TypeError, 'fatal: incomplete at end');
  });
  await test('TextEncoder/TextDecoder brand checks', () => {
    throws(() => TextEncoder.prototype.encode.call({}, 'x'), TypeError, 'encode on a plain object');
    throws(() => TextDecoder.prototype.decode.call({}), TypeError, 'decode on a plain object');
    eq(Object.prototype.toString.call(new TextEncoder()), '[object TextEncoder]');
    eq(Object.prototype.toString.call(new TextDecoder()), '[object TextDecoder]');
  });
  await test('TextEncoderStream / TextDecoderStream', async () => {
    const input = ReadableStream.from(['h\u00e9', '\ud83d', '\ude00!']);
    const encoded = input.pipeThrough(new TextEncoderStream());
    const chunks = [];
    for await (const c of encoded) { assert(c instanceof Uint8Array, 'chunk is Uint8Array'); chunks.push(...c); }
    eq(hex(new Uint8Array(chunks)), '68c3a9f09f988021', 'surrogate pair split across chunks');
    const split = ReadableStream.from([bytes(0xe2), bytes(0x82, 0xac, 0x61)]);
    let text = '';
    for await (const s of split.pipeThrough(new TextDecoderStream())) text += s;
    eq(text, '\u20aca');
    eq(new TextDecoderStream().encoding, 'utf-8');
    throws(() => new TextDecoderStream('latin9000'), RangeError, 'bad label');
  });
});
