// 26_websocket.js — WebSocketPair, WebSocket, MessageEvent and CloseEvent,
// as workerd has them (src/workerd/api/web-socket.h). A pair's two ends talk
// to each other in this isolate until the Worker answers a request with
// `new Response(null, { status: 101, webSocket: client })`: then the server
// end talks to the front end through the host (isolane-web's src/websocket.rs), and the
// engine calls internal.webSocketEvent(id, kind, data, code, reason) for each
// message from the client, one turn each. Outbound sockets: fetch with
// `Upgrade: websocket` resolves to a 101 whose `webSocket` speaks through
// the host the same way (src/websocket/connect.rs), and `new WebSocket(url)` is
// built on that handshake, as in workerd.
'use strict';

const kCreate = Symbol('create');
// A message event's data (a string or an ArrayBuffer) to host socket `id`.
const sendData = (id, data) => host.webSocketSend(id, typeof data === 'string' ? data : new Uint8Array(data), typeof data === 'string');
const byHostId = new Map(); // host socket id -> the server end

const MessageEvent = internal.eventClass('MessageEvent', { data: (v) => (v === undefined ? null : v) });
const CloseEvent = internal.eventClass('CloseEvent', {
  code: (v) => (v === undefined ? 0 : internal.toNumber(v) & 0xffff),
  reason: (v) => (v === undefined ? '' : internal.toUSVString(v)),
  wasClean: Boolean,
});

const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

function checkClose(code, reason) {
  if (code !== undefined) {
    code = internal.toNumber(code) & 0xffff;
    // workerd's rule: 1000-1014 but the three never sent on the wire, or
    // 3000-4999.
    const valid = (code >= 1000 && code <= 1014 && (code < 1004 || code > 1006)) || (code >= 3000 && code <= 4999);
    if (!valid) throw new TypeError(`Invalid WebSocket close code: ${code}.`);
  }
  reason = reason === undefined ? '' : internal.toUSVString(reason);
  if (host.utf8Encode(reason).byteLength > 123) {
    throw new internal.DOMException('The close reason must be at most 123 bytes of UTF-8.', 'SyntaxError');
  }
  return [code, reason];
}

// `new WebSocket(url, protocols)`'s arguments (WHATWG WebSockets): the URL
// (http and https become ws and wss; no fragment) and the subprotocols
// (tokens, no repeats).
function checkConnect(url, protocols) {
  let parsed;
  try {
    parsed = new URL(internal.toUSVString(url));
  } catch {
    throw new internal.DOMException(`Failed to construct 'WebSocket': The URL '${url}' is invalid.`, 'SyntaxError');
  }
  if (parsed.protocol === 'http:') parsed.protocol = 'ws:';
  else if (parsed.protocol === 'https:') parsed.protocol = 'wss:';
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new internal.DOMException(`Failed to construct 'WebSocket': The URL's scheme must be either 'http', 'https', 'ws', or 'wss'. '${parsed.protocol}' is not allowed.`, 'SyntaxError');
  }
  if (parsed.hash !== '') {
    throw new internal.DOMException("Failed to construct 'WebSocket': The URL contains a fragment identifier.", 'SyntaxError');
  }
  let list = [];
  if (protocols !== undefined) {
    list = typeof protocols === 'string' ? [protocols] : Array.from(protocols, (p) => internal.toUSVString(p));
  }
  const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  for (const [i, p] of list.entries()) {
    if (!token.test(p) || list.indexOf(p) !== i) {
      throw new internal.DOMException(`Failed to construct 'WebSocket': The subprotocol '${p}' is invalid or repeated.`, 'SyntaxError');
    }
  }
  return [parsed.href, list];
}

// The value of header `name` in a flat `[name, value, …]` list.
function headerOf(list, name) {
  for (let i = 0; i < list.length; i += 2) if (list[i] === name) return list[i + 1];
  return null;
}

class WebSocket extends EventTarget {
  #peer = null; // the other end of a pair, while it is in this isolate
  #hostId = 0; // the host socket this end speaks through, once answered
  #handedOver = false; // the client end went to the front end
  #accepted = false;
  #queue = []; // events that came before accept()
  #state = OPEN;
  #binaryType = 'arraybuffer';
  #closeSent = false;
  // accept()'s allowHalfOpen: 0 as the compatibility date says, 1 the Worker's close() answers the peer's, 2 the runtime does.
  #halfOpen = 0;
  #peerClosed = false; // the peer's close came and awaits this end's (half open)
  #url = null;
  #protocol = null;
  #constructed = false; // by `new WebSocket(url)`
  // A Durable Object's hibernatable socket (ctx.acceptWebSocket): its
  // object's { className, id, tags, opened(hostId, ws) }; its messages go to
  // the object's handlers (isolane-bindings' 28_durable_object.js), never to listeners.
  #hibernation = null;
  #attachment = null; // serializeAttachment's bytes
  // A socket a Durable Object on another thread answered a forwarded
  // stub.fetch with: its host id, to be returned in a 101 as it is.
  #passed = 0;

