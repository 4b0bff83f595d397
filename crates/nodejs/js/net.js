// node:net as workerd has it: Socket, connect and createConnection over
// `cloudflare:sockets` (every connection its `connect()` with
// secureTransport "starttls", so node:tls can upgrade it), and isIP,
// isIPv4, isIPv6. There is nothing to listen with: Server and
// createServer throw "not implemented", as do the options workerd refuses
// (fd, handle, truthy noDelay and keepAlive, autoSelectFamily).
// Runs as function (host, internal, require, module, exports).

const { Buffer } = require('node:buffer');
const { Duplex } = require('node:stream');
const { codedError, stubs, stubClass } = require('node:internal/errors');

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const IPV4 = new RegExp(`^${OCTET}(?:\\.${OCTET}){3}$`);
const TIMEOUT_MAX = 2 ** 31 - 1;

function isIPv4(input) {
  return typeof input === 'string' && IPV4.test(input);
}

function isIPv6(input) {
  if (typeof input !== 'string' || !input.includes(':')) return false;
  const address = input.replace(/%[0-9A-Za-z._~-]+$/, '');
  if (/[^0-9A-Fa-f:.]/.test(address)) return false;
  try {
    return new URL(`http://[${address}]/`).hostname.startsWith('[');
  } catch {
    return false;
  }
}

function isIP(input) {
  if (isIPv4(input)) return 4;
  if (isIPv6(input)) return 6;
  return 0;
}

