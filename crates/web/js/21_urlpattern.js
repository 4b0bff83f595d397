// 21_urlpattern.js — URLPattern (URL Pattern Standard). Parsing a pattern
// into one regular expression per URL component, and canonicalising what is
// matched, are the host's (the `urlpattern` crate); the regular expressions
// run here, in V8's RegExp, with the standard's flags ("v", "vi" with
// ignoreCase).
'use strict';

const COMPONENTS = ['protocol', 'username', 'password', 'hostname', 'port', 'pathname', 'search', 'hash'];
// The host's order for an init dictionary: the components, then baseURL.
const INIT_MEMBERS = [...COMPONENTS, 'baseURL'];
// Web IDL reads dictionary members in lexicographic order.
const INIT_READ_ORDER = [...INIT_MEMBERS].sort();

// URLPatternInit → the host's array form (undefined for a missing member).
function initArray(dict) {
  const values = {};
  for (const name of INIT_READ_ORDER) {
    const v = dict[name];
    if (v !== undefined) values[name] = internal.toUSVString(v);
  }
  return INIT_MEMBERS.map((name) => values[name]);
}

// (USVString or URLPatternInit) → [host form, the value for result.inputs].
function convertInput(input) {
  if (input === undefined || input === null || internal.isObject(input)) {
    const dict = internal.toDictionary(input, 'URLPatternInit');
    const array = initArray(dict);
    const copy = {};
    INIT_MEMBERS.forEach((name, i) => { if (array[i] !== undefined) copy[name] = array[i]; });
    return [array, copy];
  }
  const s = internal.toUSVString(input);
  return [s, s];
}

function compile(regexp, ignoreCase) {
  try {
    return new RegExp(regexp, ignoreCase ? 'vi' : 'v');
  } catch (e) {
    throw new TypeError(`URLPattern: invalid regular expression in the pattern: ${e && e.message}`);
  }
}

class URLPattern {
  #components;  // [{ pattern, regexp, names }] in COMPONENTS order
  #hasRegExpGroups;

  // (input = {}, options = {}) or (input, baseURL, options = {}).
  constructor(input = undefined, baseURL = undefined, options = undefined) {
    let base;
    let opts;
    if (arguments.length < 3 && (baseURL === undefined || baseURL === null || internal.isObject(baseURL))) {
      base = undefined;
      opts = internal.toDictionary(baseURL, 'URLPatternOptions');
    } else {
      internal.requireArgs(arguments.length, 1, "Failed to construct 'URLPattern'");
      base = internal.toUSVString(baseURL);
      opts = internal.toDictionary(options, 'URLPatternOptions');
    }
    const ignoreCase = Boolean(opts.ignoreCase);
    const [value] = convertInput(input);
    const parsed = host.urlPatternParse(value, base, ignoreCase);
    this.#hasRegExpGroups = parsed[0];
    this.#components = COMPONENTS.map((_, i) => {
      const [pattern, regexp, names] = parsed[i + 1];
      return { pattern, regexp: compile(regexp, ignoreCase), names };
    });
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#components in self)) throw new TypeError('Illegal invocation');
  }

  // The match of each component of `input`, or null.
  #match(input, baseURL, withBase) {
    const [value, echoed] = convertInput(input);
    const base = withBase ? internal.toUSVString(baseURL) : undefined;
    const parts = host.urlPatternMatchInput(value, base);
    if (parts === null) return null;
    const matches = [];
    for (let i = 0; i < COMPONENTS.length; i++) {
      const m = this.#components[i].regexp.exec(parts[i]);
      if (m === null) return null;
      matches.push(m);
    }
    return { parts, matches, inputs: withBase ? [echoed, base] : [echoed] };
  }

  test(input = undefined, baseURL = undefined) {
    URLPattern.#check(this);
    return this.#match(input, baseURL, arguments.length >= 2 && baseURL !== undefined) !== null;
  }

  exec(input = undefined, baseURL = undefined) {
    URLPattern.#check(this);
    const found = this.#match(input, baseURL, arguments.length >= 2 && baseURL !== undefined);
    if (found === null) return null;
    const result = { inputs: found.inputs };
    COMPONENTS.forEach((name, i) => {
      const groups = {};
      const names = this.#components[i].names;
      const m = found.matches[i];
      for (let g = 0; g < names.length; g++) groups[names[g]] = m[g + 1];
      result[name] = { input: found.parts[i], groups };
    });
    return result;
  }

  get protocol() { URLPattern.#check(this); return this.#components[0].pattern; }
  get username() { URLPattern.#check(this); return this.#components[1].pattern; }
  get password() { URLPattern.#check(this); return this.#components[2].pattern; }
  get hostname() { URLPattern.#check(this); return this.#components[3].pattern; }
  get port() { URLPattern.#check(this); return this.#components[4].pattern; }
  get pathname() { URLPattern.#check(this); return this.#components[5].pattern; }
  get search() { URLPattern.#check(this); return this.#components[6].pattern; }
  get hash() { URLPattern.#check(this); return this.#components[7].pattern; }
  get hasRegExpGroups() { URLPattern.#check(this); return this.#hasRegExpGroups; }
}
internal.enumerableMembers(URLPattern, ['test', 'exec', ...COMPONENTS, 'hasRegExpGroups']);
internal.setToStringTag(URLPattern.prototype, 'URLPattern');

internal.defineGlobal('URLPattern', URLPattern);
