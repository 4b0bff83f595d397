// node:querystring — parse, stringify, escape and unescape as Node has
// them: '+' is a space when parsing, repeated keys become arrays, values
// are percent-encoded as encodeURIComponent does. Runs as function (host,
// internal, require, module, exports).

function unescape(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    // Malformed escapes are kept as they are, one by one.
    return text.replace(/%([0-9a-fA-F]{2})/g, (match, hex) => {
      const code = parseInt(hex, 16);
      return code < 0x80 ? String.fromCharCode(code) : match;
    });
  }
}

// Node leaves the same characters unescaped as encodeURIComponent.
function escape(text) {
  return encodeURIComponent(text);
}

function parse(text, sep = '&', eq = '=', options = {}) {
  const out = Object.create(null);
  if (typeof text !== 'string' || text.length === 0) return out;
  const decode = typeof options?.decodeURIComponent === 'function' ? options.decodeURIComponent : unescape;
  const max = typeof options?.maxKeys === 'number' ? options.maxKeys : 1000;
  let pairs = text.split(sep || '&');
  if (max > 0) pairs = pairs.slice(0, max);
  for (const pair of pairs) {
    if (pair.length === 0) continue;
    const at = pair.indexOf(eq || '=');
    const rawKey = at === -1 ? pair : pair.slice(0, at);
    const rawValue = at === -1 ? '' : pair.slice(at + (eq || '=').length);
    const key = decode(rawKey.replace(/\+/g, ' '));
    const value = decode(rawValue.replace(/\+/g, ' '));
    if (!(key in out)) out[key] = value;
    else if (Array.isArray(out[key])) out[key].push(value);
    else out[key] = [out[key], value];
  }
  return out;
}

function primitive(value) {
  switch (typeof value) {
    case 'string': return value;
    case 'number': return Number.isFinite(value) ? String(value) : '';
    case 'bigint': return String(value);
    case 'boolean': return value ? 'true' : 'false';
    default: return '';
  }
}

function stringify(object, sep = '&', eq = '=', options = {}) {
  if (object === null || typeof object !== 'object') return '';
  const encode = typeof options?.encodeURIComponent === 'function' ? options.encodeURIComponent : escape;
  const parts = [];
  for (const key of Object.keys(object)) {
    const value = object[key];
    const name = encode(primitive(key)) + (eq || '=');
    if (Array.isArray(value)) {
      for (const item of value) parts.push(name + encode(primitive(item)));
    } else {
      parts.push(name + encode(primitive(value)));
    }
  }
  return parts.join(sep || '&');
}

module.exports = {
  parse,
  decode: parse,
  stringify,
  encode: stringify,
  escape,
  unescape,
  unescapeBuffer: (text) => require('node:buffer').Buffer.from(unescape(String(text))),
};
