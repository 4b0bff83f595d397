// node:internal/http_server — node:http's server as workerd has it (under
// enable_nodejs_http_server_modules; else its classes throw "not
// implemented"): there are no sockets. `listen(port)` registers the server
// under a port number of the isolate, and cloudflare:node's
// `httpServerHandler({ port })` hands the Worker's requests to the server
// listening there: each Request becomes an IncomingMessage, and the
// ServerResponse the 'request' listeners write becomes the Response — its
// head when the headers are sent, its body streamed as it is written.
// Runs as function (host, internal, require, module, exports).

const EventEmitter = require('node:events');
const { Buffer } = require('node:buffer');
const { codedError, notImplemented } = require('node:internal/errors');
const client = require('node:internal/http_client');

// The servers listening, by port (one isolate's).
const ports = new Map();
// The first port `listen(0)` tries.
const FIRST_FREE_PORT = 1024;

function checkEnabled(what) {
  if (!host.nodeHttpServer()) notImplemented(what)();
}

// The port of `listen`'s arguments (`(port, host?, backlog?, cb?)` or
// `({ port }, cb?)`) and its callback.
function listenArgs(args) {
  let port = 0;
  let callback = null;
  for (const arg of args) {
    if (typeof arg === 'function') callback = arg;
    else if (arg !== null && typeof arg === 'object') port = arg.port ?? 0;
  }
  if (typeof args[0] === 'number' || typeof args[0] === 'string') port = args[0];
  const number = Number(port);
  if (!Number.isInteger(number) || number < 0 || number > 65535 || port === '') {
    throw codedError(RangeError, 'ERR_SOCKET_BAD_PORT', `options.port should be >= 0 and < 65536. Received ${String(port)}.`);
  }
  return [number, callback];
}

class Server extends EventEmitter {
  #port = null;

  constructor(options, listener) {
    checkEnabled('http.Server');
    super();
    if (typeof options === 'function') listener = options;
    if (typeof listener === 'function') this.on('request', listener);
    this.timeout = 0;
    this.keepAliveTimeout = 5000;
    this.requestTimeout = 0;
    this.headersTimeout = 0;
    this.maxHeadersCount = null;
    this.maxRequestsPerSocket = 0;
  }

  listen(...args) {
    let [port, callback] = listenArgs(args);
    if (this.#port !== null || ports.has(port)) {
      throw codedError(Error, 'ERR_SERVER_ALREADY_LISTEN', 'Listen method has been called more than once without closing.');
    }
    if (port === 0) {
      port = FIRST_FREE_PORT;
      while (ports.has(port)) port += 1;
    }
    this.#port = port;
    ports.set(port, this);
    if (callback !== null) this.once('listening', callback);
    queueMicrotask(() => this.emit('listening'));
    return this;
  }

  close(callback) {
    if (this.#port !== null) {
      ports.delete(this.#port);
      this.#port = null;
    }
    if (typeof callback === 'function') this.once('close', callback);
    queueMicrotask(() => this.emit('close'));
    return this;
  }

  address() {
    return this.#port === null ? null : { port: this.#port, family: 'IPv4', address: '127.0.0.1' };
  }

  get listening() {
    return this.#port !== null;
  }

  setTimeout(msecs, callback) {
    if (typeof msecs === 'function') callback = msecs;
    else if (typeof msecs === 'number') this.timeout = msecs;
    if (typeof callback === 'function') this.once('timeout', callback);
    return this;
  }

  getConnections(callback) {
    if (typeof callback === 'function') queueMicrotask(() => callback(null, 0));
    return this;
  }

  closeAllConnections() {}

  closeIdleConnections() {}

  ref() { return this; }

  unref() { return this; }
}

// Resolves a ServerResponse's Response (its head sent), or rejects.
const ANSWER = Symbol('answer');

class ServerResponse extends client.OutgoingMessage {
  #resolve;
  #reject;
  #writer = null;

