// A tiny stand-in for the runtime's Web APIs, used by the engine's build only
// until the real js/NN_*.js set (ending in 99_finalize.js) is complete.
// It implements just enough of HOST.md for the engine's own tests.
'use strict';
internal = {};
Object.defineProperty(globalThis, '__isolane_internal', { value: internal, writable: true, configurable: true });
const def = (name, value) => Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });

const fmt = (args) => args.map((a) => (typeof a === 'string' ? a : (() => { try { return JSON.stringify(a); } catch { return String(a); } })())).join(' ');
def('console', { log: (...a) => host.log('info', fmt(a)), info: (...a) => host.log('info', fmt(a)), debug: (...a) => host.log('debug', fmt(a)), warn: (...a) => host.log('warn', fmt(a)), error: (...a) => host.log('error', fmt(a)) });

class TextEncoder { encode(s = '') { return host.utf8Encode(String(s)); } }
class TextDecoder { decode(u8) { return u8 === undefined ? '' : host.utf8Decode(u8 instanceof Uint8Array ? u8 : new Uint8Array(u8.buffer ?? u8), false, false); } }
def('TextEncoder', TextEncoder); def('TextDecoder', TextDecoder);

const timers = new Map(); let nextTimer = 1;
internal.timerFired = (id) => { const t = timers.get(id); if (!t) return; if (t.repeat === undefined) timers.delete(id); else host.timerStart(id, t.repeat); t.fn(); };
def('setTimeout', (fn, ms = 0) => { const id = nextTimer++; timers.set(id, { fn }); host.timerStart(id, ms); return id; });
def('setInterval', (fn, ms = 0) => { const id = nextTimer++; timers.set(id, { fn, repeat: ms }); host.timerStart(id, ms); return id; });
def('clearTimeout', (id) => { timers.delete(id); host.timerCancel(id); });
def('clearInterval', (id) => { timers.delete(id); host.timerCancel(id); });
def('structuredClone', (v) => host.structuredClone(v));
def('crypto', { randomUUID: () => host.randomUUID(), getRandomValues: (a) => host.randomFill(a), subtle: { digest: async (alg, data) => host.digest(alg, data) } });
Date.now = () => host.now();

class Headers {
  constructor(init) { this._m = new Map(); if (init) for (const [k, v] of (init instanceof Headers ? init.entries() : Array.isArray(init) ? init : Object.entries(init))) this.append(k, v); }
  append(k, v) { k = String(k).toLowerCase(); const o = this._m.get(k); this._m.set(k, o === undefined ? String(v) : o + ', ' + v); }
  set(k, v) { this._m.set(String(k).toLowerCase(), String(v)); }
  get(k) { const v = this._m.get(String(k).toLowerCase()); return v === undefined ? null : v; }
  has(k) { return this._m.has(String(k).toLowerCase()); }
  delete(k) { this._m.delete(String(k).toLowerCase()); }
  entries() { return [...this._m.entries()][Symbol.iterator](); }
  [Symbol.iterator]() { return this.entries(); }
}
def('Headers', Headers);

// A pull-based stream: `new ReadableStream({ pull(controller) })` or an internal body id.
class ReadableStream {
  constructor(source = {}) { this._source = source; this._queue = []; this._done = false; }
  async _read() {
    while (!this._queue.length && !this._done) {
      if (this._source.bodyId !== undefined) { const c = await host.bodyRead(this._source.bodyId); if (c === null) this._done = true; else this._queue.push(c); }
      else if (this._source.pull) { await this._source.pull({ enqueue: (c) => this._queue.push(c), close: () => { this._done = true; } }); }
      else this._done = true;
    }
    return this._queue.length ? { value: this._queue.shift(), done: false } : { value: undefined, done: true };
  }
  getReader() { return { read: () => this._read(), releaseLock() {} }; }
  [Symbol.asyncIterator]() { return { next: () => this._read() }; }
}
def('ReadableStream', ReadableStream);

