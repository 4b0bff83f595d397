// node:internal/util_mime — util.MIMEType and util.MIMEParams: the WHATWG
// MIME Sniffing standard's parse and serialize, written as loops over the
// text (no regular expression: linear on any input). Errors as Node's
// ERR_INVALID_MIME_SYNTAX. Runs as function (host, internal, require,
// module, exports).

const { codedError } = require('node:internal/errors');

// HTTP token code points: alphanumerics and !#$%&'*+-.^_`|~.
const TOKEN_PUNCTUATION = "!#$%&'*+-.^_`|~";
function isToken(c) {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
    || (c < 0x80 && TOKEN_PUNCTUATION.includes(String.fromCharCode(c)));
}
// HTTP quoted-string token code points: tab, 0x20-0x7E, 0x80-0xFF.
const isQuotedToken = (c) => c === 0x09 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff);
const isWhitespace = (c) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

// The index of the first code unit `ok` refuses, or -1.
function firstInvalid(text, ok) {
  for (let i = 0; i < text.length; i++) if (!ok(text.charCodeAt(i))) return i;
  return -1;
}

function invalidSyntax(production, text, index) {
  const at = index !== -1 ? ` at ${index}` : '';
  return codedError(TypeError, 'ERR_INVALID_MIME_SYNTAX', `The MIME syntax for a ${production} in "${text}" is invalid${at}`);
}

function checkToken(production, text) {
  const bad = firstInvalid(text, isToken);
  if (text === '' || bad !== -1) throw invalidSyntax(production, text, bad);
  return text;
}

const lower = (text) => text.replace(/[A-Z]+/g, (s) => s.toLowerCase());

function trimEnd(text) {
  let end = text.length;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  return text.slice(0, end);
}

function skipWhitespace(text, at) {
  while (at < text.length && isWhitespace(text.charCodeAt(at))) at++;
  return at;
}

// The standard's "collect an HTTP quoted string" with the value extracted,
// from the opening quote at `at`: [value, the index after it].
function quotedString(text, at) {
  let value = '';
  let from = at + 1;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"') return [value + text.slice(from, i), i + 1];
    if (c === '\\') {
      value += text.slice(from, i);
      if (i + 1 >= text.length) return [`${value}\\`, text.length];
      value += text[i + 1];
      i++;
      from = i + 1;
    }
  }
  return [value + text.slice(from), text.length];
}

function indexOrEnd(text, char, from) {
  const at = text.indexOf(char, from);
  return at === -1 ? text.length : at;
}

// One parameter from `at` (just after a ';') into `params`; the index of
// the ';' that ends it, or the end.
function parseParameter(text, at, params) {
  at = skipWhitespace(text, at);
  let nameEnd = at;
  while (nameEnd < text.length && text[nameEnd] !== ';' && text[nameEnd] !== '=') nameEnd++;
  const name = lower(text.slice(at, nameEnd));
  if (nameEnd >= text.length || text[nameEnd] === ';') return nameEnd;
  at = nameEnd + 1;
  let value;
  if (text[at] === '"') {
    [value, at] = quotedString(text, at);
    at = indexOrEnd(text, ';', at);
  } else {
    const end = indexOrEnd(text, ';', at);
    value = trimEnd(text.slice(at, end));
    at = end;
    if (value === '') return at;
  }
  if (name !== '' && firstInvalid(name, isToken) === -1 && firstInvalid(value, isQuotedToken) === -1 && !params.has(name)) {
    params.set(name, value);
  }
  return at;
}

// [type, subtype, parameters] of `text`, or an ERR_INVALID_MIME_SYNTAX.
function parse(input) {
  const text = input.slice(skipWhitespace(input, 0));
  const slash = text.indexOf('/');
  const rawType = slash === -1 ? text : text.slice(0, slash);
  const typeBad = firstInvalid(rawType, isToken);
  if (rawType === '' || typeBad !== -1 || slash === -1) throw invalidSyntax('type', input, typeBad);
  const semicolon = indexOrEnd(text, ';', slash + 1);
  const subtype = trimEnd(text.slice(slash + 1, semicolon));
  const subtypeBad = firstInvalid(subtype, isToken);
  if (subtype === '' || subtypeBad !== -1) throw invalidSyntax('subtype', input, subtypeBad);
  const params = new Map();
  for (let at = semicolon; at < text.length;) at = parseParameter(text, at + 1, params);
  return [lower(rawType), lower(subtype), params];
}

function serializeValue(value) {
  if (value !== '' && firstInvalid(value, isToken) === -1) return value;
  let out = '"';
  for (const c of value) out += c === '"' || c === '\\' ? `\\${c}` : c;
  return `${out}"`;
}

// Gives a MIMEParams the parameters a MIMEType parsed.
let adopt;

class MIMEParams {
  #data = new Map();

  static {
    adopt = (params, data) => {
      params.#data = data;
    };
  }

  get(name) { return this.#data.get(`${name}`) ?? null; }
  has(name) { return this.#data.has(`${name}`); }
  delete(name) { this.#data.delete(`${name}`); }

  set(name, value) {
    name = checkToken('parameter name', `${name}`);
    value = `${value}`;
    const bad = firstInvalid(value, isQuotedToken);
    if (bad !== -1) throw invalidSyntax('parameter value', value, bad);
    this.#data.set(name, value);
  }

  entries() { return this.#data.entries(); }
  keys() { return this.#data.keys(); }
  values() { return this.#data.values(); }
  [Symbol.iterator]() { return this.#data.entries(); }

  toString() {
    let out = '';
    for (const [name, value] of this.#data) out += `${out === '' ? '' : ';'}${name}=${serializeValue(value)}`;
    return out;
  }

  toJSON() { return this.toString(); }
  get [Symbol.toStringTag]() { return 'MIMEParams'; }

  [Symbol.for('nodejs.util.inspect.custom')](depth, options, inspect) {
    return inspect(this.#data, options).replace(/^Map/, 'MIMEParams');
  }
}

class MIMEType {
  #type;
  #subtype;
  #params = new MIMEParams();

  constructor(input) {
    if (input === undefined) {
      throw new TypeError("Failed to construct 'MIMEType': constructor parameter 1 is not of type 'string'.");
    }
    const [type, subtype, params] = parse(`${input}`);
    this.#type = type;
    this.#subtype = subtype;
    adopt(this.#params, params);
  }

  get type() { return this.#type; }
  set type(value) { this.#type = lower(checkToken('type', `${value}`)); }
  get subtype() { return this.#subtype; }
  set subtype(value) { this.#subtype = lower(checkToken('subtype', `${value}`)); }
  get essence() { return `${this.#type}/${this.#subtype}`; }
  get params() { return this.#params; }

  toString() {
    const params = this.#params.toString();
    return `${this.essence}${params === '' ? '' : `;${params}`}`;
  }

  toJSON() { return this.toString(); }
  get [Symbol.toStringTag]() { return 'MIMEType'; }

  [Symbol.for('nodejs.util.inspect.custom')](depth, options, inspect) {
    const shown = { type: this.#type, subtype: this.#subtype, essence: this.essence, params: this.#params };
    return `MIMEType ${inspect(shown, options)}`;
  }
}

module.exports = { MIMEType, MIMEParams };
