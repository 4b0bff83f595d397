// node:tls as far as workerd has it: connect() and TLSSocket, a node:net
// Socket whose cloudflare:sockets connection is upgraded with startTls()
// (the server's certificate checked for `servername`, else `host`, against
// the roots fetch trusts): as soon as it opens, or, with `options.socket`,
// a connected node:net Socket of the caller's (STARTTLS), which gives its
// connection up to the TLSSocket. Servers, secure contexts and client
// certificates are not implemented. Runs as function (host, internal,
// require, module, exports).

const net = require('node:net');
const { codedError, stubs, stubClass } = require('node:internal/errors');

const notImplementedOption = (name) => codedError(Error, 'ERR_OPTION_NOT_IMPLEMENTED', `The ${name} option is not implemented`);

class TLSSocket extends net.Socket {
  constructor(socket, options = {}) {
    super(options);
    this.encrypted = true;
    this.authorized = false;
    this.authorizationError = null;
    this.alpnProtocol = false;
    this.servername = options.servername ?? null;
  }

  getPeerCertificate() { return {}; }
  getCertificate() { return {}; }
  getProtocol() { return this.authorized ? 'TLSv1.3' : null; }
  getCipher() { return undefined; }
  getSession() { return undefined; }
  isSessionReused() { return false; }
  setServername(name) { this.servername = String(name); }
  setMaxSendFragment() { return false; }
  exportKeyingMaterial() { throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', 'The exportKeyingMaterial() method is not implemented'); }
}

// [options, callback] of connect()'s forms: (options[, cb]),
// (port[, host][, options][, cb]).
function normalizeArgs(args) {
  let options = {};
  const callback = typeof args[args.length - 1] === 'function' ? args.pop() : null;
  if (args[0] !== null && typeof args[0] === 'object') {
    options = { ...args[0] };
  } else {
    const [port, hostOrOptions, more] = args;
    options = typeof hostOrOptions === 'object' && hostOrOptions !== null
      ? { ...hostOrOptions, port }
      : { ...more, port, host: hostOrOptions };
  }
  return [options, callback];
}

function connect(...args) {
  const [options, callback] = normalizeArgs(args);
  for (const name of ['pfx', 'key', 'cert', 'secureContext']) {
    if (options[name] !== undefined) throw notImplementedOption(name);
  }
  const socket = new TLSSocket(null, options);
  if (callback) socket.once('secureConnect', callback);
  const plain = options.socket;
  const host = options.host ?? plain?._host ?? 'localhost';
  const servername = options.servername ?? (net.isIP(host) ? undefined : host);
  socket.servername = servername ?? null;
  if (options.timeout) socket.setTimeout(options.timeout);
  if (plain) {
    // The caller's Socket gives its connection up once it is open.
    const take = () => {
      const handle = plain._handle;
      if (!handle) return socket.destroy(codedError(Error, 'ERR_SOCKET_CLOSED', 'Socket is closed'));
      plain._handle = null;
      socket._peer = plain._peer;
      socket._host = plain._host;
      upgrade(socket, handle.socket, servername ?? host);
    };
    if (plain.connecting) plain.once('connect', take);
    else queueMicrotask(take);
    return socket;
  }
  socket.once('connect', () => {
    const handle = socket._handle;
    if (handle) upgrade(socket, handle.socket, servername ?? host);
  });
  // Nothing is read before the upgrade: the TLS handshake needs the
  // connection whole.
  socket.pause();
  return socket.connect({ ...options, host });
}

// Puts TLS over `inner` (a cloudflare:sockets Socket), the socket's from
// now on, then tells the caller.
function upgrade(socket, inner, servername) {
  let secured;
  try {
    secured = inner.startTls({ expectedServerHostname: servername });
  } catch (error) {
    socket.destroy(error);
    return;
  }
  internal.netSocketAttach(socket, secured);
  secured.opened.then(() => {
    socket.authorized = true;
    socket.emit('secureConnect');
    socket.resume();
    internal.netSocketStartReading(socket);
  }, (error) => socket.destroy(error));
}

module.exports = {
  DEFAULT_MIN_VERSION: 'TLSv1.2',
  DEFAULT_MAX_VERSION: 'TLSv1.3',
  DEFAULT_ECDH_CURVE: 'auto',
  DEFAULT_CIPHERS: '',
  CLIENT_RENEG_LIMIT: 3,
  CLIENT_RENEG_WINDOW: 600,
  rootCertificates: Object.freeze([]),
  connect,
  TLSSocket,
  checkServerIdentity: () => undefined,
  getCiphers: () => [],
  ...stubs('tls', ['createServer', 'createSecureContext', 'convertALPNProtocols', 'createSecurePair']),
  Server: stubClass('tls.Server'),
  SecureContext: stubClass('tls.SecureContext'),
};
