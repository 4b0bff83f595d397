// 06_url.js — URL and URLSearchParams (URL Standard). Parsing and setters are
// the core's host functions (urlParse, urlSet: a WHATWG URL implementation,
// which the core's Request and fetch parse with too); this file keeps the
// objects.
'use strict';

const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5, HOSTNAME = 6,
  PORT = 7, PATHNAME = 8, SEARCH = 9, HASH = 10;

// ---- application/x-www-form-urlencoded ----

const HEX = '0123456789ABCDEF';
function isFormSafe(b) {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) ||
    b === 0x2a || b === 0x2d || b === 0x2e || b === 0x5f;
}
function formEncode(s) {
  // fast path: nothing to escape
  if (/^[0-9A-Za-z*\-._]*$/.test(s)) return s;
  const bytes = host.utf8Encode(s);
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x20) out += '+';
    else if (isFormSafe(b)) out += String.fromCharCode(b);
    else out += '%' + HEX[b >> 4] + HEX[b & 15];
  }
  return out;
}
function hexValue(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}
function formDecode(s) {
  s = s.replaceAll('+', ' ');
  if (!s.includes('%')) return s;
  const bytes = host.utf8Encode(s);
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 0x25 && i + 2 < bytes.length) {
      const h = hexValue(bytes[i + 1]), l = hexValue(bytes[i + 2]);
      if (h >= 0 && l >= 0) { out[n++] = (h << 4) | l; i += 2; continue; }
    }
    out[n++] = b;
  }
  return host.utf8Decode(out.subarray(0, n), false, true);
}
function parseForm(input) {
  const list = [];
  for (const seq of input.split('&')) {
    if (seq === '') continue;
    const eq = seq.indexOf('=');
    const name = eq < 0 ? seq : seq.slice(0, eq);
    const value = eq < 0 ? '' : seq.slice(eq + 1);
    list.push([formDecode(name), formDecode(value)]);
  }
  return list;
}
function serializeForm(list) {
  let out = '';
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out += '&';
    out += formEncode(list[i][0]) + '=' + formEncode(list[i][1]);
  }
  return out;
}

// ---- URLSearchParams ----

class URLSearchParams {
  #list = [];
  #url = null; // the URL object this belongs to, if any

  constructor(init = undefined) {
    if (init === undefined || init === null) {
      if (init === null) this.#list = parseForm('null');
      return;
    }
    if (internal.isObject(init)) {
      if (typeof init[Symbol.iterator] === 'function') {
        for (const pair of init) {
          if (!internal.isObject(pair) || typeof pair[Symbol.iterator] !== 'function') {
            throw new TypeError("Failed to construct 'URLSearchParams': The provided value cannot be converted to a sequence.");
          }
          const items = [...pair];
          if (items.length !== 2) {
            throw new TypeError("Failed to construct 'URLSearchParams': Sequence initializer must only contain pair elements");
          }
          this.#list.push([internal.toUSVString(items[0]), internal.toUSVString(items[1])]);
        }
      } else {
        // record<USVString, USVString>: keys that become equal once lone
        // surrogates are replaced keep the first one's place and the last
        // one's value (Web IDL, converting to a record).
        const record = new Map();
        for (const key of Reflect.ownKeys(init)) {
          const d = Reflect.getOwnPropertyDescriptor(init, key);
          if (d === undefined || !d.enumerable) continue;
          if (typeof key === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
          record.set(internal.toUSVString(key), internal.toUSVString(init[key]));
        }
        for (const pair of record) this.#list.push(pair);
      }
      return;
    }
    let s = internal.toUSVString(init);
    if (s.startsWith('?')) s = s.slice(1);
    this.#list = parseForm(s);
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#list in self)) throw new TypeError('Illegal invocation');
  }

  #update() {
    if (this.#url !== null) internal.urlSetQueryFromParams(this.#url, serializeForm(this.#list));
  }

  get size() { URLSearchParams.#check(this); return this.#list.length; }

  append(name, value) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'append' on 'URLSearchParams'");
    this.#list.push([internal.toUSVString(name), internal.toUSVString(value)]);
    this.#update();
  }

  delete(name, value = undefined) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'URLSearchParams'");
    name = internal.toUSVString(name);
    if (value === undefined) {
      this.#list = this.#list.filter((p) => p[0] !== name);
    } else {
      value = internal.toUSVString(value);
      this.#list = this.#list.filter((p) => p[0] !== name || p[1] !== value);
    }
    this.#update();
  }

