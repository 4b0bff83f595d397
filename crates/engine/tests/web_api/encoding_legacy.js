// TextDecoder and TextDecoderStream for every encoding of the Encoding
// Standard but UTF-8 (encoding.js): labels and names from the standard's
// encodings table (as WPT's encoding/resources/encodings.js and
// textdecoder-labels.any.js use it), legacy decoders, fatal, BOMs, streaming.

export default suite(async () => {
  await test('TextDecoder: every encoding of the Encoding Standard, by some of its labels', () => {
    // [name the `encoding` getter returns, labels…] (Encoding Standard, encodings.json)
    const table = [
      ['ibm866', '866', 'cp866', 'csibm866', 'ibm866'],
      ['iso-8859-2', 'csisolatin2', 'iso-ir-101', 'iso8859-2', 'iso_8859-2:1987', 'l2', 'latin2'],
      ['iso-8859-3', 'iso-8859-3', 'l3', 'latin3'],
      ['iso-8859-4', 'iso-8859-4', 'l4', 'latin4'],
      ['iso-8859-5', 'csisolatincyrillic', 'cyrillic', 'iso-8859-5'],
      ['iso-8859-6', 'arabic', 'asmo-708', 'ecma-114', 'iso-8859-6-e', 'iso-8859-6-i'],
      ['iso-8859-7', 'greek', 'greek8', 'sun_eu_greek', 'iso-8859-7'],
      ['iso-8859-8', 'hebrew', 'iso-8859-8-e', 'visual', 'iso-8859-8'],
      ['iso-8859-8-i', 'csiso88598i', 'iso-8859-8-i', 'logical'],
      ['iso-8859-10', 'l6', 'latin6', 'iso-8859-10'],
      ['iso-8859-13', 'iso-8859-13', 'iso8859-13'],
      ['iso-8859-14', 'iso-8859-14', 'iso885914'],
      ['iso-8859-15', 'csisolatin9', 'l9', 'iso885915', 'iso_8859-15'],
      ['iso-8859-16', 'iso-8859-16'],
      ['koi8-r', 'cskoi8r', 'koi', 'koi8', 'koi8-r', 'koi8_r'],
      ['koi8-u', 'koi8-ru', 'koi8-u'],
      ['macintosh', 'csmacintosh', 'mac', 'macintosh', 'x-mac-roman'],
      ['windows-874', 'dos-874', 'iso-8859-11', 'tis-620', 'windows-874'],
      ['windows-1250', 'cp1250', 'windows-1250', 'x-cp1250'],
      ['windows-1251', 'cp1251', 'windows-1251'],
      ['windows-1252', 'ansi_x3.4-1968', 'ascii', 'cp1252', 'cp819', 'csisolatin1', 'ibm819', 'iso-8859-1', 'iso-ir-100', 'iso8859-1', 'l1', 'latin1', 'us-ascii', 'windows-1252', 'x-cp1252'],
      ['windows-1253', 'cp1253', 'windows-1253'],
      ['windows-1254', 'cp1254', 'iso-8859-9', 'l5', 'latin5', 'windows-1254'],
      ['windows-1255', 'cp1255', 'windows-1255'],
      ['windows-1256', 'cp1256', 'windows-1256'],
      ['windows-1257', 'cp1257', 'windows-1257'],
      ['windows-1258', 'cp1258', 'windows-1258'],
      ['x-mac-cyrillic', 'x-mac-cyrillic', 'x-mac-ukrainian'],
      ['gbk', 'chinese', 'csgb2312', 'gb2312', 'gb_2312-80', 'gbk', 'iso-ir-58', 'x-gbk'],
      ['gb18030', 'gb18030'],
      ['big5', 'big5', 'big5-hkscs', 'cn-big5', 'csbig5', 'x-x-big5'],
      ['euc-jp', 'cseucpkdfmtjapanese', 'euc-jp', 'x-euc-jp'],
      ['iso-2022-jp', 'csiso2022jp', 'iso-2022-jp'],
      ['shift_jis', 'csshiftjis', 'ms932', 'ms_kanji', 'shift-jis', 'shift_jis', 'sjis', 'windows-31j', 'x-sjis'],
      ['euc-kr', 'cseuckr', 'euc-kr', 'korean', 'ks_c_5601-1987', 'windows-949'],
      ['utf-16be', 'unicodefffe', 'utf-16be'],
      ['utf-16le', 'csunicode', 'iso-10646-ucs-2', 'ucs-2', 'unicode', 'unicodefeff', 'utf-16', 'utf-16le'],
      ['x-user-defined', 'x-user-defined'],
    ];
    for (const [name, ...labels] of table) {
      for (const label of labels) {
        eq(new TextDecoder(label).encoding, name, label);
        eq(new TextDecoder(label.toUpperCase()).encoding, name, `${label} in upper case`);
        for (const ws of [' ', '\t', '\n', '\f', '\r']) eq(new TextDecoderStream(ws + label + ws).encoding, name, `${label} in whitespace`);
      }
    }
    // The replacement encoding's labels, and whitespace the standard does not strip.
    for (const label of ['replacement', 'csiso2022kr', 'hz-gb-2312', 'iso-2022-cn', 'iso-2022-cn-ext', 'iso-2022-kr', '\vutf-8', 'utf-8\u00a0', 'latin1\0']) {
      throws(() => new TextDecoder(label), RangeError, JSON.stringify(label));
      throws(() => new TextDecoderStream(label), RangeError, `stream ${JSON.stringify(label)}`);
    }
  });
  await test('TextDecoder: legacy encodings decode', () => {
    const cases = [
      ['windows-1252', [0x80, 0x9f, 0xe9, 0x41], '\u20ac\u0178\u00e9A'],
      ['latin1', [0x81, 0xff], '\u0081\u00ff'], // windows-1252 leaves 0x81 as is
      ['iso-8859-2', [0xa1, 0xb1], '\u0104\u0105'],
      ['koi8-r', [0xc1, 0xe1], '\u0430\u0410'],
      ['ibm866', [0x80, 0xa0], '\u0410\u0430'],
      ['x-user-defined', [0x41, 0x80, 0xff], 'A\uf780\uf7ff'],
      ['shift_jis', [0x82, 0xa0, 0x93, 0xfa, 0x96, 0x7b, 0xb1], '\u3042\u65e5\u672c\uff71'],
      ['euc-jp', [0xa4, 0xa2, 0xc6, 0xfc], '\u3042\u65e5'],
      ['iso-2022-jp', [0x1b, 0x24, 0x42, 0x24, 0x22, 0x1b, 0x28, 0x42, 0x61], '\u3042a'],
      ['gbk', [0xc4, 0xe3, 0xba, 0xc3], '\u4f60\u597d'],
      ['gb18030', [0x81, 0x30, 0x81, 0x30, 0x90, 0x30, 0x81, 0x30], '\u0080\u{10000}'],
      ['big5', [0xa4, 0xa4, 0xa4, 0xe5], '\u4e2d\u6587'],
      ['euc-kr', [0xc7, 0xd1, 0xb1, 0xdb], '\ud55c\uae00'],
      ['utf-16le', [0x61, 0x00, 0x3d, 0xd8, 0x00, 0xde], 'a\u{1f600}'],
      ['utf-16be', [0x00, 0x61, 0xd8, 0x3d, 0xde, 0x00], 'a\u{1f600}'],
    ];
    for (const [label, input, want] of cases) {
      eq(new TextDecoder(label).decode(new Uint8Array(input)), want, label);
      eq(new TextDecoder(label, { fatal: true }).decode(new Uint8Array(input).buffer), want, `${label} (fatal, ArrayBuffer)`);
      // One byte at a time with {stream: true}: the state is kept between calls.
      const d = new TextDecoder(label);
      let out = '';
      for (const b of input) out += d.decode(new Uint8Array([b]), { stream: true });
      eq(out + d.decode(), want, `${label} byte by byte`);
      eq(d.decode(new Uint8Array(input)), want, `${label} again after the stream ended`);
    }
    eq(new TextDecoder('windows-1252').decode(), '', 'no input');
    eq(new TextDecoder('shift_jis').decode(new Uint8Array(0)), '', 'empty input');
    eq(new TextDecoder('latin1').decode(new Uint16Array([0xe9e8])), '\u00e8\u00e9', 'any view is bytes');
  });
  await test('TextDecoder: legacy encodings with fatal, replacement and BOMs', () => {
    throws(() => new TextDecoder('shift_jis', { fatal: true }).decode(bytes(0x82)), TypeError, 'truncated shift_jis');
    throws(() => new TextDecoder('euc-kr', { fatal: true }).decode(bytes(0xff, 0x41)), TypeError, 'invalid euc-kr');
    throws(() => new TextDecoder('utf-16le', { fatal: true }).decode(bytes(0x00, 0xd8)), TypeError, 'lone surrogate');
    throws(() => new TextDecoder('utf-16le', { fatal: true }).decode(bytes(0x61)), TypeError, 'odd byte count');
    const e = throws(() => new TextDecoder('gbk', { fatal: true }).decode(bytes(0x81)), TypeError, 'truncated gbk');
    assert(/gbk/.test(e.message), e.message);
    eq(new TextDecoder('shift_jis').decode(bytes(0x82)), '\ufffd', 'replaced when not fatal');
    eq(new TextDecoder('utf-16be').decode(bytes(0x00, 0x61, 0x00)), 'a\ufffd', 'odd tail replaced');
    const fatal = new TextDecoder('shift_jis', { fatal: true });
    eq(fatal.decode(bytes(0x82), { stream: true }), '', 'incomplete, streaming: no error yet');
    throws(() => fatal.decode(), TypeError, 'incomplete at the end of the stream');
    eq(fatal.decode(bytes(0x82, 0xa0)), '\u3042', 'usable after the error');
    // The BOM of the decoder's own encoding is stripped (unless ignoreBOM), no other.
    eq(new TextDecoder('utf-16le').decode(bytes(0xff, 0xfe, 0x61, 0x00)), 'a');
    eq(new TextDecoder('utf-16le', { ignoreBOM: true }).decode(bytes(0xff, 0xfe, 0x61, 0x00)), '\ufeffa');
    eq(new TextDecoder('utf-16be').decode(bytes(0xfe, 0xff, 0x00, 0x61)), 'a');
    eq(new TextDecoder('utf-16le').decode(bytes(0xfe, 0xff, 0x61, 0x00)), '\ufffea', 'a UTF-16BE BOM is no BOM for UTF-16LE');
    eq(new TextDecoder('utf-16le').decode(bytes(0xef, 0xbb, 0xbf)), '\ubbef\ufffd', 'nor is a UTF-8 BOM');
    eq(new TextDecoder('windows-1252').decode(bytes(0xef, 0xbb, 0xbf)), '\u00ef\u00bb\u00bf', 'no sniffing in windows-1252');
    const split = new TextDecoder('utf-16le');
    eq(split.decode(bytes(0xff), { stream: true }) + split.decode(bytes(0xfe, 0x61), { stream: true }) + split.decode(bytes(0x00)), 'a', 'BOM split across calls');
    eq(split.decode(bytes(0xff, 0xfe, 0x62, 0x00)), 'b', 'a new stream strips its BOM again');
    eq(new TextDecoder('utf-16le').ignoreBOM, false);
    eq(new TextDecoder('latin1', { fatal: true, ignoreBOM: true }).fatal, true);
  });
  await test('TextDecoder: long legacy input is decoded whole', () => {
    const input = new Uint8Array(3 * 1024 * 1024 + 1).fill(0xe9);
    const out = new TextDecoder('latin1').decode(input);
    eq(out.length, input.length);
    eq(out[0] + out[out.length - 1], '\u00e9\u00e9');
    // A two-byte sequence split by the decoder's steps (1 MiB) is not broken.
    const sjis = new Uint8Array(1024 * 1024 + 2);
    sjis[0] = 0x41;
    for (let i = 1; i < sjis.length; i += 2) { sjis[i] = 0x82; sjis[i + 1] = 0xa0; }
    const text = new TextDecoder('shift_jis', { fatal: true }).decode(sjis.subarray(0, sjis.length - 1));
    eq(text.length, 1 + (sjis.length - 2) / 2);
    eq(text[text.length - 1], '\u3042');
  });
  await test('TextDecoderStream with legacy encodings', async () => {
    const chunks = [bytes(0x82), bytes(0xa0, 0x93), bytes(0xfa)];
    let text = '';
    for await (const s of ReadableStream.from(chunks).pipeThrough(new TextDecoderStream('sjis'))) text += s;
    eq(text, '\u3042\u65e5');
    const s = new TextDecoderStream('utf-16', { fatal: true });
    eq(s.encoding, 'utf-16le');
    eq(s.fatal, true);
    const failing = ReadableStream.from([bytes(0x61, 0x00, 0x00)]).pipeThrough(s);
    const reader = failing.getReader();
    eq((await reader.read()).value, 'a');
    await rejects(reader.read(), TypeError, 'odd byte count at the end');
  });
});
