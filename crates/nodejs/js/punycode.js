// node:punycode (deprecated in Node; workerd has it from 2025-12-04):
// RFC 3492 encoding by the `idna` crate (`punycodeEncode`/`punycodeDecode`),
// and Node's domain and UCS-2 helpers around it. Runs as function (host,
// internal, require, module, exports).

// Node splits domains at these dots (full stop, ideographic, fullwidth,
// halfwidth ideographic), and leaves an email's local part alone.
const SEPARATORS = /[\x2E\u3002\uFF0E\uFF61]/;

function mapDomain(domain, fn) {
  const text = String(domain);
  const at = text.lastIndexOf('@');
  const local = at >= 0 ? text.slice(0, at + 1) : '';
  return local + text.slice(at + 1).split(SEPARATORS).map(fn).join('.');
}

const encode = (input) => host.punycodeEncode(String(input));
const decode = (input) => host.punycodeDecode(String(input));

module.exports = {
  version: '2.1.0',
  encode,
  decode,
  toASCII: (domain) => mapDomain(domain, (label) => (/[^\0-\x7F]/.test(label) ? `xn--${encode(label)}` : label)),
  toUnicode: (domain) => mapDomain(domain, (label) => (/^xn--/i.test(label) ? decode(label.slice(4).toLowerCase()) : label)),
  ucs2: {
    decode: (string) => Array.from(String(string), (c) => c.codePointAt(0)),
    encode: (codePoints) => {
      let out = '';
      for (const point of codePoints) out += String.fromCodePoint(point);
      return out;
    },
  },
};
