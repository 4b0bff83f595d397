// 11_request.js — Request (Fetch Standard, as workerd has it).
'use strict';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Methods normalised to upper case (the Fetch Standard's six plus PATCH, as workerd does).
const NORMALIZED = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH']);
const FORBIDDEN = new Set(['CONNECT', 'TRACE', 'TRACK']);
const REDIRECTS = new Set(['follow', 'manual', 'error']);
const kHost = Symbol('host');
// RequestInit enums the runtime keeps no state for: their values are still
// checked, as Web IDL converts them (Fetch Standard).
const CACHES = new Set(['default', 'no-store', 'reload', 'no-cache', 'force-cache', 'only-if-cached']);
const CREDENTIALS = new Set(['omit', 'same-origin', 'include']);
const MODES = new Set(['navigate', 'same-origin', 'no-cors', 'cors']);
const REFERRER_POLICIES = new Set(['', 'no-referrer', 'no-referrer-when-downgrade', 'same-origin', 'origin',
  'strict-origin', 'origin-when-cross-origin', 'strict-origin-when-cross-origin', 'unsafe-url']);
const CORS_SAFELISTED_METHODS = new Set(['GET', 'HEAD', 'POST']);

function enumMember(opts, name, values, type) {
  const v = opts[name];
  if (v === undefined) return undefined;
  const s = internal.toDOMString(v);
  if (!values.has(s)) {
    throw new TypeError(`Failed to construct 'Request': The provided value '${s}' is not a valid enum value of type ${type}.`);
  }
  return s;
}

// The Fetch Standard's checks on RequestInit members Isolane accepts but does
// not act on (`new Request` steps on window, referrer, mode and cache; WPT
// fetch/api/request/request-error.any.js). `method` is the request's
// method once init's has been applied.
function checkUnusedInit(opts, method) {
  const cache = enumMember(opts, 'cache', CACHES, 'RequestCache');
  enumMember(opts, 'credentials', CREDENTIALS, 'RequestCredentials');
  const mode = enumMember(opts, 'mode', MODES, 'RequestMode');
  enumMember(opts, 'referrerPolicy', REFERRER_POLICIES, 'ReferrerPolicy');
  if (opts.window !== undefined && opts.window !== null) {
    throw new TypeError("Failed to construct 'Request': 'window' must be null.");
  }
  if (opts.referrer !== undefined) {
    const referrer = internal.toUSVString(opts.referrer);
    // a worker has no base URL: the referrer must be absolute
    if (referrer !== '' && internal.parseURL(referrer) === null) {
      throw new TypeError(`Failed to construct 'Request': Referrer '${referrer}' is not a valid URL.`);
    }
  }
  if (mode === 'navigate') throw new TypeError("Failed to construct 'Request': Cannot construct a Request with a RequestInit whose mode member is set as 'navigate'.");
  if (cache === 'only-if-cached' && mode !== 'same-origin') {
    throw new TypeError("Failed to construct 'Request': 'only-if-cached' can be set only with 'same-origin' mode");
  }
  if (mode === 'no-cors' && !CORS_SAFELISTED_METHODS.has(method)) {
    throw new TypeError(`Failed to construct 'Request': '${method}' is unsupported in no-cors mode.`);
  }
}

function normalizeMethod(m) {
  m = internal.toByteString(m, 'Method');
  if (!TOKEN.test(m)) throw new TypeError(`Invalid HTTP method string: ${m}`);
  const upper = m.toUpperCase();
  if (FORBIDDEN.has(upper)) throw new TypeError(`Invalid HTTP method string: ${m}`);
  return NORMALIZED.has(upper) ? upper : m;
}

class Request {
  #method = 'GET';
  #url;
  // A Headers, or (an incoming request's, until first read) the host's
  // header block, `name\0value\0…`: many workers never read their request's
  // headers, and the map is built only for those that do (Request.#headersOf).
  #headers;
  #body = null;
  #signal;
  #redirect = 'follow';
  #cf = undefined;

  constructor(input, init = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'Request'");
    if (input === kHost) return; // filled by internal.requestFromHost
    const opts = internal.toDictionary(init, 'RequestInit');
    let inputReq = null;
    let signal = null;
    if (internal.isRequest(input)) {
      inputReq = input;
      this.#url = input.#url;
      this.#method = input.#method;
      this.#redirect = input.#redirect;
      this.#cf = input.#cf;
      signal = input.#signal;
    } else {
      const s = internal.toUSVString(input);
      const parsed = internal.parseURL(s);
      if (parsed === null) throw new TypeError(`Invalid URL: ${s}`);
      // [href, origin, protocol, username, password, …]
      if (parsed[3] !== '' || parsed[4] !== '') {
        throw new TypeError(`Failed to construct 'Request': Request cannot be constructed from a URL that includes credentials: ${s}`);
      }
      this.#url = parsed[0];
    }
    if (opts.method !== undefined) this.#method = normalizeMethod(opts.method);
    if (init !== undefined && init !== null) checkUnusedInit(opts, this.#method);
    if (opts.redirect !== undefined) {
      const r = internal.toDOMString(opts.redirect);
      if (!REDIRECTS.has(r)) {
        throw new TypeError(`Failed to construct 'Request': The provided value '${r}' is not a valid enum value of type RequestRedirect.`);
      }
      this.#redirect = r;
    }
    if ('signal' in opts) {
      if (opts.signal === null || opts.signal === undefined) {
        if (opts.signal === null) signal = null;
      } else if (!internal.isAbortSignal(opts.signal)) {
        throw new TypeError("Failed to construct 'Request': member signal is not of type AbortSignal.");
      } else {
        signal = opts.signal;
      }
    }
    if (opts.cf !== undefined) this.#cf = opts.cf;
    this.#signal = signal === null ? internal.newAbortSignal() : AbortSignal.any([signal]);
    if (opts.headers !== undefined) {
      this.#headers = new Headers(opts.headers);
    } else if (inputReq !== null) {
      this.#headers = internal.headersCopy(Request.#headersOf(inputReq), 'none');
    } else {
      this.#headers = new Headers();
    }
    const initBody = opts.body;
    const hasInitBody = initBody !== undefined && initBody !== null;
    if ((hasInitBody || (inputReq !== null && inputReq.#body !== null)) && (this.#method === 'GET' || this.#method === 'HEAD')) {
      throw new TypeError('Request with a GET or HEAD method cannot have a body.');
    }
    if (hasInitBody) {
      const { inner, type } = internal.extractBody(initBody);
      this.#body = inner;
      if (type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', type);
    } else if (inputReq !== null && inputReq.#body !== null) {
      this.#body = inputReq.#body.take();
    }
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#url in self)) throw new TypeError('Illegal invocation');
  }

  static #headersOf(r) {
    const h = r.#headers;
    if (typeof h !== 'string') return h;
    return (r.#headers = internal.headersFromList(h.split('\0'), 'immutable'));
  }

  get method() { Request.#check(this); return this.#method; }
  get url() { Request.#check(this); return this.#url; }
  get headers() { Request.#check(this); return Request.#headersOf(this); }
  get redirect() { Request.#check(this); return this.#redirect; }
  get signal() { Request.#check(this); return this.#signal; }
  get cf() { Request.#check(this); return this.#cf; }
  get integrity() { Request.#check(this); return ''; }
  get keepalive() { Request.#check(this); return false; }

  clone() {
    Request.#check(this);
    if (this.#body !== null && this.#body.unusable) throw new TypeError(internal.BODY_USED_MESSAGE);
    const r = new Request(kHost);
    r.#method = this.#method;
    r.#url = this.#url;
    const headers = Request.#headersOf(this);
    r.#headers = internal.headersCopy(headers, internal.headersGuard(headers));
    r.#body = this.#body === null ? null : this.#body.clone();
    r.#signal = this.#signal;
    r.#redirect = this.#redirect;
    r.#cf = this.#cf;
    return r;
  }

  static {
    internal.isRequest = (v) => internal.isObject(v) && #url in v;
    internal.requestSignal = (r) => r.#signal;
    internal.requestParts = (r) => ({ method: r.#method, url: r.#url, headers: Request.#headersOf(r), body: r.#body, signal: r.#signal, redirect: r.#redirect });
    // An incoming request: headers immutable, body streamed from the host.
    internal.requestFromHost = (method, url, headerBlock, bodyId) => {
      const r = new Request(kHost);
      r.#method = method;
      r.#url = url;
      r.#headers = headerBlock;
      r.#body = bodyId ? internal.newBodyFromStream(internal.streamFromHostBody(bodyId)) : null;
      r.#signal = internal.newAbortSignal();
      return r;
    };
    internal.installBody(Request, (self) => { Request.#check(self); return self.#body; }, (self) => Request.#headersOf(self));
  }
}
internal.enumerableMembers(Request, ['method', 'url', 'headers', 'redirect', 'signal', 'cf', 'integrity', 'keepalive', 'clone'], 'Request');

internal.defineGlobal('Request', Request);