const notImplementedOption = (name) => codedError(Error, 'ERR_OPTION_NOT_IMPLEMENTED', `The ${name} option is not implemented`);
const invalidArgValue = (name, value, reason) => codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument '${name}' ${reason}. Received ${String(value)}`);
const socketClosed = () => codedError(Error, 'ERR_SOCKET_CLOSED', 'Socket is closed');
const epipe = () => codedError(Error, 'EPIPE', 'This socket has been ended by the other party');

function validatePort(value) {
  const port = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw codedError(RangeError, 'ERR_SOCKET_BAD_PORT', `Port should be >= 0 and < 65536. Received ${String(value)}.`);
  }
  return port;
}

// [options, callback] from connect()'s forms: (options[, cb]),
// (port[, host][, cb]) and (path[, cb]).
function normalizeArgs(args) {
  let options = {};
  const first = args[0];
  if (first !== null && typeof first === 'object') {
    options = first;
  } else if (typeof first === 'string' && !(Number(first) >= 0)) {
    options = { path: first };
  } else if (first !== undefined) {
    options = { port: first };
    if (typeof args[1] === 'string') options.host = args[1];
  }
  const last = args[args.length - 1];
  return [options, typeof last === 'function' ? last : null];
}

function Socket(options) {
  if (!(this instanceof Socket)) return new Socket(options);
  options = typeof options === 'number' ? { fd: options } : { ...options };
  if (options.objectMode || options.readableObjectMode || options.writableObjectMode) {
    throw invalidArgValue('options.objectMode', true, 'is not supported');
  }
  if (options.handle) throw notImplementedOption('options.handle');
  if (options.fd !== undefined) throw notImplementedOption('options.fd');
  if (options.noDelay) throw notImplementedOption('truthy options.noDelay');
  if (options.keepAlive) throw notImplementedOption('truthy options.keepAlive');
  Duplex.call(this, {
    ...options,
    allowHalfOpen: Boolean(options.allowHalfOpen),
    decodeStrings: false,
    emitClose: false,
    autoDestroy: true,
  });
  this.connecting = false;
  this.timeout = 0;
  this._handle = null;
  this._host = null;
  this._peer = null;
  this._timer = null;
  this._bytesRead = 0;
  this._bytesWritten = 0;
  this._reading = false;
  this.once('end', onEnd);
}

Object.setPrototypeOf(Socket.prototype, Duplex.prototype);
Object.setPrototypeOf(Socket, Duplex);

// After the peer's end without allowHalfOpen, a write fails with EPIPE.
function onEnd() {
  if (this.allowHalfOpen) return;
  this.write = function writeAfterEnd(chunk, encoding, cb) {
    const callback = typeof encoding === 'function' ? encoding : cb;
    const error = epipe();
    queueMicrotask(() => callback?.(error));
    this.destroy(error);
    return false;
  };
}

Socket.prototype.connect = function connect(...args) {
  const [options, callback] = Array.isArray(args[0]) ? args[0] : normalizeArgs(args);
  if (options.path !== undefined) throw notImplementedOption('path');
  if (options.autoSelectFamily) throw invalidArgValue('options.autoSelectFamily', options.autoSelectFamily, 'is not supported');
  if (this.connecting || this._handle) throw codedError(Error, 'ERR_SOCKET_CONNECTING', 'Socket is already connecting');
  if (callback) this.once('connect', callback);
  const host = options.host ?? 'localhost';
  const port = validatePort(options.port ?? 0);
  this.connecting = true;
  const proceed = (address, family) => {
    this._peer = { address, port, family: family === 6 ? 'IPv6' : family === 4 ? 'IPv4' : undefined };
    const target = family === 6 ? `[${address}]` : address;
    this._host = target;
    this.emit('connectionAttempt', target, port, family);
    try {
      open(this, target, port);
    } catch (error) {
      this.destroy(error);
    }
  };
  const family = isIP(host);
  if (family === 0 && typeof options.lookup === 'function') {
    options.lookup(host, { family: options.family, hints: options.hints }, (error, address, found) => {
      this.emit('lookup', error, address, found, host);
      if (error) return this.destroy(error);
      proceed(address, found === 'IPv6' ? 6 : found === 'IPv4' ? 4 : found);
    });
  } else {
    proceed(host, family);
  }
  return this;
};

// The cloudflare:sockets connection under a Socket.
function open(socket, host, port) {
  const { connect } = require('cloudflare:sockets');
  const inner = connect(`${host}:${port}`, { allowHalfOpen: socket.allowHalfOpen, secureTransport: 'starttls' });
  attach(socket, inner);
  inner.opened.then(() => {
    socket.connecting = false;
    refreshTimer(socket);
    socket.emit('connect');
    socket.emit('ready');
    if (!socket.isPaused()) startReading(socket);
  }, (error) => socket.destroy(error));
}

// Makes `inner` (a cloudflare:sockets Socket) the one `socket` reads and
// writes (at connect, and again after a TLS upgrade).
function attach(socket, inner) {
  socket._handle = {
    socket: inner,
    reader: inner.readable.getReader(),
    writer: inner.writable.getWriter(),
  };
  inner.closed.then(() => clearTimeout(socket._timer), (error) => socket.destroy(error));
}

async function startReading(socket) {
  const handle = socket._handle;
  if (!handle || socket._reading || socket.connecting) return;
  socket._reading = true;
  try {
    for (;;) {
      const { value, done } = await handle.reader.read();
      if (socket.destroyed || socket._handle !== handle) return;
      refreshTimer(socket);
      if (done) {
        socket.push(null);
        return;
      }
      if (value.byteLength === 0) continue;
      socket._bytesRead += value.byteLength;
      if (!socket.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength))) return;
    }
  } catch (error) {
    if (socket._handle === handle) socket.destroy(error);
  } finally {
    socket._reading = false;
  }
}

Socket.prototype._read = function _read() {
  if (!this.connecting && this._handle) startReading(this);
};

Socket.prototype._write = function _write(chunk, encoding, callback) {
  this._writeBytes(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk, callback);
};

Socket.prototype._writev = function _writev(chunks, callback) {
  const parts = chunks.map(({ chunk, encoding }) => (typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk));
  this._writeBytes(Buffer.concat(parts), callback);
};

Socket.prototype._writeBytes = function _writeBytes(bytes, callback) {
  if (this.connecting) {
    const onClose = () => callback(codedError(Error, 'ERR_SOCKET_CLOSED_BEFORE_CONNECTION', 'Socket closed before the connection was established'));
    this.once('connect', () => {
      this.off('close', onClose);
      this._writeBytes(bytes, callback);
    });
    this.once('close', onClose);
    return;
  }
  if (!this._handle) return callback(socketClosed());
  refreshTimer(this);
  this._handle.writer.write(bytes).then(() => {
    this._bytesWritten += bytes.byteLength;
    refreshTimer(this);
    callback();
  }, callback);
};

Socket.prototype._final = function _final(callback) {
  if (this.connecting) {
    this.once('connect', () => this._final(callback));
    return;
  }
  if (!this._handle) return callback();
  this._handle.writer.close().then(() => callback(), (error) => {
    // Without allowHalfOpen the peer's end closed the connection (the
    // cloudflare:sockets socket closes its own side then): nothing is left
    // to end, as in Node, where this end is no error.
    if (this._readableState.ended && !this.allowHalfOpen) callback();
    else callback(error);
  });
};

Socket.prototype._destroy = function _destroy(error, callback) {
  clearTimeout(this._timer);
  const handle = this._handle;
  this._handle = null;
  this.connecting = false;
  if (handle) handle.socket.close().catch(() => {});
  callback(error);
  queueMicrotask(() => this.emit('close', error != null));
};

function refreshTimer(socket) {
  if (socket._timer === null) return;
  clearTimeout(socket._timer);
  socket._timer = setTimeout(() => socket.emit('timeout'), socket.timeout);
}

Socket.prototype.setTimeout = function setTimeout_(msecs, callback) {
  if (this.destroyed) return this;
  if (typeof msecs !== 'number' || !(msecs >= 0) || !Number.isFinite(msecs)) {
    throw codedError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "msecs" is out of range. It must be a non-negative finite number. Received ${String(msecs)}`);
  }
  this.timeout = Math.min(msecs, TIMEOUT_MAX);
  clearTimeout(this._timer);
  this._timer = null;
  if (this.timeout === 0) {
    if (callback) this.removeListener('timeout', callback);
  } else {
    this._timer = setTimeout(() => this.emit('timeout'), this.timeout);
    if (callback) this.once('timeout', callback);
  }
  return this;
};

