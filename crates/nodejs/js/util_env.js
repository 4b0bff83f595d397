// node:internal/util_env — util.parseEnv: dotenv text to an object as
// workerd (Node 22) reads it: `KEY=value` lines, `export ` before a key,
// `#` comments, values in '…', "…" (where `\n` is a newline) or `…` that
// may span lines, an unclosed quote taken to the end of its line. One pass:
// each quote's next position is remembered, so no text is scanned twice.
// Runs as function (host, internal, require, module, exports).

const { invalidArgType } = require('node:internal/errors');

const QUOTES = '\'"`';

function skipBlanks(text, at, end) {
  while (at < end && (text[at] === ' ' || text[at] === '\t')) at++;
  return at;
}

// The key of the line [start, end) before its '=' at `eq`, or '' to skip.
function keyOf(text, start, eq) {
  let key = text.slice(start, eq).trim();
  if (key.startsWith('#')) return '';
  if (key.startsWith('export ')) key = key.slice(7).trim();
  return key;
}

// [value, where the next line starts] for the value from `at` on a line
// that ends at `end`; `next(q, from)` is the next `q` at or after `from`.
function valueOf(text, at, end, next) {
  at = skipBlanks(text, at, end);
  if (at >= end) return ['', end + 1];
  const quote = text[at];
  if (QUOTES.includes(quote)) {
    const close = next(quote, at + 1);
    if (close === -1) return [text.slice(at + 1, end).trim(), end + 1];
    const inner = text.slice(at + 1, close);
    const lineEnd = text.indexOf('\n', close + 1);
    return [quote === '"' ? inner.replaceAll('\\n', '\n') : inner, lineEnd === -1 ? text.length : lineEnd + 1];
  }
  let value = text.slice(at, end);
  const hash = value.indexOf('#');
  if (hash !== -1) value = value.slice(0, hash);
  return [value.trim(), end + 1];
}

function parseEnv(content) {
  if (typeof content !== 'string') throw invalidArgType('content', 'of type string', content);
  const found = { "'": 0, '"': 0, '`': 0 };
  const next = (quote, from) => {
    if (found[quote] !== -1 && found[quote] < from) found[quote] = content.indexOf(quote, from);
    return found[quote];
  };
  const out = {};
  for (let at = 0; at < content.length;) {
    const newline = content.indexOf('\n', at);
    const end = newline === -1 ? content.length : newline;
    const eq = content.slice(at, end).indexOf('=');
    const key = eq === -1 ? '' : keyOf(content, at, at + eq);
    if (key === '') {
      at = end + 1;
      continue;
    }
    const [value, after] = valueOf(content, at + eq + 1, end, next);
    if (key !== '__proto__') out[key] = value;
    at = after;
  }
  return out;
}

module.exports = { parseEnv };