  constructor(url = undefined, protocols = undefined, key = undefined) {
    super();
    if (key === kCreate) return;
    internal.requireArgs(arguments.length, 1, "Failed to construct 'WebSocket'");
    const [href, list] = checkConnect(url, protocols);
    this.#url = href;
    this.#protocol = '';
    this.#constructed = true;
    this.#state = CONNECTING;
    this.#accepted = true;
    this.#connect(href, list);
  }

  // `new WebSocket(url)`: the handshake through the host's fetch path, then
  // `open` (or, as in workerd, `error` with the failure and `close` with
  // 1006). A close() while connecting fails the connection (WHATWG).
  async #connect(href, list) {
    let id = 0;
    let failure = 'WebSocket connection failed';
    try {
      const headers = list.length > 0 ? ['sec-websocket-protocol', list.join(', ')] : [];
      const res = await host.webSocketConnect(href, headers);
      id = res.webSocket;
      if (!id) {
        if (res.bodyId) host.bodyCancel(res.bodyId);
        failure = 'Failed to establish the WebSocket connection: expected server to reply with HTTP status code 101 (switching protocols), but received ' + res.status + ' instead.';
      } else if (this.#closeSent) {
        host.webSocketClose(id, 1000, '');
        failure = 'Called close before connection was established.';
        id = 0;
      } else {
        const chosen = headerOf(res.headers, 'sec-websocket-protocol') ?? '';
        if (chosen === '' ? false : !list.includes(chosen)) {
          host.webSocketClose(id, 1002, 'unrequested subprotocol');
          failure = `WebSocket connection failed: the server chose the subprotocol ${chosen}, which was not requested`;
          id = 0;
        } else {
          this.#protocol = chosen;
        }
      }
    } catch (e) {
      failure = e?.message ?? String(e);
    }
    if (!id) {
      this.#state = CLOSED;
      internal.dispatchTrusted(this, new ErrorEvent('error', { message: failure }), internal.reportError);
      internal.dispatchTrusted(this, new CloseEvent('close', { code: 1006, reason: 'Failed to establish websocket connection', wasClean: false }), internal.reportError);
      return;
    }
    this.#hostId = id;
    byHostId.set(id, this);
    host.webSocketAccepted(id, 0);
    this.#state = OPEN;
    internal.dispatchTrusted(this, new Event('open'), internal.reportError);
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#state in self)) throw new TypeError('Illegal invocation');
  }

  get readyState() { WebSocket.#check(this); return this.#state; }
  get url() { WebSocket.#check(this); return this.#url; }
  get protocol() { WebSocket.#check(this); return this.#protocol; }
  get extensions() { WebSocket.#check(this); return null; }
  get binaryType() { WebSocket.#check(this); return this.#binaryType; }
  set binaryType(value) {
    WebSocket.#check(this);
    if (value === 'arraybuffer' || value === 'blob') this.#binaryType = value;
  }

  // The `on…` event handler attributes (internal.setEventHandler).
  get onopen() { return this.#handler('open'); }
  set onopen(fn) { this.#setHandler('open', fn); }
  get onmessage() { return this.#handler('message'); }
  set onmessage(fn) { this.#setHandler('message', fn); }
  get onerror() { return this.#handler('error'); }
  set onerror(fn) { this.#setHandler('error', fn); }
  get onclose() { return this.#handler('close'); }
  set onclose(fn) { this.#setHandler('close', fn); }

  #handler(type) {
    WebSocket.#check(this);
    return internal.eventHandler(this, type);
  }

  #setHandler(type, fn) {
    WebSocket.#check(this);
    internal.setEventHandler(this, type, fn);
  }

  accept(options = undefined) {
    WebSocket.#check(this);
    const { allowHalfOpen } = internal.toDictionary(options, 'AcceptOptions');
    if (this.#handedOver) throw new TypeError('This WebSocket was handed to the client in a Response; use the other end of its pair.');
    if (this.#passed !== 0) throw new TypeError("A Durable Object's WebSocket from another thread can only be returned in a 101 Response.");
    if (this.#state === CONNECTING) throw new TypeError("Websockets obtained from the 'new WebSocket()' constructor cannot call accept");
    if (this.#accepted) return;
    this.#accepted = true;
    if (allowHalfOpen !== undefined) this.#halfOpen = allowHalfOpen ? 1 : 2;
    // The host delivers this socket's messages only from now on.
    if (this.#hostId !== 0) host.webSocketAccepted(this.#hostId, this.#halfOpen);
    const queued = this.#queue;
    this.#queue = [];
    if (queued.length > 0) queueMicrotask(() => { for (const e of queued) this.#dispatch(e); });
  }

  send(message) {
    WebSocket.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'send' on 'WebSocket'");
    if (this.#state === CONNECTING) throw new internal.DOMException("Failed to execute 'send' on 'WebSocket': Still in CONNECTING state.", 'InvalidStateError');
    if (!this.#accepted) throw new TypeError('You must call accept() on this WebSocket before sending messages.');
    if (this.#peerClosed && !this.#closeSent && this.#state === CLOSED) return; // the connection ended: dropped, as in workerd
    if (this.#closeSent || this.#state === CLOSED) throw new TypeError("Can't call WebSocket send() after close().");
    let text = null;
    let bytes = null;
    if (typeof message === 'string') text = message;
    else {
      bytes = internal.bufferSourceView(message);
      if (bytes === null) text = internal.toUSVString(message);
    }
    if (this.#hostId !== 0) {
      host.webSocketSend(this.#hostId, text ?? bytes, text !== null);
      return;
    }
    const peer = this.#peer;
    if (peer === null) return;
    // A copy: the sender may change its buffer after send() returns.
    const data = text ?? new Uint8Array(bytes).buffer;
    queueMicrotask(() => peer.#receive(0, data));
  }

  close(code = undefined, reason = undefined) {
    WebSocket.#check(this);
    if (this.#handedOver) throw new TypeError('This WebSocket was handed to the client in a Response; use the other end of its pair.');
    [code, reason] = checkClose(code, reason);
    const peer = this.#peer;
    if (this.#closeWith(code ?? 0, reason) && peer !== null) queueMicrotask(() => peer.#receive(2, null, code ?? 1005, reason));
  }

  // This end's close frame (`code` 0: none), or the reply to the peer's; false when closed already.
  #closeWith(code, reason) {
    if (this.#closeSent || this.#state === CLOSED) return false;
    this.#closeSent = true;
    this.#state = this.#state === CLOSING ? CLOSED : CLOSING; // CLOSING: the reply to the peer's
    if (this.#hostId === 0) return true;
    if (this.#state === CLOSED) byHostId.delete(this.#hostId);
    host.webSocketClose(this.#hostId, code, reason);
    return true;
  }

  // workerd's attachment: any structured-clonable value, at most 2 KiB
  // serialized, kept with a hibernatable socket outside the heap so that it
  // outlives the object's eviction.
  serializeAttachment(value) {
    WebSocket.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'serializeAttachment' on 'WebSocket'");
    const bytes = host.serialize(value);
    if (bytes.byteLength > 2048) {
      throw new RangeError(`A WebSocket attachment cannot be larger than 2048 bytes; this one is ${bytes.byteLength} bytes once serialized.`);
    }
    this.#attachment = bytes;
    if (this.#hostId !== 0 && this.#hibernation !== null) host.webSocketAttach(this.#hostId, bytes);
  }

  deserializeAttachment() {
    WebSocket.#check(this);
    return this.#attachment === null ? null : host.deserialize(this.#attachment);
  }

  // A message (kind 0, `data` a string or an ArrayBuffer) or the close
  // (kind 2) for this end.
  #receive(kind, data, code = 0, reason = '') {
    if (this.#state === CLOSED) return;
    let event;
    if (kind === 2 && this.#peerClosed) {
      // The connection ended before this end's reply (the front end's bound, or the peer left): CLOSED, as the
      // standard has it; no second close event (workerd's came with the peer's frame, and it sends no other).
      this.#state = CLOSED;
      byHostId.delete(this.#hostId);
      return;
    }
    if (kind === 2) {
      event = new CloseEvent('close', { code, reason, wasClean: code !== 1006 });
    } else {
      if (typeof data !== 'string' && this.#binaryType === 'blob') data = new Blob([data]);
      event = new MessageEvent('message', { data });
    }
    if (this.#accepted) this.#dispatch(event);
    else this.#queue.push(event);
  }

  #dispatch(event) {
    if (event.type === 'close' && this.#state !== CLOSED) this.#peerClose(event.code, event.reason);
    internal.dispatchTrusted(this, event, internal.reportError);
    if (event.type === 'close' && event.code === 1006) {
      internal.dispatchTrusted(this, new ErrorEvent('error', { message: event.reason }), internal.reportError);
    }
  }

  // The peer's close, as this end takes it: half open, the Worker's close() the reply (web_socket_manual_reply_to_close,
  // accept's allowHalfOpen; the host's socket says, a pair's end in this isolate asks the date), else CLOSED,
  // a pair's end answering the other at once with its code (workerd's auto-reply).
  #peerClose(code, reason) {
    const peer = this.#peer;
    if (this.#hostId !== 0) this.#peerClosed = host.webSocketHalfOpen(this.#hostId);
    else if (!this.#closeSent && peer !== null) {
      this.#peerClosed = this.#halfOpen === 0 ? host.webSocketHalfOpen(0) : this.#halfOpen === 1;
      this.#closeSent = !this.#peerClosed;
      if (this.#closeSent) queueMicrotask(() => peer.#receive(2, null, code, reason));
    }
    this.#state = this.#peerClosed ? CLOSING : CLOSED;
    if (!this.#peerClosed) byHostId.delete(this.#hostId);
  }

  static {
    internal.isWebSocket = (v) => internal.isObject(v) && #state in v;
    internal.newWebSocketPair = () => {
      const client = new WebSocket(undefined, undefined, kCreate);
      const server = new WebSocket(undefined, undefined, kCreate);
      client.#peer = server;
      server.#peer = client;
      return [client, server];
    };
    // The Worker answered request `ctxId` with `client`: the host takes the
    // client end, and the server end speaks to the front end from now on.
    internal.webSocketRespond = (ctxId, client, list) => {
      if (client.#passed !== 0) {
        const id = client.#passed;
        client.#passed = 0;
        client.#handedOver = true;
        host.webSocketPass(ctxId, id, list);
        return;
      }
      if (client.#hostId !== 0 && client.#url !== null && !client.#accepted && !client.#handedOver) {
        coupleOutbound(ctxId, client, list);
        return;
      }
      if (client.#constructed) {
        throw new TypeError("Can't return WebSocket in a Response if it was created with `new WebSocket()`");
      }
      if (client.#handedOver || client.#accepted || client.#peer === null) {
        throw new TypeError('The webSocket of a 101 response must be the unaccepted client end of a WebSocketPair.');
      }
      const server = client.#peer;
      const h = server.#hibernation;
      const id = host.webSocketRespond(ctxId, list, h === null ? null : [h.className, h.id, h.tags, server.#attachment]);
      if (!id) return;
      client.#handedOver = true;
      client.#peer = null;
      server.#peer = null;
      server.#hostId = id;
      // A hibernatable socket's events go to its object, not through here.
      if (h === null) byHostId.set(id, server);
      else h.opened(id, server);
      if (server.#accepted) host.webSocketAccepted(id, server.#halfOpen);
      // What the server end sent before the answer goes first.
      for (const event of client.#queue) {
        if (event.type === 'message') {
          sendData(id, event.data);
        } else {
          host.webSocketClose(id, event.code === 1005 ? 0 : event.code, event.reason);
        }
      }
      client.#queue = [];
    };
    // ctx.acceptWebSocket(ws): `ws` must be the unaccepted server end of a
    // pair whose client end is still to be returned; accepted from now on,
    // its events go to the object's handlers.
    internal.webSocketHibernate = (ws, hibernation) => {
      if (!internal.isWebSocket(ws)) throw new TypeError("Failed to execute 'acceptWebSocket' on 'DurableObjectState': parameter 1 is not of type 'WebSocket'.");
      if (ws.#accepted) throw new Error('Cannot call `acceptWebSocket()` if the WebSocket was already accepted via `accept()`');
      if (ws.#peer === null || ws.#hostId !== 0 || ws.#peer.#handedOver || ws.#constructed) {
        throw new Error('Cannot call `acceptWebSocket()` on this WebSocket because its pair has already been accepted or used in a Response.');
      }
      ws.#accepted = true;
      ws.#hibernation = hibernation;
    };
    // A hibernatable socket of an object made again (after its eviction):
    // open and accepted, speaking through host socket `id`.
    internal.hibernatedWebSocket = (id, hibernation, attachment) => {
      const ws = new WebSocket(undefined, undefined, kCreate);
      ws.#hostId = id;
      ws.#accepted = true;
      ws.#hibernation = hibernation;
      ws.#attachment = attachment;
      return ws;
    };
    // The webSocket of a forwarded stub.fetch's 101 (host socket `id`,
    // served by the object's thread): only to be returned in a 101.
    internal.passedWebSocket = (id) => {
      const ws = new WebSocket(undefined, undefined, kCreate);
      ws.#passed = id;
      return ws;
    };
    internal.webSocketHostId = (ws) => (internal.isWebSocket(ws) ? ws.#hostId : 0);
    // The server end of `client`'s pair when it is an ordinary one (not
    // hibernatable), else null.
    internal.webSocketServerOf = (client) => {
      if (!internal.isWebSocket(client) || client.#peer === null) return null;
      return client.#peer.#hibernation === null ? client.#peer : null;
    };
    internal.webSocketTags = (ws) => {
      if (!internal.isWebSocket(ws) || ws.#hibernation === null) {
        throw new TypeError('getTags() takes a WebSocket accepted with acceptWebSocket().');
      }
      return [...ws.#hibernation.tags];
    };
    // A message (kind 0 text, 1 a Uint8Array) or the close (kind 2) of a
    // hibernatable socket, as its handler gets it: the data (a string or an
    // ArrayBuffer); a close leaves the socket CLOSING (its `close()` answers), or CLOSED.
    internal.webSocketReceived = (ws, kind, data) => {
      if (kind === 2) return void ws.#peerClose();
      return kind === 1 ? data.buffer : data;
    };
    // The `webSocket` of a fetch's 101 (src/websocket/connect.rs): open, to be
    // accepted, speaking through host socket `id`.
    internal.outboundWebSocket = (id, url) => {
      const socket = new WebSocket(undefined, undefined, kCreate);
      socket.#hostId = id;
      socket.#url = url;
      byHostId.set(id, socket);
      return socket;
    };
    // A fetch's socket returned in a 101 (a proxy, as workerd allows): the
    // client's socket is a new pair's end, and every message and close is
    // passed on between the two in this isolate, one turn each way.
    const coupleOutbound = (ctxId, outbound, list) => {
      const [front, server] = internal.newWebSocketPair();
      internal.webSocketRespond(ctxId, front, list);
      if (server.#hostId === 0) {
        // Refused (the socket limit): the server's socket goes too.
        host.webSocketClose(outbound.#hostId, 1011, 'refused');
        return;
      }
      for (const end of [outbound, server]) {
        end.#binaryType = 'arraybuffer';
        end.accept();
      }
      outbound.#handedOver = true;
      passOn(outbound, server);
      passOn(server, outbound);
    };
    const passOn = (from, to) => {
      from.addEventListener('message', (event) => {
        if (!to.#closeSent && to.#state !== CLOSED) sendData(to.#hostId, event.data);
      });
      from.addEventListener('close', (event) => {
        // 1005 (no code) goes as none; 1006 (the peer vanished) as 1011.
        const code = event.code === 1005 ? 0 : event.code === 1006 ? 1011 : event.code;
        to.#closeWith(code, code === 0 ? '' : event.reason);
      });
    };
    internal.webSocketEvent = (id, kind, data, code, reason) => {
      const socket = byHostId.get(id);
      if (socket === undefined) return;
      if (kind === 1) {
        // The host's Uint8Array owns its whole buffer.
        data = data.buffer;
      }
      socket.#receive(kind === 2 ? 2 : 0, data, code, reason);
    };
  }
}
internal.enumerableMembers(WebSocket, ['readyState', 'url', 'protocol', 'extensions', 'binaryType', 'onopen', 'onmessage', 'onerror', 'onclose', 'accept', 'send', 'close', 'serializeAttachment', 'deserializeAttachment'], 'WebSocket');
for (const [name, value] of [['CONNECTING', CONNECTING], ['OPEN', OPEN], ['CLOSING', CLOSING], ['CLOSED', CLOSED]]) {
  Object.defineProperty(WebSocket, name, { value, enumerable: true });
  Object.defineProperty(WebSocket.prototype, name, { value, enumerable: true });
}

class WebSocketPair {
  constructor() {
    const [client, server] = internal.newWebSocketPair();
    Object.defineProperty(this, 0, { value: client, enumerable: true });
    Object.defineProperty(this, 1, { value: server, enumerable: true });
  }
}
internal.setToStringTag(WebSocketPair.prototype, 'WebSocketPair');

internal.defineGlobal('WebSocket', WebSocket);
internal.defineGlobal('WebSocketPair', WebSocketPair);
internal.defineGlobal('MessageEvent', MessageEvent);
internal.defineGlobal('CloseEvent', CloseEvent);