  constructor(req) {
    checkEnabled('http.ServerResponse');
    super();
    this.req = req;
    this.statusCode = 200;
    this.statusMessage = undefined;
    this.sendDate = true;
    this.finished = false;
    this[ANSWER] = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  writeHead(statusCode, message, headers) {
    if (this.headersSent) {
      throw codedError(Error, 'ERR_HTTP_HEADERS_SENT', 'Cannot write headers after they are sent to the client');
    }
    if (typeof message !== 'string') {
      headers = message;
      message = undefined;
    }
    const code = Number(statusCode);
    if (!Number.isInteger(code) || code < 100 || code > 999) {
      throw codedError(RangeError, 'ERR_HTTP_INVALID_STATUS_CODE', `Invalid status code: ${statusCode}`);
    }
    this.statusCode = code;
    if (message !== undefined) this.statusMessage = message;
    if (Array.isArray(headers)) {
      const pairs = Array.isArray(headers[0]) ? headers : headers.flatMap((v, i) => (i % 2 ? [] : [[v, headers[i + 1]]]));
      for (const [name, value] of pairs) this.appendHeader(name, value);
    } else if (headers !== null && typeof headers === 'object') {
      for (const [name, value] of Object.entries(headers)) this.setHeader(name, value);
    }
    this.#sendHead();
    return this;
  }

  // The Response's head: status, headers, and a body stream unless the
  // status or the method has none.
  #sendHead() {
    if (this.headersSent) return;
    this.headersSent = true;
    const status = this.statusCode;
    const bodiless = status === 204 || status === 304 || status < 200 || this.req.method === 'HEAD';
    let body = null;
    if (!bodiless) {
      const { readable, writable } = new TransformStream();
      this.#writer = writable.getWriter();
      body = readable;
    }
    const headers = new Headers();
    for (const [name, value] of this._headerPairs()) headers.append(name, value);
    const statusText = this.statusMessage ?? require('node:http').STATUS_CODES[status] ?? '';
    this.#resolve(new Response(body, { status, statusText, headers }));
  }

  _write(chunk, encoding, callback) {
    this.#sendHead();
    if (this.#writer === null) {
      callback();
      return;
    }
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#writer.write(view).then(() => callback(), callback);
  }

  _final(callback) {
    this.#sendHead();
    this.finished = true;
    if (this.#writer === null) {
      callback();
      return;
    }
    this.#writer.close().then(() => callback(), callback);
  }

  _destroy(error, callback) {
    if (!this.headersSent) this.#reject(error ?? new Error('The response was destroyed before it was sent'));
    else if (this.#writer !== null) this.#writer.abort(error).catch(() => {});
    callback(error);
  }

  writeContinue() {
    notImplemented('ServerResponse.writeContinue')();
  }

  assignSocket() {
    notImplemented('ServerResponse.assignSocket')();
  }
}

// The connection a request came on, as Node-style code reads it (there is
// none: requests are fetches). An EventEmitter, as on-finished (under
// Express's body parsers and final handler) listens on it and takes a
// request whose socket is not `readable` as finished, so its body unread:
// readable and writable while the request is, its addresses from the
// request's headers and `port`.
function requestSocket(incoming, request, port) {
  const socket = new EventEmitter();
  const remote = request.headers.get('cf-connecting-ip') ?? '127.0.0.1';
  const live = (value) => () => (incoming.destroyed ? undefined : value);
  Object.defineProperties(socket, {
    encrypted: { value: new URL(request.url).protocol === 'https:', configurable: true },
    readable: { get: () => incoming.readable, configurable: true },
    writable: { get: () => !incoming.destroyed, configurable: true },
    remoteAddress: { get: live(remote), configurable: true },
    remoteFamily: { get: live(remote.includes(':') ? 'IPv6' : 'IPv4'), configurable: true },
    remotePort: { get: live(0), configurable: true },
    localAddress: { value: '127.0.0.1', configurable: true },
    localPort: { value: port, configurable: true },
    destroy: { value: (error) => incoming.destroy(error), configurable: true },
    setTimeout: { value: () => socket, configurable: true },
    setNoDelay: { value: () => socket, configurable: true },
    setKeepAlive: { value: () => socket, configurable: true },
  });
  return socket;
}

// The Response of the server listening on `port` to the Worker's
// `request` (cloudflare:node's httpServerHandler).
function respond(port, request) {
  const server = ports.get(port);
  if (server === undefined) {
    throw new Error(`No HTTP server is listening on port ${port}; call server.listen(${port}) first`);
  }
  const incoming = new client.IncomingMessage(null);
  incoming.socket = requestSocket(incoming, request, port);
  incoming[client.REQUEST](request);
  const response = new ServerResponse(incoming);
  server.emit('request', incoming, response);
  return response[ANSWER];
}

function createServer(options, listener) {
  checkEnabled('http.createServer');
  return new Server(options, listener);
}

module.exports = { Server, ServerResponse, createServer, respond, ports };