  get(name) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'URLSearchParams'");
    name = internal.toUSVString(name);
    const p = this.#list.find((p) => p[0] === name);
    return p === undefined ? null : p[1];
  }

  getAll(name) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getAll' on 'URLSearchParams'");
    name = internal.toUSVString(name);
    return this.#list.filter((p) => p[0] === name).map((p) => p[1]);
  }

  has(name, value = undefined) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'has' on 'URLSearchParams'");
    name = internal.toUSVString(name);
    if (value === undefined) return this.#list.some((p) => p[0] === name);
    value = internal.toUSVString(value);
    return this.#list.some((p) => p[0] === name && p[1] === value);
  }

  set(name, value) {
    URLSearchParams.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'set' on 'URLSearchParams'");
    name = internal.toUSVString(name);
    value = internal.toUSVString(value);
    const i = this.#list.findIndex((p) => p[0] === name);
    if (i < 0) {
      this.#list.push([name, value]);
    } else {
      this.#list[i] = [name, value];
      this.#list = this.#list.filter((p, j) => j <= i || p[0] !== name);
    }
    this.#update();
  }

  sort() {
    URLSearchParams.#check(this);
    // stable sort by UTF-16 code units of the name
    this.#list = this.#list
      .map((p, i) => [p, i])
      .sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]))
      .map((x) => x[0]);
    this.#update();
  }

  toString() {
    URLSearchParams.#check(this);
    return serializeForm(this.#list);
  }

  static {
    internal.isURLSearchParams = (v) => internal.isObject(v) && #list in v;
    internal.searchParamsList = (p) => p.#list;
    internal.newLinkedSearchParams = (url, query) => {
      const p = new URLSearchParams();
      p.#list = parseForm(query);
      p.#url = url;
      return p;
    };
    internal.searchParamsReparse = (p, query) => { p.#list = parseForm(query); };
  }
}
internal.makePairIterable(URLSearchParams, 'URLSearchParams', internal.searchParamsList, (self) => {
  if (!internal.isURLSearchParams(self)) throw new TypeError('Illegal invocation');
});
internal.enumerableMembers(URLSearchParams, ['size', 'append', 'delete', 'get', 'getAll', 'has', 'set', 'sort', 'toString']);
internal.setToStringTag(URLSearchParams.prototype, 'URLSearchParams');
internal.serializeForm = serializeForm;
internal.parseForm = parseForm;

// ---- URL ----

const kParsed = Symbol('parsed');

class URL {
  #c;               // the component array from host.urlParse / host.urlSet
  #params = null;   // URLSearchParams, created lazily

  constructor(url, base = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'URL'");
    if (url === kParsed) { this.#c = base; return; }
    url = internal.toUSVString(url);
    let c;
    if (base === undefined) {
      c = host.urlParse(url);
    } else {
      base = internal.toUSVString(base);
      c = host.urlParse(url, base);
    }
    if (c === null) {
      throw new TypeError('Invalid URL string.');
    }
    this.#c = c;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#c in self)) throw new TypeError('Illegal invocation');
  }

  static canParse(url, base = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'canParse' on 'URL'");
    url = internal.toUSVString(url);
    return (base === undefined ? host.urlParse(url) : host.urlParse(url, internal.toUSVString(base))) !== null;
  }

  static parse(url, base = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'parse' on 'URL'");
    url = internal.toUSVString(url);
    const c = base === undefined ? host.urlParse(url) : host.urlParse(url, internal.toUSVString(base));
    return c === null ? null : new URL(kParsed, c);
  }

  #set(part, value) {
    const before = this.#c[SEARCH];
    this.#c = host.urlSet(this.#c[HREF], part, internal.toUSVString(value));
    if (this.#params !== null && this.#c[SEARCH] !== before) {
      internal.searchParamsReparse(this.#params, this.#c[SEARCH].slice(1));
    }
  }

  get href() { URL.#check(this); return this.#c[HREF]; }
  set href(v) {
    URL.#check(this);
    const c = host.urlParse(internal.toUSVString(v));
    if (c === null) throw new TypeError('Invalid URL string.');
    this.#c = c;
    if (this.#params !== null) internal.searchParamsReparse(this.#params, c[SEARCH].slice(1));
  }
  get origin() { URL.#check(this); return this.#c[ORIGIN]; }
  get protocol() { URL.#check(this); return this.#c[PROTOCOL]; }
  set protocol(v) { URL.#check(this); this.#set('protocol', v); }
  get username() { URL.#check(this); return this.#c[USERNAME]; }
  set username(v) { URL.#check(this); this.#set('username', v); }
  get password() { URL.#check(this); return this.#c[PASSWORD]; }
  set password(v) { URL.#check(this); this.#set('password', v); }
  get host() { URL.#check(this); return this.#c[HOST]; }
  set host(v) { URL.#check(this); this.#set('host', v); }
  get hostname() { URL.#check(this); return this.#c[HOSTNAME]; }
  set hostname(v) { URL.#check(this); this.#set('hostname', v); }
  get port() { URL.#check(this); return this.#c[PORT]; }
  set port(v) { URL.#check(this); this.#set('port', v); }
  get pathname() { URL.#check(this); return this.#c[PATHNAME]; }
  set pathname(v) { URL.#check(this); this.#set('pathname', v); }
  get search() { URL.#check(this); return this.#c[SEARCH]; }
  set search(v) { URL.#check(this); this.#set('search', v); }
  get searchParams() {
    URL.#check(this);
    if (this.#params === null) this.#params = internal.newLinkedSearchParams(this, this.#c[SEARCH].slice(1));
    return this.#params;
  }
  get hash() { URL.#check(this); return this.#c[HASH]; }
  set hash(v) { URL.#check(this); this.#set('hash', v); }

  toString() { URL.#check(this); return this.#c[HREF]; }
  toJSON() { URL.#check(this); return this.#c[HREF]; }

  static {
    internal.isURL = (v) => internal.isObject(v) && #c in v;
    // URLSearchParams "update steps": the serialized query replaces the URL's query.
    internal.urlSetQueryFromParams = (url, query) => {
      // an empty query means "no query" (no '?'), which the search setter gives for ''
      url.#c = host.urlSet(url.#c[HREF], 'search', query);
    };
  }
}
internal.enumerableMembers(URL, ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname',
  'port', 'pathname', 'search', 'searchParams', 'hash', 'toString', 'toJSON']);
internal.setToStringTag(URL.prototype, 'URL');

internal.defineGlobal('URL', URL);
internal.defineGlobal('URLSearchParams', URLSearchParams);
