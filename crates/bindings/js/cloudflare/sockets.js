// cloudflare:sockets (workerd's module of the same name): `connect()`, an
// outbound TCP connection as a Socket of byte streams — `readable`,
// `writable`, `opened`, `closed`, `close()` and `startTls()` — with the
// options `secureTransport` ("off", "on", "starttls") and `allowHalfOpen`.
// The host side is host/tcp.rs (the connection, its limits and the egress
// policy); reads are pulled one chunk at a time (highWaterMark 0), so
// nothing is read off the connection before the Worker asks.
// Runs as function (host, internal, require, module, exports).

const TOKEN = Symbol('Socket');
const SECURE_TRANSPORTS = ['off', 'on', 'starttls'];
const HOST_CHARS = /^[A-Za-z0-9._\-:[\]]+$/;

// `address` as workerd reads it: "host:port" (an IPv6 host in brackets;
// no port means 443) or `{ hostname, port }`.
function parseAddress(address) {
  if (address !== null && typeof address === 'object') {
    return [String(address.hostname), Number(address.port)];
  }
  const text = String(address);
  if (!HOST_CHARS.test(text) || text.length > 255) {
    throw new TypeError('Specified address is empty string, contains unsupported characters or is too long.');
  }
  let url;
  try {
    url = new URL(`https://${text}`);
  } catch {
    throw new TypeError('Specified address could not be parsed.');
  }
  if (url.hostname === '') throw new TypeError('Specified address is missing hostname.');
  return [url.hostname, url.port === '' ? 443 : Number(url.port)];
}

function secureTransportOf(options) {
  const value = options?.secureTransport ?? 'off';
  if (!SECURE_TRANSPORTS.includes(value)) {
    throw new TypeError(`Unsupported value in secureTransport socket option: ${value}`);
  }
  return value;
}

function toBytes(chunk) {
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  throw new TypeError('This WritableStream only supports writing byte types.');
}

const noop = () => {};

class Socket {
  #ready;
  #id = 0;
  #hostname;
  #options;
  #secureTransport;
  #upgraded;
  #opened;
  #closed;
  #resolveClosed;
  #rejectClosed;
  #settled = false;
  #readDone = false;
  #writeDone = false;
  #startedTls = false;
  #lastWrite = Promise.resolve();
  #readable;
  #writable;

  constructor(token, ready, hostname, options, secureTransport, upgraded) {
    if (token !== TOKEN) throw new TypeError('Illegal constructor');
    this.#hostname = hostname;
    this.#options = options;
    this.#secureTransport = secureTransport;
    this.#upgraded = upgraded;
    this.#closed = new Promise((resolve, reject) => {
      this.#resolveClosed = resolve;
      this.#rejectClosed = reject;
    });
    this.#closed.catch(noop);
    this.#ready = ready.then((info) => {
      this.#id = info.id;
      return info.id;
    });
    this.#opened = ready.then((info) => ({ remoteAddress: info.remoteAddress, localAddress: info.localAddress }));
    this.#opened.catch(noop);
    this.#ready.catch((error) => this.#fail(error));
    this.#readable = new ReadableStream({
      pull: (controller) => this.#pull(controller),
      cancel: () => {
        this.#readDone = true;
        this.#maybeFinish();
      },
    }, { highWaterMark: 0 });
    this.#writable = new WritableStream({
      write: (chunk) => this.#write(chunk),
      close: async () => {
        const id = await this.#ready;
        await host.socketShutdown(id);
        this.#writeDone = true;
        this.#maybeFinish();
      },
      abort: () => {
        this.#writeDone = true;
        this.#finish();
      },
    });
  }

  get readable() { return this.#readable; }
  get writable() { return this.#writable; }
  get opened() { return this.#opened; }
  get closed() { return this.#closed; }
  get upgraded() { return this.#upgraded; }
  get secureTransport() { return this.#secureTransport; }

  async #pull(controller) {
    const id = await this.#ready;
    const result = await host.socketRead(id).catch((error) => {
      this.#fail(error);
      throw error;
    });
    if (result === null) {
      controller.close();
      // After startTls() the connection is the new socket's.
      if (this.#startedTls) return;
      this.#readDone = true;
      // Without allowHalfOpen the end of what the peer sends ends the
      // socket, as workerd does.
      if (!this.#options?.allowHalfOpen) this.#writeDone = true;
      this.#maybeFinish();
    } else {
      controller.enqueue(result.chunk);
    }
  }

  async #write(chunk) {
    const bytes = toBytes(chunk);
    const id = await this.#ready;
    const written = host.socketWrite(id, bytes);
    this.#lastWrite = written.catch(noop);
    await written.catch((error) => {
      this.#fail(error);
      throw error;
    });
  }

  #maybeFinish() {
    if (this.#readDone && this.#writeDone) this.#finish();
  }

  // The socket is done: the connection is dropped and `closed` resolves.
  #finish() {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#id !== 0) host.socketClose(this.#id);
    this.#resolveClosed();
  }

  #fail(error) {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#id !== 0) host.socketClose(this.#id);
    this.#rejectClosed(error);
  }

  close() {
    this.#readable.cancel().catch(noop);
    this.#writable.abort().catch(noop);
    this.#finish();
    return this.#closed;
  }

  startTls(options) {
    if (this.#secureTransport === 'on' || this.#upgraded) throw new TypeError('Cannot startTls on a TLS socket.');
    if (this.#startedTls) throw new TypeError('startTls can only be called once.');
    if (this.#secureTransport !== 'starttls') {
      throw new TypeError("The `secureTransport` socket option must be set to 'starttls' for startTls to be used.");
    }
    this.#startedTls = true;
    const serverName = options?.expectedServerHostname ?? this.#hostname;
    // Written bytes go out in the clear first; then this socket is done
    // and its connection belongs to the new one.
    const ready = Promise.all([this.#ready, this.#lastWrite]).then(([id]) => {
      this.#settled = true;
      this.#resolveClosed();
      return host.socketStartTls(id, String(serverName));
    });
    return new Socket(TOKEN, ready, this.#hostname, this.#options, 'on', true);
  }
}

function connect(address, options) {
  const [hostname, port] = parseAddress(address);
  const secureTransport = secureTransportOf(options);
  const ready = host.socketConnect(hostname, port, secureTransport === 'on');
  return new Socket(TOKEN, ready, hostname, options, secureTransport, false);
}

module.exports = { connect, Socket };