const toBytes = (b) => (b === null || b === undefined ? null : typeof b === 'string' ? host.utf8Encode(b) : b instanceof Uint8Array ? b : b instanceof ArrayBuffer ? new Uint8Array(b) : host.utf8Encode(String(b)));
class Body {
  async arrayBuffer() { if (this.body instanceof ReadableStream) { const parts = []; let n = 0; for await (const c of this.body) { parts.push(c); n += c.length; } const out = new Uint8Array(n); let o = 0; for (const p of parts) { out.set(p, o); o += p.length; } return out.buffer; } return (this._bytes ?? new Uint8Array(0)).buffer; }
  async text() { return host.utf8Decode(new Uint8Array(await this.arrayBuffer()), false, false); }
  async json() { return JSON.parse(await this.text()); }
}
class Request extends Body {
  constructor(url, init = {}) { super(); this.url = String(url); this.method = init.method ?? 'GET'; this.headers = new Headers(init.headers); this.body = init.body ?? null; this._bytes = this.body instanceof ReadableStream ? null : toBytes(this.body); }
}
class Response extends Body {
  constructor(body = null, init = {}) { super(); this.status = init.status ?? 200; this.statusText = init.statusText ?? ''; this.headers = new Headers(init.headers); if (body instanceof ReadableStream) this.body = body; else { this._bytes = toBytes(body); this.body = null; if (typeof body === 'string' && !this.headers.has('content-type')) this.headers.set('content-type', 'text/plain;charset=UTF-8'); } }
  get ok() { return this.status >= 200 && this.status < 300; }
  static json(v, init = {}) { const r = new Response(JSON.stringify(v), init); r.headers.set('content-type', 'application/json'); return r; }
}
def('Request', Request); def('Response', Response);

def('fetch', async (input, init = {}) => {
  const req = input instanceof Request ? input : new Request(input, init);
  const r = await host.fetch(req.method, req.url, [...req.headers], req._bytes);
  return new Response(r.bodyId ? new ReadableStream({ bodyId: r.bodyId }) : null, { status: r.status, statusText: r.statusText, headers: r.headers });
});

let moduleHandler = null; const listeners = [];
def('addEventListener', (type, fn) => { if (type === 'fetch') listeners.push(fn); });
internal.setModule = (ns) => { if (!ns.default || typeof ns.default.fetch !== 'function') throw new TypeError('the module has no default export with a fetch method'); moduleHandler = ns.default; };
internal.checkServiceWorker = () => { if (!listeners.length) throw new TypeError("no addEventListener('fetch', …) handler"); };

async function send(ctxId, response) {
  if (!(response instanceof Response)) throw new TypeError('the handler did not return a Response');
  const headers = [...response.headers];
  if (!(response.body instanceof ReadableStream)) { host.respond(ctxId, response.status, response.statusText, headers, response._bytes); return; }
  host.respond(ctxId, response.status, response.statusText, headers, true);
  try { for await (const chunk of response.body) await host.responseWrite(ctxId, toBytes(chunk)); host.responseEnd(ctxId, null); }
  catch (e) { host.responseEnd(ctxId, String(e)); }
}

internal.handleRequest = (ctxId, method, url, headers, bodyId, env) => {
  const body = bodyId ? new ReadableStream({ bodyId }) : null;
  const request = new Request(url, { method, headers, body });
  const waits = [];
  const ctx = { waitUntil: (p) => waits.push(Promise.resolve(p).catch((e) => host.log('error', String(e)))), passThroughOnException() {} };
  let result;
  try {
    if (moduleHandler) result = moduleHandler.fetch(request, env, ctx);
    else { let responded = null; const event = { request, respondWith: (r) => { responded = r; }, waitUntil: ctx.waitUntil }; for (const l of listeners) l(event); result = responded; }
  } catch (e) { host.fail(ctxId, String(e), String(e && e.stack)); host.requestDone(ctxId); return; }
  Promise.resolve(result).then((r) => send(ctxId, r)).catch((e) => host.fail(ctxId, String(e), String(e && e.stack)))
    .then(() => Promise.all(waits)).then(() => host.requestDone(ctxId));
};

delete globalThis.__host;
