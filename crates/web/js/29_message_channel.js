// 29_message_channel.js — MessageChannel and MessagePort (HTML Standard),
// within one isolate, as workerd has them:
// - postMessage structured-clones the message at once (a value that cannot
//   be cloned throws DataCloneError even when the other port is gone), and
//   delivers it to the entangled port in a microtask;
// - a port queues what it receives until it is started: by start(), by
//   setting onmessage, or (as Node.js and workerd do) by adding a 'message'
//   listener; removing the last one queues again;
// - no transfer list (an Error, as on workerd);
// - close() closes both ports, each firing 'close'; later messages are
//   dropped;
// - a listener that throws is reported and the other listeners still run
//   (the standard; workerd differs, see #dispatch).
// The globals are there from compatibility date 2025-08-15 or with
// `expose_global_message_channel` (the unit's gate, host/message_channel.rs).
'use strict';

// The token only this file holds: ports are made by MessageChannel alone.
const kConstruct = Symbol('construct');
let entangle;
const PENDING = 0, STARTED = 1, CLOSED = 2;
// Captured at snapshot time: what the runtime dispatches, whatever a
// Worker later does to the globals.
const NativeMessageEvent = globalThis.MessageEvent;
const NativeEvent = globalThis.Event;

class MessagePort extends EventTarget {
  #other = null;
  #state = PENDING;
  #queue = [];

  constructor(key = undefined) {
    if (key !== kConstruct) throw new TypeError('Illegal constructor');
    super();
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#state in self)) throw new TypeError('Illegal invocation');
  }

  static {
    entangle = (a, b) => {
      a.#other = b;
      b.#other = a;
    };
  }

  postMessage(message = undefined, transferOrOptions = undefined) {
    MessagePort.#check(this);
    if (hasTransfer(transferOrOptions)) throw new Error('Transfer list is not supported');
    const data = internal.structuredClone(message);
    const other = this.#other;
    if (other !== null) other.#deliver(data);
  }

  start() {
    MessagePort.#check(this);
    if (this.#state !== PENDING) return;
    this.#state = STARTED;
    const queued = this.#queue;
    this.#queue = [];
    if (queued.length > 0) queueMicrotask(() => { for (const data of queued) this.#dispatch(data); });
  }

  close() {
    MessagePort.#check(this);
    if (this.#state === CLOSED) return;
    this.#state = CLOSED;
    this.#queue = [];
    const other = this.#other;
    this.#other = null;
    if (other !== null) other.close();
    internal.dispatchTrusted(this, new NativeEvent('close'));
  }

  addEventListener(type, callback, options = undefined) {
    super.addEventListener(type, callback, options);
    if (String(type) === 'message' && internal.listenerCount(this, 'message') > 0) this.start();
  }

  removeEventListener(type, callback, options = undefined) {
    super.removeEventListener(type, callback, options);
    if (String(type) === 'message') this.#maybePause();
  }

  get onmessage() { MessagePort.#check(this); return internal.eventHandler(this, 'message'); }
  set onmessage(handler) {
    MessagePort.#check(this);
    internal.setEventHandler(this, 'message', handler);
    if (internal.eventHandler(this, 'message') === null) this.#maybePause();
    else this.start();
  }

  // With no 'message' listener left, a started port queues again.
  #maybePause() {
    if (this.#state === STARTED && internal.listenerCount(this, 'message') === 0) this.#state = PENDING;
  }

  #deliver(data) {
    if (this.#state === PENDING) this.#queue.push(data);
    else if (this.#state === STARTED) queueMicrotask(() => this.#dispatch(data));
  }

  // A listener that throws is reported (the Worker's exceptions) and the
  // others still run: the standard's rule. workerd dispatches the error
  // again as a second 'message' (its code marks this as to be changed).
  #dispatch(data) {
    internal.dispatchTrusted(this, new NativeMessageEvent('message', { data }));
  }
}
internal.enumerableMembers(MessagePort, ['postMessage', 'start', 'close', 'onmessage']);
internal.setToStringTag(MessagePort.prototype, 'MessagePort');

function hasTransfer(options) {
  if (options === undefined || options === null) return false;
  if (Array.isArray(options)) return options.length > 0;
  if (internal.isObject(options) && options.transfer !== undefined) {
    const list = options.transfer;
    return internal.isObject(list) && typeof list[Symbol.iterator] === 'function' && [...list].length > 0;
  }
  return false;
}

class MessageChannel {
  #port1;
  #port2;

  constructor() {
    this.#port1 = new MessagePort(kConstruct);
    this.#port2 = new MessagePort(kConstruct);
    entangle(this.#port1, this.#port2);
  }

  get port1() {
    if (!internal.isObject(this) || !(#port1 in this)) throw new TypeError('Illegal invocation');
    return this.#port1;
  }

  get port2() {
    if (!internal.isObject(this) || !(#port2 in this)) throw new TypeError('Illegal invocation');
    return this.#port2;
  }
}
internal.enumerableMembers(MessageChannel, ['port1', 'port2']);
internal.setToStringTag(MessageChannel.prototype, 'MessageChannel');

internal.defineGlobal('MessageChannel', MessageChannel);
internal.defineGlobal('MessagePort', MessagePort);
