// node:internal/http_client — node:http's and node:https' client as workerd
// has it: a ClientRequest is a Writable whose body is gathered until
// `end()`, then sent as one `fetch` of the Worker (its egress policy and
// subrequest limit apply; redirects are not followed, as in Node); the
// answer is an IncomingMessage, a Readable of the response body. No
// sockets: `createConnection`, `lookup`, `socketPath` and `maxHeaderSize`
// throw ERR_OPTION_NOT_IMPLEMENTED, as in workerd. Runs as function (host,
// internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { Readable, Writable } = require('node:stream');
const { urlToHttpOptions } = require('node:url');
const { codedError, invalidArgType } = require('node:internal/errors');

const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_PATH = /[^\u0021-\u00ff]/;
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function checkHeaderName(name) {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    throw codedError(TypeError, 'ERR_INVALID_HTTP_TOKEN', `Header name must be a valid HTTP token ["${name}"]`);
  }
}

function checkHeaderValue(name, value) {
  if (value === undefined) throw codedError(TypeError, 'ERR_HTTP_INVALID_HEADER_VALUE', `Invalid value "${value}" for header "${name}"`);
  if (INVALID_VALUE.test(String(value))) throw codedError(TypeError, 'ERR_INVALID_CHAR', `Invalid character in header content ["${name}"]`);
}

const notImplementedOption = (name) => codedError(Error, 'ERR_OPTION_NOT_IMPLEMENTED', `The ${name} option is not implemented`);

// What ClientRequest and ServerResponse-like writers share: headers kept by
// lowercase name until they are sent.
class OutgoingMessage extends Writable {
  #headers = new Map();

  constructor(options) {
    super(options);
    this.headersSent = false;
  }

  setHeader(name, value) {
    if (this.headersSent) throw codedError(Error, 'ERR_HTTP_HEADERS_SENT', 'Cannot set headers after they are sent to the client');
    checkHeaderName(name);
    checkHeaderValue(name, value);
    this.#headers.set(name.toLowerCase(), [name, Array.isArray(value) ? value.map(String) : String(value)]);
    return this;
  }

  appendHeader(name, value) {
    const old = this.getHeader(name);
    if (old === undefined) return this.setHeader(name, value);
    return this.setHeader(name, [].concat(old, value));
  }