Socket.prototype.setNoDelay = function setNoDelay() { return this; };
Socket.prototype.setKeepAlive = function setKeepAlive() { return this; };
Socket.prototype.ref = function ref() { return this; };
Socket.prototype.unref = function unref() { return this; };
Socket.prototype.resetAndDestroy = function resetAndDestroy() { return this.destroy(); };
Socket.prototype.address = function address() {
  return this.destroyed || !this._handle ? {} : { address: '0.0.0.0', port: 0, family: 'IPv4' };
};

Object.defineProperties(Socket.prototype, {
  pending: { get() { return !this._handle || this.connecting; }, configurable: true },
  readyState: {
    get() {
      if (this.connecting) return 'opening';
      if (this.readable && this.writable) return 'open';
      if (this.readable) return 'readOnly';
      if (this.writable) return 'writeOnly';
      return 'closed';
    },
    configurable: true,
  },
  bytesRead: { get() { return this._bytesRead; }, configurable: true },
  bytesWritten: { get() { return this._bytesWritten; }, configurable: true },
  bufferSize: { get() { return this._handle ? this.writableLength : undefined; }, configurable: true },
  remoteAddress: { get() { return this._handle ? this._peer?.address : undefined; }, configurable: true },
  remotePort: { get() { return this._handle ? this._peer?.port : undefined; }, configurable: true },
  remoteFamily: { get() { return this._handle ? this._peer?.family : undefined; }, configurable: true },
  localAddress: { get() { return '0.0.0.0'; }, configurable: true },
  localPort: { get() { return 0; }, configurable: true },
  localFamily: { get() { return 'IPv4'; }, configurable: true },
});

function connect(...args) {
  const [options, callback] = normalizeArgs(args);
  const socket = new Socket(options);
  if (options.timeout) socket.setTimeout(options.timeout);
  return socket.connect([options, callback]);
}

function setDefaultAutoSelectFamily(value) {
  if (value) throw invalidArgValue('value', value, 'is not supported');
}

// For node:tls: the connection under a connected Socket, and a way to put
// another (its TLS upgrade) in its place.
internal.netSocketAttach = attach;
internal.netSocketStartReading = startReading;

module.exports = {
  isIP,
  isIPv4,
  isIPv6,
  Socket,
  Stream: Socket,
  connect,
  createConnection: connect,
  getDefaultAutoSelectFamily: () => false,
  setDefaultAutoSelectFamily,
  getDefaultAutoSelectFamilyAttemptTimeout: () => 0,
  setDefaultAutoSelectFamilyAttemptTimeout: () => {},
  ...stubs('net', ['createServer']),
  Server: stubClass('net.Server'),
  BlockList: stubClass('net.BlockList'),
  SocketAddress: stubClass('net.SocketAddress'),
};
