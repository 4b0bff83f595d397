// node:diagnostics_channel — named channels that publish to their
// subscribers synchronously, and tracing channels (start, end, asyncStart,
// asyncEnd, error) around a call. Runs as function (host, internal,
// require, module, exports).

const channels = new Map();

class Channel {
  #subscribers = [];

  constructor(name) {
    this.name = name;
  }

  get hasSubscribers() {
    return this.#subscribers.length > 0;
  }

  subscribe(onMessage) {
    if (typeof onMessage !== 'function') {
      const error = new TypeError('The "subscription" argument must be of type function');
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    this.#subscribers = [...this.#subscribers, onMessage];
  }

  unsubscribe(onMessage) {
    const at = this.#subscribers.indexOf(onMessage);
    if (at === -1) return false;
    this.#subscribers = this.#subscribers.filter((_, i) => i !== at);
    return true;
  }

  publish(message) {
    for (const onMessage of this.#subscribers) {
      try {
        onMessage(message, this.name);
      } catch (error) {
        // A subscriber's error must not break the publisher (as in Node).
        queueMicrotask(() => { throw error; });
      }
    }
  }

  runStores(data, fn, thisArg, ...args) {
    this.publish(data);
    return Reflect.apply(fn, thisArg, args);
  }

  bindStore() {}
  unbindStore() { return false; }
}

function channel(name) {
  let found = channels.get(name);
  if (found === undefined) {
    found = new Channel(name);
    channels.set(name, found);
  }
  return found;
}

const subscribe = (name, onMessage) => channel(name).subscribe(onMessage);
const unsubscribe = (name, onMessage) => channel(name).unsubscribe(onMessage);
const hasSubscribers = (name) => channels.get(name)?.hasSubscribers ?? false;

class TracingChannel {
  constructor(nameOrChannels) {
    for (const event of ['start', 'end', 'asyncStart', 'asyncEnd', 'error']) {
      this[event] = typeof nameOrChannels === 'string'
        ? channel(`tracing:${nameOrChannels}:${event}`)
        : nameOrChannels[event];
    }
  }

  get hasSubscribers() {
    return this.start.hasSubscribers || this.end.hasSubscribers || this.asyncStart.hasSubscribers ||
      this.asyncEnd.hasSubscribers || this.error.hasSubscribers;
  }

  subscribe(handlers) {
    for (const [event, fn] of Object.entries(handlers)) this[event]?.subscribe(fn);
  }

  unsubscribe(handlers) {
    let all = true;
    for (const [event, fn] of Object.entries(handlers)) all = (this[event]?.unsubscribe(fn) ?? false) && all;
    return all;
  }

  traceSync(fn, context = {}, thisArg, ...args) {
    this.start.publish(context);
    try {
      context.result = Reflect.apply(fn, thisArg, args);
      return context.result;
    } catch (error) {
      context.error = error;
      this.error.publish(context);
      throw error;
    } finally {
      this.end.publish(context);
    }
  }

  tracePromise(fn, context = {}, thisArg, ...args) {
    // start, the call, end (and error for a synchronous throw) as traceSync.
    const promise = this.traceSync(() => Promise.resolve(Reflect.apply(fn, thisArg, args)), context);
    delete context.result;
    return promise.then((result) => {
      context.result = result;
      this.asyncStart.publish(context);
      this.asyncEnd.publish(context);
      return result;
    }, (error) => {
      context.error = error;
      this.error.publish(context);
      this.asyncStart.publish(context);
      this.asyncEnd.publish(context);
      throw error;
    });
  }

  traceCallback(fn, position = -1, context = {}, thisArg, ...args) {
    const at = position < 0 ? args.length + position : position;
    const callback = args[at];
    args[at] = (error, result) => {
      if (error) { context.error = error; this.error.publish(context); } else context.result = result;
      this.asyncStart.publish(context);
      try { return callback(error, result); } finally { this.asyncEnd.publish(context); }
    };
    return this.traceSync(fn, context, thisArg, ...args);
  }
}

module.exports = {
  Channel,
  channel,
  subscribe,
  unsubscribe,
  hasSubscribers,
  TracingChannel,
  tracingChannel: (nameOrChannels) => new TracingChannel(nameOrChannels),
};
