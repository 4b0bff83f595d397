// 12_response.js — Response (Fetch Standard, as workerd has it).
'use strict';

const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;
const kHost = Symbol('host');

function toStatus(v) {
  const n = internal.toNumber(v);
  // Web IDL unsigned short
  return Number.isFinite(n) ? ((Math.trunc(n) % 65536) + 65536) % 65536 : 0;
}

class Response {
  #type = 'default';
  #status = 200;
  #statusText = '';
  #headers;
  #body = null;
  #url = '';
  #redirected = false;
  #webSocket = null;

  constructor(body = null, init = undefined) {
    if (body === kHost) return;
    const opts = internal.toDictionary(init, 'ResponseInit');
    const status = opts.status === undefined ? 200 : toStatus(opts.status);
    // A WebSocket handshake (workerd): status 101 with the client end of a
    // WebSocketPair (26_websocket.js), and only then.
    const webSocket = opts.webSocket ?? null;
    if (webSocket !== null) {
      if (!internal.isWebSocket(webSocket)) throw new TypeError("Failed to construct 'Response': member webSocket is not of type WebSocket.");
      if (status !== 101) throw new RangeError('Responses with a webSocket must have status 101.');
      this.#webSocket = webSocket;
    } else if (status < 200 || status > 599) {
      throw new RangeError('Responses may only be constructed with status codes in the range 200 to 599, inclusive.');
    }
    let statusText = '';
    if (opts.statusText !== undefined) {
      statusText = internal.toByteString(opts.statusText, 'statusText');
      if (!REASON_PHRASE.test(statusText)) throw new TypeError('Invalid statusText.');
    }
    this.#status = status;
    this.#statusText = statusText;
    this.#headers = opts.headers === undefined ? new Headers() : new Headers(opts.headers);
    if (body !== null && body !== undefined) {
      if (NULL_BODY_STATUS.has(status)) {
        throw new TypeError(`Response with null body status (${status}) cannot have a body.`);
      }
      const { inner, type } = internal.extractBody(body);
      this.#body = inner;
      if (type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', type);
    }
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#status in self)) throw new TypeError('Illegal invocation');
  }

  get type() { Response.#check(this); return this.#type; }
  get url() { Response.#check(this); return this.#url; }
  get redirected() { Response.#check(this); return this.#redirected; }
  get status() { Response.#check(this); return this.#status; }
  get ok() { Response.#check(this); return this.#status >= 200 && this.#status <= 299; }
  get statusText() { Response.#check(this); return this.#statusText; }
  get headers() { Response.#check(this); return this.#headers; }
  get webSocket() { Response.#check(this); return this.#webSocket; }
  get cf() { Response.#check(this); return undefined; }

  clone() {
    Response.#check(this);
    if (this.#body !== null && this.#body.unusable) throw new TypeError(internal.BODY_USED_MESSAGE);
    const r = new Response(kHost);
    r.#type = this.#type;
    r.#status = this.#status;
    r.#statusText = this.#statusText;
    r.#headers = internal.headersCopy(this.#headers, internal.headersGuard(this.#headers));
    r.#body = this.#body === null ? null : this.#body.clone();
    r.#url = this.#url;
    r.#redirected = this.#redirected;
    return r;
  }

  static error() {
    const r = new Response(kHost);
    r.#type = 'error';
    r.#status = 0;
    r.#headers = internal.headersFromList([], 'immutable');
    return r;
  }

  static redirect(url, status = 302) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'redirect' on 'Response'");
    const s = internal.toUSVString(url);
    const parsed = internal.parseURL(s);
    if (parsed === null) throw new TypeError(`Invalid URL: ${s}`);
    const code = toStatus(status);
    if (!REDIRECT_STATUS.has(code)) throw new RangeError(`${code} is not a redirect status.`);
    const r = new Response(kHost);
    r.#status = code;
    r.#headers = internal.headersFromList(['location', parsed[0]], 'immutable');
    return r;
  }

  static json(data, init = undefined) {
    const text = JSON.stringify(data);
    if (text === undefined) throw new TypeError('The data is not JSON serializable.');
    const r = new Response(null, init);
    if (NULL_BODY_STATUS.has(r.#status)) {
      throw new TypeError(`Response with null body status (${r.#status}) cannot have a body.`);
    }
    r.#body = internal.extractBody(text).inner;
    if (!r.#headers.has('content-type')) r.#headers.append('content-type', 'application/json');
    return r;
  }

  static {
    internal.isResponse = (v) => internal.isObject(v) && #status in v;
    internal.responseParts = (r) => ({ type: r.#type, status: r.#status, statusText: r.#statusText, headers: r.#headers, body: r.#body, webSocket: r.#webSocket });
    // A response from host.fetch: headers immutable, body streamed from the host.
    // A fetch's answer: `res` as host.fetch resolves it (HOST.md), or for a
    // data: URL the same shape with the whole body in `bytes`.
    internal.responseFromHost = (res) => {
      const r = new Response(kHost);
      r.#type = 'basic';
      r.#status = res.status;
      r.#statusText = res.statusText;
      r.#headers = internal.headersFromList(res.headers, 'immutable');
      if (res.bodyId) r.#body = internal.newBodyFromStream(internal.streamFromHostBody(res.bodyId));
      else if (res.bytes !== undefined) r.#body = internal.newBodyFromBytes(res.bytes);
      r.#url = res.url;
      r.#redirected = res.redirected;
      if (res.passedWebSocket) r.#webSocket = res.passedWebSocket;
      else if (res.webSocket) r.#webSocket = internal.outboundWebSocket(res.webSocket, res.url);
      return r;
    };
    internal.installBody(Response, (self) => { Response.#check(self); return self.#body; }, (self) => self.#headers);
  }
}
internal.enumerableMembers(Response, ['type', 'url', 'redirected', 'status', 'ok', 'statusText', 'headers', 'webSocket', 'cf', 'clone'], 'Response');

internal.defineGlobal('Response', Response);
