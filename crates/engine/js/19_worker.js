// 19_worker.js — the worker's side of a request: module (`export default {
// fetch }`) and service-worker (`addEventListener('fetch', …)`) handlers,
// FetchEvent, ExecutionContext, and the engine hooks setModule,
// checkServiceWorker and handleRequest (see HOST.md).
'use strict';

const kCreate = Symbol('create');
let moduleHandler = null;              // the default export, for module workers
const globalTarget = new EventTarget(); // listeners added with addEventListener on the global

// ---- waitUntil bookkeeping, one record per request ----

function newRequestState(ctxId) {
  return { ctxId, waitUntil: [], work: null, finished: false, late: 0, signal: undefined };
}
// Requests in flight by ctxId, for internal.requestAborted.
const active = new Map();
// Called with a request's id once it is over (node:fs drops its /tmp): at its
// requestDone, or, when a WebSocket held it past that (`lingering`), once the
// engine ends it (internal.requestAborted), as its events may still run.
internal.requestEndHooks = new Set();
const lingering = new Set();
const requestDone = (ctxId) => (host.requestDone(ctxId, false) === false ? lingering.add(ctxId) : ended(ctxId));
function ended(ctxId) {
  lingering.delete(ctxId);
  for (const hook of internal.requestEndHooks) hook(ctxId);
}
function addWaitUntil(state, promise) {
  // handled right away, so a rejection is logged once and never "unhandled"
  const p = Promise.resolve(promise);
  const settled = p.then(undefined, (e) => internal.reportError(e));
  // Past requestDone (from a WebSocket event): the request is busy again until it settles.
  if (state.finished) {
    if (state.late++ === 0) host.requestDone(state.ctxId, true);
    settled.then(() => --state.late === 0 && requestDone(state.ctxId));
    return;
  }
  state.waitUntil.push(settled);
  // A cron tick also fails with its waitUntil work (`work` is only set then).
  if (state.work !== null) state.work.push(p.then(() => undefined));
}
// Settles once every promise of `list` did, those added meanwhile too;
// rejects with the first failure (a tick's work; waitUntil's never reject).
async function settleAll(list) {
  let i = 0;
  while (i < list.length) {
    const batch = list.slice(i);
    i = list.length;
    await Promise.all(batch);
  }
}

// ---- ExecutionContext (module workers' third argument) ----

