// 35_queue.js — Cloudflare Queues. The producer: the `Queue` a Worker's
// queue binding puts in its `env` (`internal.queueBinding(binding)`, called by
// the engine as it builds `env`), over host.queueSend; the host scopes every
// send to the Worker's own namespace (JavaScript passes only the binding's
// name) and resolves it once the messages are durable. The consumer: the
// `MessageBatch` a `queue(batch, env, ctx)` handler gets
// (`internal.queueMessageBatch(event)`, called by the engine's 19_worker.js),
// and what its `ack()`/`retry()` calls said, answered as JSON
// (isolane-storage's QueueBatch). Shapes and messages are workerd's.
'use strict';

const kCreate = Symbol('create');
const CONTENT_TYPES = ['text', 'bytes', 'json', 'v8'];
const MAX_DELAY_SECONDS = 86400;

function contentTypeOf(options) {
  if (options === undefined || options === null || options.contentType === undefined) return 'v8';
  const type = String(options.contentType);
  const lower = type.toLowerCase();
  if (!CONTENT_TYPES.includes(lower)) throw new TypeError(`Unsupported queue message content type: ${type}`);
  return lower;
}

// `delaySeconds` of send/sendBatch/retry options: whole seconds, 0 to a day;
// `fallback` when not given (null: a send takes its binding's deliveryDelay,
// which the host applies; a retry the consumer's retryDelaySeconds).
function delayOf(options, fallback) {
  if (options === undefined || options === null || options.delaySeconds === undefined) return fallback;
  const delay = Number(options.delaySeconds);
  if (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS) {
    throw new TypeError(`delaySeconds must be a whole number of seconds from 0 to ${MAX_DELAY_SECONDS}`);
  }
  return delay;
}

function serialize(body, type) {
  if (body === undefined) throw new TypeError('Message body cannot be undefined');
  switch (type) {
    case 'text':
      if (typeof body !== 'string') throw new TypeError(`Content Type "text" requires a value of type string, but received: ${typeof body}`);
      return host.utf8Encode(body);
    case 'bytes': {
      const view = internal.bufferSourceView(body);
      if (view === null) throw new TypeError(`Content Type "bytes" requires a value of type ArrayBufferView, but received: ${typeof body}`);
      return view;
    }
    case 'json':
      return host.utf8Encode(JSON.stringify(body));
    default:
      return host.serialize(body);
  }
}

class WorkerQueue {
  #binding;

  constructor(key = undefined, binding = '') {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
  }

  async send(body, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'send' on 'WorkerQueue'");
    const type = contentTypeOf(options);
    const bytes = serialize(body, type);
    await host.queueSend(this.#binding, [bytes], [type], [delayOf(options, null)], false);
  }

  async sendBatch(messages, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'sendBatch' on 'WorkerQueue'");
    const list = Array.from(messages);
    if (list.length === 0) throw new TypeError('sendBatch() requires at least one message');
    const batchDelay = delayOf(options, null);
    const bodies = [];
    const types = [];
    const delays = [];
    for (const message of list) {
      if (!internal.isObject(message)) throw new TypeError('sendBatch() takes messages of the form { body, contentType?, delaySeconds? }');
      const type = contentTypeOf(message);
      bodies.push(serialize(message.body, type));
      types.push(type);
      delays.push(delayOf(message, batchDelay));
    }
    await host.queueSend(this.#binding, bodies, types, delays, true);
  }
}
internal.enumerableMembers(WorkerQueue, ['send', 'sendBatch']);
internal.setToStringTag(WorkerQueue.prototype, 'WorkerQueue');

internal.queueBinding = (binding) => new WorkerQueue(kCreate, binding);

// ---- the consumer ----

function decode(bytes, type) {
  switch (type) {
    case 'text': return internal.utf8Decode(bytes);
    case 'json': return JSON.parse(internal.utf8Decode(bytes));
    case 'bytes': return bytes.buffer.byteLength === bytes.byteLength ? bytes.buffer : bytes.slice().buffer;
    default: return host.deserialize(bytes);
  }
}

// What the handler's calls said (workerd's rules: ackAll/retryAll win, a
// message's ack() and retry() exclude each other, the first call counts).
class Outcome {
  ackAll = false;
  retryAll = false;
  retryAllDelay = null;
  acks = new Set();
  retries = new Map();

  json(threw) {
    return host.utf8Encode(JSON.stringify({
      ackAll: this.ackAll,
      retryAll: this.retryAll,
      retryAllDelay: this.retryAllDelay,
      acks: [...this.acks],
      retries: [...this.retries],
      threw,
    }));
  }
}

class Message {
  #id;
  #timestamp;
  #body;
  #attempts;
  #outcome;

  constructor(key, id, timestamp, body, attempts, outcome) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#id = id;
    this.#timestamp = timestamp;
    this.#body = body;
    this.#attempts = attempts;
    this.#outcome = outcome;
  }

  get id() { return this.#id; }
  get timestamp() { return new Date(this.#timestamp); }
  get body() { return this.#body; }
  get attempts() { return this.#attempts; }

  ack() {
    const outcome = this.#outcome;
    if (outcome.ackAll || outcome.retryAll || outcome.retries.has(this.#id)) return;
    outcome.acks.add(this.#id);
  }

  retry(options = undefined) {
    const outcome = this.#outcome;
    if (outcome.ackAll || outcome.retryAll || outcome.acks.has(this.#id)) return;
    const delay = delayOf(options, null);
    if (!outcome.retries.has(this.#id)) outcome.retries.set(this.#id, delay);
  }
}
internal.enumerableMembers(Message, ['id', 'timestamp', 'body', 'attempts', 'ack', 'retry']);
internal.setToStringTag(Message.prototype, 'Message');

class MessageBatch {
  #queue;
  #messages;
  #outcome;

  constructor(key, queue, messages, outcome) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#queue = queue;
    this.#messages = Object.freeze(messages);
    this.#outcome = outcome;
  }

  get queue() { return this.#queue; }
  get messages() { return this.#messages; }

  ackAll() {
    if (this.#outcome.retryAll) return;
    this.#outcome.ackAll = true;
  }

  retryAll(options = undefined) {
    if (this.#outcome.ackAll) return;
    this.#outcome.retryAllDelay = delayOf(options, null);
    this.#outcome.retryAll = true;
  }
}
internal.enumerableMembers(MessageBatch, ['queue', 'messages', 'ackAll', 'retryAll']);
internal.setToStringTag(MessageBatch.prototype, 'MessageBatch');

// `[batch, json(threw)]` for a queue event (src/event_object.rs:
// `{queue, messages: [[id, timestamp, body, contentType, attempts], …]}`).
internal.queueMessageBatch = (event) => {
  const outcome = new Outcome();
  const messages = event.messages.map(([id, timestamp, bytes, type, attempts]) =>
    new Message(kCreate, id, timestamp, decode(bytes, type), attempts, outcome));
  return [new MessageBatch(kCreate, event.queue, messages, outcome), (threw) => outcome.json(threw)];
};