  getHeader(name) { return this.#headers.get(String(name).toLowerCase())?.[1]; }

  hasHeader(name) { return this.#headers.has(String(name).toLowerCase()); }

  removeHeader(name) {
    if (this.headersSent) throw codedError(Error, 'ERR_HTTP_HEADERS_SENT', 'Cannot remove headers after they are sent to the client');
    this.#headers.delete(String(name).toLowerCase());
  }

  getHeaderNames() { return [...this.#headers.keys()]; }

  getRawHeaderNames() { return [...this.#headers.values()].map(([name]) => name); }

  getHeaders() {
    const out = Object.create(null);
    for (const [key, [, value]] of this.#headers) out[key] = value;
    return out;
  }

  // [name, value] pairs for fetch (an array value is one header each).
  _headerPairs() {
    const pairs = [];
    for (const [name, value] of this.#headers.values()) {
      for (const item of [].concat(value)) pairs.push([name, item]);
    }
    return pairs;
  }

  flushHeaders() {}
}

// Marks the client's use of an IncomingMessage: the answer to its fetch.
const RESPONSE = Symbol('response');
// Marks the server's: the Worker's request (`http_server.js`).
const REQUEST = Symbol('request');

// An incoming message as Node makes one, `new IncomingMessage(socket)`
// (frameworks subclass it to hand a request to Node-style code), and the
// client's answer: a Readable of the fetch Response's body, read as the
// reader asks.
class IncomingMessage extends Readable {
  #reader = null;

  constructor(socket) {
    super();
    this.socket = socket ?? null;
    this.httpVersion = '1.1';
    this.httpVersionMajor = 1;
    this.httpVersionMinor = 1;
    this.complete = false;
    this.aborted = false;
    this.url = '';
    this.method = null;
    this.trailers = {};
    this.rawTrailers = [];
    this.statusCode = null;
    this.statusMessage = null;
    this.headers = {};
    this.rawHeaders = [];
  }

  // The client's answer: the fetch Response's status, headers and body.
  [RESPONSE](response) {
    this.statusCode = response.status;
    this.statusMessage = response.statusText;
    for (const [name, value] of response.headers) {
      if (name === 'set-cookie') continue;
      this.headers[name] = value;
      this.rawHeaders.push(name, value);
    }
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) {
      this.headers['set-cookie'] = cookies;
      for (const cookie of cookies) this.rawHeaders.push('set-cookie', cookie);
    }
    this.#reader = response.body === null ? null : response.body.getReader();
    return this;
  }

  // The server's request: the Worker's Request, its method, path, headers
  // (`host` once, as Node has it) and body.
  [REQUEST](request) {
    const url = new URL(request.url);
    this.method = request.method;
    this.url = url.pathname + url.search;
    for (const [name, value] of request.headers) {
      const one = name === 'host' ? value.split(', ', 1)[0] : value;
      this.headers[name] = one;
      this.rawHeaders.push(name, one);
    }
    this.#reader = request.body === null ? null : request.body.getReader();
    return this;
  }

  // Node's older name for the socket.
  get connection() {
    return this.socket;
  }

  set connection(socket) {
    this.socket = socket;
  }

  get headersDistinct() {
    const out = {};
    for (const [name, value] of Object.entries(this.headers)) out[name] = [].concat(value);
    return out;
  }

  _read() {
    if (this.#reader === null) {
      this.complete = true;
      this.push(null);
      return;
    }
    this.#reader.read().then(({ done, value }) => {
      if (done) {
        this.complete = true;
        this.push(null);
      } else {
        this.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
      }
    }, (error) => this.destroy(error));
  }

  _destroy(error, callback) {
    if (this.#reader !== null && !this.complete) {
      this.aborted = true;
      this.#reader.cancel().catch(() => {});
    }
    callback(error);
  }

  setTimeout(msecs, callback) {
    if (callback) this.once('timeout', callback);
    return this;
  }
}

// The request's options from Node's (url | options, options?, callback?)
// forms; [options, callback].
function requestOptions(input, options, callback) {
  let base = null;
  if (typeof input === 'string') base = urlToHttpOptions(new URL(input));
  else if (input instanceof URL) base = urlToHttpOptions(input);
  else { callback = options; options = input; }
  if (typeof options === 'function') { callback = options; options = {}; }
  return [{ ...(base ?? {}), ...(options ?? {}) }, callback];
}

class ClientRequest extends OutgoingMessage {
  #body = [];
  #controller = new AbortController();
  #timer = null;

  constructor(input, options, callback, defaultAgent) {
    // Not destroyed at 'finish': the fetch goes on until the answer.
    super({ autoDestroy: false, emitClose: false });
    const [opts, cb] = requestOptions(input, options, callback);
    const agent = opts.agent === false || opts.agent == null ? (opts._defaultAgent || defaultAgent) : opts.agent;
    if (typeof agent !== 'object' || agent === null) throw invalidArgType('options.agent', 'an Agent-like Object, undefined, or false', opts.agent);
    this.agent = agent;
    const protocol = opts.protocol || agent.protocol;
    if (protocol !== agent.protocol) {
      throw codedError(TypeError, 'ERR_INVALID_PROTOCOL', `Protocol "${protocol}" not supported. Expected "${agent.protocol}"`);
    }
    for (const name of ['createConnection', 'lookup', 'socketPath', 'maxHeaderSize']) {
      if (opts[name] !== undefined) throw notImplementedOption(`options.${name}`);
    }
    if (opts.path && INVALID_PATH.test(opts.path)) throw codedError(TypeError, 'ERR_UNESCAPED_CHARACTERS', 'Request path contains unescaped characters');
    const method = opts.method == null ? 'GET' : opts.method;
    if (typeof method !== 'string') throw invalidArgType('options.method', 'of type string', method);
    if (!TOKEN.test(method)) throw codedError(TypeError, 'ERR_INVALID_HTTP_TOKEN', `Method must be a valid HTTP token ["${method}"]`);
    this.method = method.toUpperCase();
    this.protocol = protocol;
    this.host = opts.hostname || opts.host || 'localhost';
    const defaultPort = opts.defaultPort || agent.defaultPort;
    this.port = String(opts.port || defaultPort);
    this.path = opts.path || '/';
    this.aborted = false;
    this.finished = false;
    this.reusedSocket = false;
    this.maxHeadersCount = null;
    const headers = opts.headers;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) this.appendHeader(headers[i], headers[i + 1]);
    } else if (headers != null) {
      for (const [name, value] of Object.entries(headers)) this.setHeader(name, value);
    }
    if (opts.auth && !this.hasHeader('authorization')) {
      this.setHeader('Authorization', `Basic ${Buffer.from(opts.auth).toString('base64')}`);
    }
    if (opts.timeout !== undefined) this.setTimeout(opts.timeout);
    if (opts.signal) {
      const abort = () => this.destroy(codedError(Error, 'ABORT_ERR', 'The operation was aborted'));
      if (opts.signal.aborted) queueMicrotask(abort);
      else opts.signal.addEventListener('abort', abort, { once: true });
    }
    if (cb) this.once('response', cb);
  }

  _write(chunk, encoding, callback) {
    this.#body.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
    callback();
  }

  _final(callback) {
    this.finished = true;
    this.#send();
    callback();
  }

  #send() {
    const hostname = this.host.includes(':') && !this.host.startsWith('[') ? `[${this.host}]` : this.host;
    const url = `${this.protocol}//${hostname}:${this.port}${this.path}`;
    const withBody = this.method !== 'GET' && this.method !== 'HEAD';
    this.headersSent = true;
    fetch(url, {
      method: this.method,
      headers: this._headerPairs(),
      body: withBody ? Buffer.concat(this.#body) : null,
      redirect: 'manual',
      signal: this.#controller.signal,
    }).then((response) => {
      if (this.destroyed) return;
      this.res = new IncomingMessage()[RESPONSE](response);
      this.res.req = this;
      if (!this.emit('response', this.res)) this.res.resume();
      this.res.on('end', () => { this.#clearTimer(); this.emit('close'); });
    }, (error) => {
      this.#clearTimer();
      if (!this.destroyed) this.destroy(error);
    });
    this.#body = [];
  }

  #clearTimer() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }

  setTimeout(msecs, callback) {
    if (typeof msecs !== 'number' || msecs < 0) throw invalidArgType('msecs', 'a non-negative number', msecs);
    this.#clearTimer();
    if (callback) this.once('timeout', callback);
    if (msecs > 0) {
      this.#timer = setTimeout(() => {
        this.emit('timeout');
        if (this.res) this.res.emit('timeout');
      }, msecs);
    }
    return this;
  }

  abort() {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
    this.destroy();
  }

  _destroy(error, callback) {
    this.#clearTimer();
    this.#controller.abort();
    if (this.res && !this.res.destroyed) this.res.destroy();
    callback(error);
  }

  setNoDelay() {}

  setSocketKeepAlive() {}
}

// request(url | options[, options][, callback]) and get (a request,
// ended) of node:http or node:https, whose Agent is `defaultAgent`.
function requester(defaultAgent) {
  const request = (input, options, callback) => new ClientRequest(input, options, callback, defaultAgent);
  const get = (input, options, callback) => {
    const req = request(input, options, callback);
    req.end();
    return req;
  };
  return { request, get };
}

module.exports = { OutgoingMessage, IncomingMessage, ClientRequest, requester, REQUEST };