class ExecutionContext {
  #state;
  constructor(key = undefined, state = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#state = state;
  }
  static #check(self) {
    if (!internal.isObject(self) || !(#state in self)) throw new TypeError('Illegal invocation');
  }
  waitUntil(promise) {
    ExecutionContext.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'waitUntil' on 'ExecutionContext'");
    addWaitUntil(this.#state, promise);
  }
  passThroughOnException() { ExecutionContext.#check(this); }
}
internal.enumerableMembers(ExecutionContext, ['waitUntil', 'passThroughOnException'], 'ExecutionContext');

// ---- FetchEvent (service-worker form) ----

class FetchEvent extends Event {
  #request;
  #state = null;
  #dispatching = false;
  #responded = false;
  #response = undefined;

  constructor(type, init = undefined) {
    internal.requireArgs(arguments.length, 2, "Failed to construct 'FetchEvent'");
    const opts = internal.toDictionary(init, 'FetchEventInit');
    if (!internal.isRequest(opts.request)) {
      throw new TypeError("Failed to construct 'FetchEvent': member request is not of type Request.");
    }
    super(type, opts);
    this.#request = opts.request;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#request in self)) throw new TypeError('Illegal invocation');
  }

  get request() { FetchEvent.#check(this); return this.#request; }

  respondWith(response) {
    FetchEvent.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'respondWith' on 'FetchEvent'");
    if (!this.#dispatching) {
      throw new internal.DOMException('respondWith() must be called synchronously from within the fetch event handler.', 'InvalidStateError');
    }
    if (this.#responded) {
      throw new internal.DOMException('respondWith() has already been called on this FetchEvent.', 'InvalidStateError');
    }
    this.#responded = true;
    this.#response = response;
    this.stopImmediatePropagation();
  }

  waitUntil(promise) {
    FetchEvent.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'waitUntil' on 'FetchEvent'");
    if (this.#state === null) {
      throw new internal.DOMException('waitUntil() can only be used on a FetchEvent dispatched by the runtime.', 'InvalidStateError');
    }
    addWaitUntil(this.#state, promise);
  }

  passThroughOnException() { FetchEvent.#check(this); }

  static {
    internal.dispatchFetchEvent = (request, state) => {
      const event = new FetchEvent('fetch', { request });
      event.#state = state;
      event.#dispatching = true;
      let thrown = null;
      try {
        internal.dispatchTrusted(globalTarget, event, (e) => {
          if (thrown === null) thrown = { error: e }; else internal.reportError(e);
        });
      } finally {
        event.#dispatching = false;
      }
      if (event.#responded) {
        if (thrown !== null) internal.reportError(thrown.error);
        return Promise.resolve(event.#response);
      }
      if (thrown !== null) return Promise.reject(thrown.error);
      return Promise.reject(new TypeError('The fetch event listener did not call respondWith(): the script will never generate a response.'));
    };
  }
}
internal.enumerableMembers(FetchEvent, ['request', 'respondWith', 'waitUntil', 'passThroughOnException'], 'FetchEvent');

// ---- cron ticks: ScheduledController (modules), ScheduledEvent (service workers) ----

class ScheduledController {
  #cron;
  #scheduledTime;
  constructor(key = undefined, cron = '', scheduledTime = 0) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#cron = cron;
    this.#scheduledTime = scheduledTime;
  }
  static #check(self) {
    if (!internal.isObject(self) || !(#cron in self)) throw new TypeError('Illegal invocation');
  }
  get cron() { ScheduledController.#check(this); return this.#cron; }
  get scheduledTime() { ScheduledController.#check(this); return this.#scheduledTime; }
  // A failed tick is never retried here (at most once per tick): nothing to turn off.
  noRetry() { ScheduledController.#check(this); }
  static {
    internal.scheduledParts = (c) => ({ cron: c.#cron, scheduledTime: c.#scheduledTime });
  }
}
internal.enumerableMembers(ScheduledController, ['cron', 'scheduledTime', 'noRetry'], 'ScheduledController');

class ScheduledEvent extends Event {
  #cron = '';
  #scheduledTime = 0;
  #state = null;
  constructor(type, init = undefined) {
    const opts = internal.toDictionary(init, 'ScheduledEventInit');
    super(type, opts);
    if (opts.cron !== undefined) this.#cron = internal.toDOMString(opts.cron);
    if (opts.scheduledTime !== undefined) this.#scheduledTime = Number(opts.scheduledTime);
  }
  static #check(self) {
    if (!internal.isObject(self) || !(#cron in self)) throw new TypeError('Illegal invocation');
  }
  get cron() { ScheduledEvent.#check(this); return this.#cron; }
  get scheduledTime() { ScheduledEvent.#check(this); return this.#scheduledTime; }
  noRetry() { ScheduledEvent.#check(this); }
  waitUntil(promise) {
    ScheduledEvent.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'waitUntil' on 'ScheduledEvent'");
    if (this.#state === null) {
      throw new internal.DOMException('waitUntil() can only be used on a ScheduledEvent dispatched by the runtime.', 'InvalidStateError');
    }
    addWaitUntil(this.#state, promise);
  }
  static {
    // Listeners run synchronously; what they hand to waitUntil is the tick's
    // work. The first listener to throw fails the tick.
    internal.dispatchScheduledEvent = (controller, state) => {
      const { cron, scheduledTime } = internal.scheduledParts(controller);
      const event = new ScheduledEvent('scheduled', { cron, scheduledTime });
      event.#state = state;
      let thrown = null;
      internal.dispatchTrusted(globalTarget, event, (e) => {
        if (thrown === null) thrown = { error: e }; else internal.reportError(e);
      });
      return thrown === null ? Promise.resolve() : Promise.reject(thrown.error);
    };
  }
}
internal.enumerableMembers(ScheduledEvent, ['cron', 'scheduledTime', 'noRetry', 'waitUntil'], 'ScheduledEvent');

// ---- reporting to the host ----

function describe(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (typeof v !== 'object' && typeof v !== 'function') return `a ${typeof v}`;
  try {
    const name = v.constructor && v.constructor.name;
    return name ? `an object of type ${name}` : 'an object';
  } catch {
    return 'an object';
  }
}

function errorMessage(e) {
  try {
    if (internal.isObject(e) && (e instanceof Error || internal.isDOMException(e))) return `${e.name}: ${e.message}`;
    return 'Uncaught ' + internal.formatError(e);
  } catch {
    return 'Uncaught exception';
  }
}
function errorStack(e) {
  try {
    if (internal.isObject(e) && typeof e.stack === 'string') return e.stack;
  } catch {
    // ignore
  }
  return '';
}
function fail(ctxId, e) {
  host.fail(ctxId, errorMessage(e), errorStack(e));
}

// The largest slice of a response body handed to the host in one write.
const WRITE_SLICE = 64 * 1024;

// A response body chunk as bytes: ArrayBuffers and views, and strings as
// UTF-8, as workerd sends them.
function toChunk(value) {
  const bytes = internal.chunkBytes(value, true);
  if (bytes === null) throw new TypeError(`A response body stream produced ${describe(value)}; chunks must be Uint8Array (or ArrayBuffer, a view, or a string).`);
  return bytes;
}

// A FixedLengthStream's readable sends the length it declared as the
// Content-Length (over one the worker set, as workerd does); the engine then
// holds the body to it.
function declareLength(list, stream) {
  const length = internal.streamExpectedLength(stream);
  if (length < 0) return;
  // `list` is flat: [name, value, …].
  for (let i = list.length - 2; i >= 0; i -= 2) {
    if (list[i] === 'content-length') list.splice(i, 2);
  }
  list.push('content-length', String(length));
}

// `headOnly`: the request was HEAD, so the answer is the head alone, complete
// once sent: a streamed body is not read but canceled (the head keeps the
// Content-Length it declared), and the front end dropping the body at once is
// no client going away.
async function sendResponse(ctxId, response, headOnly) {
  if (!internal.isResponse(response)) {
    fail(ctxId, new TypeError(`The fetch handler returned ${describe(response)} instead of a Response.`));
    return;
  }
  const { type, status, statusText, headers, body, webSocket } = internal.responseParts(response);
  if (type === 'error') {
    fail(ctxId, new TypeError('The fetch handler returned an error response (Response.error()).'));
    return;
  }
  const list = internal.headersList(headers);
  if (webSocket !== null) {
    // A socket that cannot be handed over (accepted, from `new WebSocket`)
    // fails the request, as a handler's throw would.
    try {
      internal.webSocketRespond(ctxId, webSocket, list);
    } catch (e) {
      fail(ctxId, e);
    }
    return;
  }
  if (body === null) {
    host.respond(ctxId, status, statusText, list, null);
    return;
  }
  if (body.unusable) {
    fail(ctxId, new TypeError(`The fetch handler returned a Response whose body was already used. ${internal.BODY_USED_MESSAGE}`));
    return;
  }
  const whole = body.wholeBytes;
  if (whole === null) declareLength(list, body.getStream());
  if (headOnly && whole === null) {
    host.respond(ctxId, status, statusText, list, null);
    internal.streamCancel(body.getStream()).then(undefined, () => {});
    return;
  }
  if (whole !== null) {
    body.used = true;
    host.respond(ctxId, status, statusText, list, whole);
    return;
  }
  host.respond(ctxId, status, statusText, list, true);
  const reader = internal.acquireReader(body.getStream());
  try {
    for (;;) {
      await reader.read();
      if (reader.done) break;
      const chunk = toChunk(reader.value);
      // Handed over in slices: what waits for a slow reader is bounded by
      // the channel's slots times WRITE_SLICE, whatever chunk size the
      // worker picks.
      for (let at = 0; at < chunk.byteLength; at += WRITE_SLICE) {
        await host.responseWrite(ctxId, chunk.subarray(at, at + WRITE_SLICE));
      }
    }
    reader.release();
    host.responseEnd(ctxId, null);
  } catch (e) {
    reader.cancel(e).then(undefined, () => {});
    reader.release();
    host.responseEnd(ctxId, errorMessage(e));
    internal.reportError(e);
  }
}

// ---- the engine's hooks ----

// A default export extending `cloudflare:workers`' WorkerEntrypoint: each
// request (or tick) gets a new instance made with `(ctx, env)`, as in workerd.
function entrypointHandler(Entrypoint) {
  const handler = {};
  const proto = Entrypoint.prototype;
  if (typeof proto.fetch === 'function') {
    handler.fetch = (request, env, ctx) => new Entrypoint(ctx, env).fetch(request);
  }
  if (typeof proto.scheduled === 'function') {
    handler.scheduled = (controller, env, ctx) => new Entrypoint(ctx, env).scheduled(controller);
  }
  return handler;
}

// The handler a service call runs: the default export's, or, for the
// binding's `entrypoint`, that exported class's `fetch` (a throwing one when
// there is none, so the caller gets the error).
function serviceHandler(entrypoint) {
  if (entrypoint === null) return moduleHandler;
  const Entrypoint = internal.moduleNamespace?.[entrypoint];
  if (typeof Entrypoint !== 'function' || typeof Entrypoint.prototype?.fetch !== 'function') {
    return { fetch() { throw new TypeError(`The Worker exports no entrypoint ${entrypoint} with a fetch() method.`); } };
  }
  return entrypointHandler(Entrypoint);
}

internal.serviceHandler = serviceHandler;

internal.setModule = function setModule(namespace) {
  // Durable Object classes are found here by name (isolane-bindings' 28_durable_object.js).
  internal.moduleNamespace = namespace;
  let def = namespace.default;
  if (typeof def === 'function' && internal.WorkerEntrypoint !== undefined &&
      def.prototype instanceof internal.WorkerEntrypoint) {
    def = entrypointHandler(def);
  }
  if (def === undefined) {
    throw new TypeError('The worker module has no default export; expected `export default { async fetch(request, env, ctx) { … } }`.');
  }
  if (!internal.isObject(def) || (typeof def.fetch !== 'function' && typeof def.scheduled !== 'function' && typeof def.queue !== 'function')) {
    throw new TypeError("The worker module's default export has no fetch() handler; expected `export default { async fetch(request, env, ctx) { … } }` (or a scheduled() or queue() handler).");
  }
  moduleHandler = def;
};

internal.checkServiceWorker = function checkServiceWorker() {
  if (internal.listenerCount(globalTarget, 'fetch') === 0 && internal.listenerCount(globalTarget, 'scheduled') === 0) {
    throw new TypeError("The worker script added no fetch event listener; expected `addEventListener('fetch', (event) => event.respondWith(…))` (or a 'scheduled' listener).");
  }
};

// After the answer was reported (`reported`): the request's waitUntil work
// runs to its end, then the engine hears it is done. Never rejects.
function finish(state, reported) {
  const ctxId = state.ctxId;
  return reported
    .then(undefined, (e) => internal.reportError(e))
    .then(() => settleAll(state.waitUntil))
    .then(() => {
      state.finished = true;
      if (active.get(ctxId) === state) active.delete(ctxId);
      requestDone(ctxId);
    })
    .then(undefined, (e) => internal.reportError(e));
}

// One request through `handler` (a module's default export), or through the
// service worker's fetch listeners when `handler` is null.
function runRequest(handler, ctxId, method, url, headers, bodyId, env) {
  const state = newRequestState(ctxId);
  let responsePromise;
  try {
    const request = internal.requestFromHost(method, url, headers, bodyId);
    state.signal = internal.requestSignal(request);
    active.set(ctxId, state);
    if (internal.isObject(env)) Object.freeze(env);
    if (handler !== null) {
      if (typeof handler.fetch !== 'function') throw new TypeError('The worker has no fetch handler.');
      const ctx = new ExecutionContext(kCreate, state);
      responsePromise = Promise.resolve(handler.fetch(request, env, ctx));
    } else if (internal.listenerCount(globalTarget, 'fetch') > 0) {
      responsePromise = internal.dispatchFetchEvent(request, state);
    } else {
      throw new TypeError('The worker has no fetch handler.');
    }
  } catch (e) {
    responsePromise = Promise.reject(e);
  }
  return finish(state, responsePromise
    .then((response) => sendResponse(ctxId, response, method === 'HEAD'), (e) => fail(ctxId, e)));
}

// A call answered with bytes rather than a Response (a JS RPC call, as
// src/service_call.rs says): `call(ctx)` settles with `[status, bytes]`,
// sent whole by host.respond.
function runCall(ctxId, env, call) {
  const [state, answered] = started(ctxId, env, false, (state) => call(new ExecutionContext(kCreate, state)));
  return finish(state, answered
    .then(([status, bytes]) => host.respond(ctxId, status, '', [], bytes), (e) => fail(ctxId, e)));
}

// A new request's record, in `active` (`work`: its waitUntil work fails it),
// and what `start(state)` settles to.
function started(ctxId, env, work, start) {
  const state = newRequestState(ctxId);
  if (work) state.work = [];
  try {
    active.set(ctxId, state);
    if (internal.isObject(env)) Object.freeze(env);
    return [state, Promise.resolve(start(state))];
  } catch (e) {
    return [state, Promise.reject(e)];
  }
}

internal.requestAborted = function requestAborted(ctxId) {
  if (lingering.has(ctxId)) return ended(ctxId);
  const state = active.get(ctxId);
  if (state === undefined) return;
  active.delete(ctxId);
  if (state.signal !== undefined) {
    internal.signalAbort(state.signal, new internal.DOMException('The client disconnected before the response was complete.', 'AbortError'));
  }
};

// An event whose answer waits for all its work, the handler's (`start(state)`)
// and its waitUntil's: a 200 with `body()` once that succeeded, `failed(e)` on
// the first failure.
function runWork(ctxId, env, start, body = () => null, failed = (e) => fail(ctxId, e)) {
  const [state, done] = started(ctxId, env, true, start);
  return finish(state, done
    .then(() => settleAll(state.work))
    .then(() => host.respond(ctxId, 200, 'OK', [], body()), failed));
}

// One cron tick through `handler.scheduled` (a module), or through the
// service worker's 'scheduled' listeners when `handler` is null. Success is a
// bodiless 200 once the handler and all its waitUntil work succeeded; the
// first failure of either fails the tick.
function runScheduled(handler, ctxId, cron, scheduledTime, env) {
  return runWork(ctxId, env, (state) => {
    const controller = new ScheduledController(kCreate, cron, scheduledTime);
    if (handler !== null && typeof handler.scheduled === 'function') {
      return handler.scheduled(controller, env, new ExecutionContext(kCreate, state));
    }
    if (handler === null && internal.listenerCount(globalTarget, 'scheduled') > 0) {
      return internal.dispatchScheduledEvent(controller, state);
    }
    throw new TypeError('The worker has no scheduled handler; expected `export default { async scheduled(controller, env, ctx) { … } }`.');
  });
}

// One batch of a queue's messages through `handler.queue` (a module), the
// batch made by the bindings' `internal.queueMessageBatch` (35_queue.js). The
// answer is what the handler's ack()/retry() calls said, as JSON
// (isolane-storage's QueueBatch): a 200 once the handler and its waitUntil work
// resolved, a 500 (its exception reported) when they threw.
function runQueue(handler, ctxId, event, env) {
  let made;
  return runWork(ctxId, env, (state) => {
    if (handler === null || typeof handler.queue !== 'function') {
      throw new TypeError('Handler does not export a queue() function; expected `export default { async queue(batch, env, ctx) { … } }`.');
    }
    if (internal.queueMessageBatch === undefined) throw new TypeError('Queues are not available in this runtime.');
    made = internal.queueMessageBatch(event);
    return handler.queue(made[0], env, new ExecutionContext(kCreate, state));
  }, () => made[1](false), (e) => {
    if (made === undefined) return fail(ctxId, e);
    internal.reportError(e);
    return host.respond(ctxId, 500, 'Internal Server Error', [], made[1](true));
  });
}

// One event of a Durable Object delivered by the engine, `deliver()`: an
// alarm (`internal.deliverAlarm`) or a message of a hibernatable WebSocket
// (`internal.deliverWebSocketEvent`, isolane-bindings' 28_durable_object.js). A bodiless 200
// once the object's handler and its writes are done.
const runObjectEvent = (ctxId, deliver) => runWork(ctxId, undefined, deliver);

// One job's work (src/work.rs): a request for the Worker's fetch handler,
// or, when `event` is given, the event it names by its `type` (one object,
// made by src/event_object.rs). A fetch passes no event: the hot path makes no
// object for it.
internal.handleRequest = function handleRequest(ctxId, method, url, headers, bodyId, env, event = undefined) {
  // A request starts outside every AsyncLocalStorage (enterWith does not
  // leak into the next one).
  internal.asyncContext?.set(undefined);
  internal.workerEnv = env; // `env` of cloudflare:workers (the bindings' workers.js)
  if (event === undefined) return runRequest(moduleHandler, ctxId, method, url, headers, bodyId, env);
  switch (event.type) {
    case 'scheduled':
      return runScheduled(moduleHandler, ctxId, event.cron, event.scheduledTime, env);
    case 'alarm':
      return runObjectEvent(ctxId, () => internal.deliverAlarm(event.className, event.id, event.retryCount));
    case 'objectSocket':
      return runObjectEvent(ctxId, () => internal.deliverWebSocketEvent(event.className, event.id, event.socketId,
        event.kind, event.data, event.code, event.reason, event.tags, event.attachment));
    case 'queue':
      return runQueue(moduleHandler, ctxId, event, env);
    case 'workflow': // isolane-bindings' js/40_workflow.js
      return runCall(ctxId, env, (ctx) => internal.runWorkflow(JSON.parse(event.run), env, ctx));
    case 'objectCall':
      // A stub call forwarded to this thread, the object's home
      // (internal.objectCallHandler, isolane-bindings' 28_durable_object.js).
      return runRequest(internal.objectCallHandler(event.className, event.id, event.rpcMethod), ctxId, method, url, headers, bodyId, env);
    case 'serviceCall':
      // An outbound Worker's call (a dispatched Worker's fetch()): the
      // dispatch's params join its env for this call only (docs/dispatch.md).
      if (event.params !== null) env = internal.workerEnv = callEnv(env, event.params);
      // A JS RPC call (its payload the serialized arguments) answers with
      // bytes, no Request nor Response made (isolane-bindings'
      // js/32_rpc_target.js, internal.serviceRpcCall).
      if (event.payload !== null && internal.serviceRpcCall !== undefined) {
        return runCall(ctxId, env, (ctx) => internal.serviceRpcCall(event, env, ctx));
      }
      // A call through another Worker's service binding, on the caller's
      // thread (src/host/service.rs): the default fetch handler, or the named
      // entrypoint class's.
      // With the bindings' family loaded, its handler (isolane-bindings'
      // js/32_rpc_target.js) also takes JS RPC calls and sets ctx.props.
      return runRequest(internal.serviceCallHandler?.(event) ?? serviceHandler(event.entrypoint), ctxId, method, url, headers, bodyId, env);
  }
  // Unreachable: the engine makes every event this knows.
  return runObjectEvent(ctxId, () => { throw new TypeError(`unknown event type ${event.type}`); });
};

// `env` with the JSON object `params`' members beside (and over) its own:
// a new object each call, so nothing is left for the next.
function callEnv(env, params) {
  return Object.assign(Object.create(Object.getPrototypeOf(env)), env, JSON.parse(params));
}

// Called once by the engine while it builds the startup snapshot, where the
// host has no state (every host call is a no-op): runs a few typical requests
// through the runtime so the functions on the request path are compiled, and
// the snapshot (made with their bytecode kept) spares every new isolate those
// lazy compiles on its first request. Leaves no state behind: the handler is
// local and request ids are not recorded.
internal.warmUp = function warmUp() {
  const handler = {
    async fetch(request, env, ctx) {
      const url = new URL(request.url);
      request.headers.get('accept');
      for (const [name, value] of request.headers) internal.toDOMString(name + value);
      ctx.waitUntil(Promise.resolve());
      if (url.pathname === '/json') return Response.json({ path: url.pathname, query: url.searchParams.get('q') });
      if (url.pathname === '/status') return new Response(null, { status: 204 });
      return new Response('warm', { headers: { 'content-type': 'text/plain; charset=utf-8' } });
    },
  };
  const headers = 'host\0warm.up\0accept\0*/*\0user-agent\0isolane-warm-up';
  for (const path of ['/', '/json?q=1', '/status']) {
    runRequest(handler, 0, 'GET', `http://warm.up${path}`, headers, 0, {});
  }
  // The plain-function and service-worker forms share everything after the handler.
  runRequest({ fetch: () => new Response('warm') }, 0, 'GET', 'http://warm.up/', headers, 0, {});
};

// ---- globals ----

function addEventListener(type, listener, options = undefined) {
  return globalTarget.addEventListener(...arguments);
}
function removeEventListener(type, listener, options = undefined) {
  return globalTarget.removeEventListener(...arguments);
}
function dispatchEvent(event) {
  return globalTarget.dispatchEvent(...arguments);
}

// reportError (HTML Standard): an `error` ErrorEvent at the global; logged
// as an uncaught exception unless a listener called preventDefault().
function reportError(e) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'reportError'");
  let message = '';
  try {
    message = internal.isObject(e) && typeof e.message === 'string' ? e.message : String(e);
  } catch {
    // an unprintable value: the event still goes out
  }
  const event = new ErrorEvent('error', { message, error: e, cancelable: true });
  if (internal.dispatchTrusted(globalTarget, event)) internal.reportError(e);
}

// Isolane presents itself as a Workers runtime (docs/engine.md): libraries
// detect Workers by this exact user agent (hono/adapter's getRuntimeKey,
// and many SDKs), and workerd reports one CPU.
class Navigator {
  constructor(key = undefined) { if (key !== kCreate) internal.illegalConstructor(); }
  get userAgent() { return 'Cloudflare-Workers'; }
  get hardwareConcurrency() { return 1; }
  get language() { return 'en'; }
}
internal.enumerableMembers(Navigator, ['userAgent', 'hardwareConcurrency', 'language'], 'Navigator');

internal.defineGlobal('addEventListener', addEventListener);
internal.defineGlobal('removeEventListener', removeEventListener);
internal.defineGlobal('dispatchEvent', dispatchEvent);
internal.defineGlobal('reportError', reportError);
internal.defineGlobal('FetchEvent', FetchEvent);
internal.defineGlobal('ExecutionContext', ExecutionContext);
internal.defineGlobal('ScheduledController', ScheduledController);
internal.defineGlobal('ScheduledEvent', ScheduledEvent);
internal.defineGlobal('Navigator', Navigator);
internal.defineGlobal('navigator', new Navigator(kCreate));
internal.defineGlobal('self', globalThis);
