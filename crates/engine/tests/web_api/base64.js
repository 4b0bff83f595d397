// atob / btoa (forgiving-base64), including the exact error behaviour.

export default suite(async () => {
  await test('btoa', () => {
    eq(btoa(''), '');
    eq(btoa('f'), 'Zg==');
    eq(btoa('fo'), 'Zm8=');
    eq(btoa('foo'), 'Zm9v');
    eq(btoa('foob'), 'Zm9vYg==');
    eq(btoa('\x00\xff\xfe'), 'AP/+');
    eq(btoa(null), 'bnVsbA==', 'null -> "null"');
    eq(btoa(undefined), 'dW5kZWZpbmVk', 'undefined -> "undefined"');
    eq(btoa(12), 'MTI=');
  });
  await test('btoa errors', () => {
    const e = throws(() => btoa('\u0100'), 'InvalidCharacterError', 'code point above 0xFF');
    assert(e instanceof DOMException, 'is a DOMException');
    eq(e.code, 5, 'legacy code');
    throws(() => btoa('a\u20acb'), 'InvalidCharacterError', 'euro sign');
    throws(() => btoa('\ud83d\ude00'), 'InvalidCharacterError', 'emoji');
    throws(() => btoa(), TypeError, 'missing argument');
    throws(() => btoa(Symbol('x')), TypeError, 'symbol');
  });
  await test('atob', () => {
    eq(atob(''), '');
    eq(atob('Zg=='), 'f');
    eq(atob('Zg'), 'f', 'no padding');
    eq(atob('Zm9v'), 'foo');
    eq(atob(' Z m\t9\nv\f\r'), 'foo', 'ASCII whitespace is ignored');
    eq(atob('AP/+'), '\x00\xff\xfe');
    eq(atob(null), '\x9e\xe9e', 'null -> "null"');
    eq(atob('YQ'), 'a');
    eq(atob('YR=='), 'a', 'non-zero trailing bits are discarded');
  });
  await test('atob errors', () => {
    for (const bad of ['a', 'Zg=', 'abcde', 'Zg===', '=Zg=', 'Z=g=', 'Zm9v=', 'Zm9vY', '\u00ff\u00ff', 'Zg==Zg==', 'Zm-v', 'Zm_v', 'Zm9v\u00a0', undefined]) {
      const e = throws(() => atob(bad), 'InvalidCharacterError', `atob(${JSON.stringify(bad)})`);
      assert(e instanceof DOMException, 'DOMException');
    }
    throws(() => atob(), TypeError, 'missing argument');
  });
  await test('round trip of every byte', () => {
    let s = '';
    for (let i = 0; i < 256; i++) s += String.fromCharCode(i);
    eq(atob(btoa(s)), s);
    eq(btoa(s).length, 344);
  });
});
