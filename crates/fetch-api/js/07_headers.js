// 07_headers.js — Headers (Fetch Standard). Names are stored lower-cased.
'use strict';

// Each character code below 128: 0 not a token character, 1 one, 2 an
// upper-case letter (RFC 9110 token). A loop over this table checks a name
// and finds whether it needs lower-casing, which a regular expression test
// and an unconditional toLowerCase (every append, get, has) cost several
// times over.
const TOKEN_CHARS = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz") TOKEN_CHARS[c.charCodeAt(0)] = 1;
for (let c = 0x41; c <= 0x5a; c++) TOKEN_CHARS[c] = 2;

function normalizeName(name) {
  name = internal.toByteString(name, 'Header name');
  const n = name.length;
  let upper = false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    const kind = c < 128 ? TOKEN_CHARS[c] : 0;
    if (kind === 0) throw new TypeError(`Invalid header name: '${name}'`);
    if (kind === 2) upper = true;
  }
  if (n === 0) throw new TypeError(`Invalid header name: '${name}'`);
  return upper ? name.toLowerCase() : name;
}

// HTTP whitespace: tab, line feed, carriage return, space.
function isHttpWhitespace(c) {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

// Leading and trailing HTTP whitespace removed; NUL, CR or LF left inside
// is an error.
function normalizeValue(value) {
  value = internal.toByteString(value, 'Header value');
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  for (let i = start; i < end; i++) {
    const c = value.charCodeAt(i);
    if (c === 0 || c === 0x0a || c === 0x0d) throw new TypeError('Invalid header value.');
  }
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

class Headers {
  #map = new Map();    // lower-case name -> array of values, in insertion order
  #guard = 'none';     // 'none' | 'immutable'
  #sorted = null;      // cache of the sort-and-combine list

  constructor(init = undefined) {
    if (init !== undefined && init !== null) internal.fillHeaders(this, init);
    else if (init === null) throw new TypeError("Failed to construct 'Headers': The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.");
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#map in self)) throw new TypeError('Illegal invocation');
  }

  #mutable() {
    if (this.#guard === 'immutable') throw new TypeError("Can't modify immutable headers.");
    this.#sorted = null;
  }

  append(name, value) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'append' on 'Headers'");
    name = normalizeName(name);
    value = normalizeValue(value);
    this.#mutable();
    const list = this.#map.get(name);
    if (list) list.push(value); else this.#map.set(name, [value]);
  }

  delete(name) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'Headers'");
    name = normalizeName(name);
    this.#mutable();
    this.#map.delete(name);
  }

  get(name) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'Headers'");
    const list = this.#map.get(normalizeName(name));
    return list === undefined ? null : list.join(', ');
  }

  getSetCookie() {
    Headers.#check(this);
    const list = this.#map.get('set-cookie');
    return list === undefined ? [] : list.slice();
  }

  // workerd extension: every value of a header, uncombined (only allowed for set-cookie there).
  getAll(name) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getAll' on 'Headers'");
    name = normalizeName(name);
    if (name !== 'set-cookie') throw new TypeError('getAll() can only be used with the header name "Set-Cookie".');
    return this.getSetCookie();
  }

  has(name) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'has' on 'Headers'");
    return this.#map.has(normalizeName(name));
  }

  set(name, value) {
    Headers.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'set' on 'Headers'");
    name = normalizeName(name);
    value = normalizeValue(value);
    this.#mutable();
    this.#map.set(name, [value]);
  }

  #sortedPairs() {
    if (this.#sorted === null) {
      const names = [...this.#map.keys()].sort();
      const out = [];
      for (const name of names) {
        const values = this.#map.get(name);
        if (name === 'set-cookie') for (const v of values) out.push([name, v]);
        else out.push([name, values.join(', ')]);
      }
      this.#sorted = out;
    }
    return this.#sorted;
  }

  static {
    internal.isHeaders = (v) => internal.isObject(v) && #map in v;
    internal.headersPairs = (h) => h.#sortedPairs();
    internal.headersSetGuard = (h, guard) => { h.#guard = guard; };
    internal.headersGuard = (h) => h.#guard;
    // Every [name, value] pair, uncombined, for the host.
    internal.headersList = (h) => {
      const out = [];
      for (const [name, values] of h.#map) for (const v of values) out.push(name, v);
      return out;
    };
    // Fill from a host list of strings, [name, value, name, value, …] (the
    // flat form every header list crossing the host boundary has), without
    // validation (trusted): the host's names are lower-case already (an http
    // HeaderName is), so every caller's list is, and none is lowered here.
    internal.headersFromList = (list, guard) => {
      const h = new Headers();
      for (let i = 0; i + 1 < list.length; i += 2) {
        const name = list[i];
        const value = list[i + 1];
        const values = h.#map.get(name);
        if (values) values.push(value); else h.#map.set(name, [value]);
      }
      h.#guard = guard;
      return h;
    };
    internal.headersCopy = (src, guard) => {
      const h = new Headers();
      for (const [name, values] of src.#map) h.#map.set(name, values.slice());
      h.#guard = guard;
      return h;
    };
    internal.fillHeaders = (h, init) => {
      if (!internal.isObject(init)) {
        throw new TypeError("Failed to construct 'Headers': The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.");
      }
      if (#map in init) {
        for (const [name, values] of init.#map) for (const v of values) h.append(name, v);
      } else if (typeof init[Symbol.iterator] === 'function') {
        for (const pair of init) {
          if (!internal.isObject(pair) || typeof pair[Symbol.iterator] !== 'function') {
            throw new TypeError("Failed to construct 'Headers': The provided value cannot be converted to a sequence.");
          }
          const items = [...pair];
          if (items.length !== 2) {
            throw new TypeError("Failed to construct 'Headers': Invalid value (a header init pair must have exactly two items).");
          }
          h.append(items[0], items[1]);
        }
      } else {
        for (const key of Reflect.ownKeys(init)) {
          const d = Reflect.getOwnPropertyDescriptor(init, key);
          if (d === undefined || !d.enumerable) continue;
          if (typeof key === 'symbol') throw new TypeError('Cannot convert a Symbol value to a string');
          h.append(key, init[key]);
        }
      }
    };
  }
}
internal.makePairIterable(Headers, 'Headers', internal.headersPairs, (self) => {
  if (!internal.isHeaders(self)) throw new TypeError('Illegal invocation');
});
internal.enumerableMembers(Headers, ['append', 'delete', 'get', 'getSetCookie', 'getAll', 'has', 'set'], 'Headers');

internal.defineGlobal('Headers', Headers);
