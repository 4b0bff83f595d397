#!/usr/bin/env node
// Development harness for the runtime JavaScript in crates/engine/js (with
// crates/events/js, crates/streams/js and crates/fetch-api/js, below it, and
// crates/web/js). A test tool, kept with the suites it runs (tests/web_api).
//
// It emulates the engine's `host` object (HOST.md) with node's own URL,
// TextEncoder, crypto, timers and fetch, evaluates the NN_*.js files in
// file-name order inside a fresh `vm` context (its own globals, no node APIs),
// each wrapped exactly as the engine wraps them, then loads a worker and sends
// it one request through `internal.handleRequest`.
//
// Usage:
//   node crates/engine/tests/js_harness/harness.js                 # every suite in tests/web_api
//   node crates/engine/tests/js_harness/harness.js url.js fetch.js # some suites
//   node crates/engine/tests/js_harness/harness.js --print some-worker.js   # print the response
//   options: --verbose (print the worker's logs), --method GET, --body TEXT
'use strict';

const vm = require('node:vm');
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const nodeCrypto = require('node:crypto');

if (typeof vm.SourceTextModule !== 'function') {
  // ES module workers need vm.SourceTextModule: re-run with the flag.
  const { spawnSync } = require('node:child_process');
  const r = spawnSync(process.execPath,
    ['--experimental-vm-modules', '--no-warnings', __filename, ...process.argv.slice(2)],
    { stdio: 'inherit' });
  process.exit(r.status === null ? 1 : r.status);
}

const JS_DIR = path.resolve(__dirname, '../../js');
// The crates below the core (crates/events/js, crates/streams/js,
// crates/fetch-api/js) run among the core's files in name order, as its units
// claim them; the Web platform family's files (crates/web/js) run after the
// core's, before 99_finalize.js.
const BELOW_JS_DIRS = ['events', 'streams', 'fetch-api'].map((c) => path.resolve(__dirname, `../../../${c}/js`));
const WEB_JS_DIR = path.resolve(__dirname, '../../../web/js');
const SUITE_DIR = path.resolve(__dirname, '../web_api');

// As build.rs collects them: each `NN_name.js`, and each `NN_name/` folder
// as one file, its `*.js` parts joined in name order. [name, source] pairs.
function filesOf(dir) {
  return fs.readdirSync(dir, { withFileTypes: true })
    .filter((e) => /^\d\d_/.test(e.name) && (e.isDirectory() || e.name.endsWith('.js')))
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((e) => {
      const at = path.join(dir, e.name);
      if (!e.isDirectory()) return [e.name, fs.readFileSync(at, 'utf8')];
      const parts = fs.readdirSync(at).filter((f) => f.endsWith('.js')).sort();
      return [`${e.name}.js`, parts.map((f) => fs.readFileSync(path.join(at, f), 'utf8')).join('\n')];
    });
}
function runtimeFiles() {
  const core = [JS_DIR, ...BELOW_JS_DIRS].flatMap(filesOf).sort(([a], [b]) => (a < b ? -1 : 1));
  const last = core.filter(([name]) => name.startsWith('99_'));
  return [...core.filter(([name]) => !name.startsWith('99_')), ...filesOf(WEB_JS_DIR), ...last];
}

// Request headers host.fetch does not pass on (HOST.md).
const CONNECTION_HEADERS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'upgrade']);

// One "isolate": a vm context with the runtime JS evaluated into it.
function createRuntime(opts = {}) {
  const logs = [];
  const ctx = vm.createContext({}, { codeGeneration: { strings: false, wasm: true } });
  const R = vm.runInContext(
    '({ Uint8Array, ArrayBuffer, Promise, TypeError, Error, RangeError, Array, Object, Map, Set, Date, RegExp, DataView, ' +
    'Boolean, Number, String, EvalError, ReferenceError, SyntaxError, URIError })', ctx);
  const u8 = (buf) => { const out = new R.Uint8Array(buf.byteLength); out.set(buf); return out; };
  const arr = (xs) => R.Array.from(xs);
  const typeError = (msg) => new R.TypeError(msg);
  const promise = (p) => new R.Promise((res, rej) => p.then(res, (e) => rej(e instanceof Error && !(e instanceof R.Error) ? typeError(String(e.message)) : e)));

  let internal = null;
  const timers = new Map();
  const bodies = new Map(); // bodyId -> { read(): Promise<Uint8Array|null>, cancel() }
  let nextBodyId = 1;
  const requests = new Map(); // ctxId -> record

  const urlArray = (u) => arr([u.href, u.origin, u.protocol, u.username, u.password, u.host, u.hostname,
    u.port, u.pathname, u.search, u.hash]);

  const host = {
    log(level, message) {
      if (!['debug', 'info', 'warn', 'error'].includes(level)) throw typeError(`bad log level ${level}`);
      if (typeof message !== 'string') throw typeError('log message must be a string');
      logs.push([level, message]);
      if (opts.verbose) process.stderr.write(`  [${level}] ${message}\n`);
    },
    // An error nobody caught (HOST.md): the engine puts it in the
    // invocation's tail; here, a log line.
    exception(message, stack) {
      logs.push(['error', String(message)]);
      if (opts.verbose) process.stderr.write(`  [exception] ${message}\n${stack}\n`);
    },
    now() { return Date.now(); },
    utf8Encode(s) { return u8(Buffer.from(String(s).toWellFormed(), 'utf8')); },
    utf8EncodeInto(s, dest) {
      const r = new TextEncoder().encodeInto(String(s), dest);
      return arr([r.read, r.written]);
    },
    utf8Decode(bytes, fatal, ignoreBOM) {
      try {
        return new TextDecoder('utf-8', { fatal: !!fatal, ignoreBOM: !!ignoreBOM }).decode(bytes);
      } catch (e) {
        throw typeError('The encoded data was not valid for encoding utf-8');
      }
    },
    // TextDecoder's other encodings: node's own decoders stand in for encoding_rs.
    encodingForLabel(label) {
      try { return new TextDecoder(String(label)).encoding; } catch { return null; }
    },
    textDecoderNew(label, ignoreBOM) { return { label: String(label), ignoreBOM: !!ignoreBOM, decoder: null }; },
    textDecode(handle, bytes, fatal, last) {
      handle.decoder ??= new TextDecoder(handle.label, { fatal: !!fatal, ignoreBOM: handle.ignoreBOM });
      try {
        const s = handle.decoder.decode(bytes, { stream: !last });
        if (last) handle.decoder = null;
        return s;
      } catch (e) {
        handle.decoder = null;
        throw typeError(e.message);
      }
    },
    urlParse(input, base) {
      try {
        return urlArray(base === undefined ? new URL(String(input)) : new URL(String(input), String(base)));
      } catch {
        return null;
      }
    },
    urlSet(href, part, value) {
      const u = new URL(href);
      if (part === 'href') {
        try { return urlArray(new URL(String(value))); } catch { throw typeError(`Invalid URL: ${value}`); }
      }
      u[part] = String(value);
      return urlArray(u);
    },
    randomFill(bytes) {
      if (bytes.byteLength > 65536) throw typeError('QuotaExceededError: more than 65536 bytes requested');
      nodeCrypto.randomFillSync(bytes);
      return bytes;
    },
    randomUUID() { return nodeCrypto.randomUUID(); },
    digest(algorithm, bytes) {
      const name = { 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' }[algorithm];
      if (!name) throw typeError(`unknown digest ${algorithm}`);
      const d = nodeCrypto.createHash(name).update(bytes).digest();
      return u8(d).buffer;
    },
    structuredClone(value) { return clone(value); },
    timerStart(id, delay) {
      if (timers.has(id)) clearTimeout(timers.get(id));
      timers.set(id, setTimeout(() => { timers.delete(id); internal.timerFired(id); }, Math.max(0, delay)));
    },
    timerCancel(id) {
      clearTimeout(timers.get(id));
      timers.delete(id);
    },
    fetch(method, url, headers, body) {
      if (opts.subrequests !== undefined && opts.subrequests-- <= 0) {
        return R.Promise.reject(typeError('Too many subrequests.'));
      }
      return promise((async () => {
        let res;
        try {
          res = await fetch(url, {
            // As the engine: the connection's own headers are the client's.
            method, headers: headers.filter((h) => !CONNECTION_HEADERS.has(h[0])).map((h) => [h[0], h[1]]), redirect: 'manual',
            body: body === null ? undefined : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
          });
        } catch (e) {
          throw typeError(`Network connection lost. (${e.cause ? e.cause.message : e.message})`);
        }
        let bodyId = 0;
        if (res.body) {
          const reader = res.body.getReader();
          bodyId = nextBodyId++;
          bodies.set(bodyId, {
            async read() {
              for (;;) {
                const r = await reader.read();
                if (r.done) return null;
                // Still this realm's bytes: resolving with the worker's own
                // Uint8Array would look up a `then` the worker can patch.
                if (r.value.byteLength) return r.value;
              }
            },
            cancel() { reader.cancel().catch(() => {}); },
          });
        }
        const out = new R.Object();
        out.status = res.status;
        out.statusText = res.statusText;
        out.headers = arr([...res.headers].map((p) => arr(p)));
        out.bodyId = bodyId;
        return out;
      })());
    },
    // A rough data: URL processor (the engine uses servo's data-url crate):
    // enough for the suites, not the whole Fetch Standard algorithm.
    dataUrl(href) {
      if (href.length > 16 << 20) throw typeError(`fetch failed: a data: URL may be at most ${16 << 20} bytes long`);
      const rest = href.slice('data:'.length).split('#')[0];
      const comma = rest.indexOf(',');
      if (comma < 0) throw typeError('fetch failed: invalid data: URL (no comma)');
      let head = rest.slice(0, comma).trim();
      const pct = Buffer.from(rest.slice(comma + 1).replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      let body = pct;
      const b64 = /;\s*base64\s*$/i.test(head);
      if (b64) {
        head = head.replace(/;\s*base64\s*$/i, '');
        const text = pct.toString('latin1').replace(/[\t\n\f\r ]/g, '').replace(/==?$/, '');
        if (text.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(text)) throw typeError('fetch failed: invalid data: URL (its base64 body is invalid)');
        body = Buffer.from(text, 'base64');
      }
      let mime = head.toLowerCase().startsWith(';') || head === '' ? 'text/plain' + head : head;
      if (!/^[^\/;]+\/[^\/;]+/.test(mime)) mime = 'text/plain;charset=US-ASCII';
      mime = mime.split(';').map((part, i) => {
        if (i === 0) return part.trim().toLowerCase();
        const [name, ...value] = part.split('=');
        return `${name.trim().toLowerCase()}=${value.join('=').replace(/^"|"$/g, '')}`;
      }).join(';');
      if (mime === 'text/plain') mime = b64 && head !== '' ? mime : 'text/plain;charset=US-ASCII';
      return arr([mime, u8(body)]);
    },
    bodyRead(id) {
      const b = bodies.get(id);
      if (!b) return R.Promise.reject(typeError(`bodyRead: unknown body ${id}`));
      return promise(b.read().then((chunk) => {
        if (chunk === null) { bodies.delete(id); return null; }
        // As the engine: an object without a prototype (HOST.md).
        const read = R.Object.create(null);
        read.chunk = u8(chunk);
        return read;
      }));
    },
    bodyCancel(id) {
      const b = bodies.get(id);
      if (b) { bodies.delete(id); b.cancel(); }
    },
    respond(ctxId, status, statusText, headers, body) {
      const r = requests.get(ctxId);
      if (!r) throw typeError(`respond: unknown request ${ctxId}`);
      if (r.head) throw typeError('respond called twice');
      r.head = { status, statusText, headers: headers.map((h) => [h[0], h[1]]) };
      if (body === true) r.streaming = true;
      else if (body !== null) r.chunks.push(Buffer.from(body));
    },
    responseWrite(ctxId, chunk) {
      const r = requests.get(ctxId);
      if (!r || !r.streaming || r.ended) throw typeError('responseWrite without a streamed response');
      if (!(chunk instanceof R.Uint8Array)) throw typeError('responseWrite: chunk is not a Uint8Array');
      r.chunks.push(Buffer.from(chunk));
      return new R.Promise((res) => setImmediate(res));
    },
    responseEnd(ctxId, errorMessage) {
      const r = requests.get(ctxId);
      if (!r || !r.streaming || r.ended) throw typeError('responseEnd without a streamed response');
      r.ended = true;
      r.streamError = errorMessage;
    },
    fail(ctxId, message, stack) {
      const r = requests.get(ctxId);
      r.failed = { message, stack };
      if (opts.verbose) process.stderr.write(`  [fail] ${message}\n${stack}\n`);
    },
    requestDone(ctxId) {
      const r = requests.get(ctxId);
      r.done = true;
      r.resolve();
    },
  };

  Object.defineProperty(ctx, '__host', { value: host, writable: true, configurable: true });
  // structuredClone stand-in, built inside the context so results have its prototypes.
  const clone = vm.runInContext(CLONE_SRC, ctx);

  for (const [file, src] of runtimeFiles()) {
    const wrapped = `(function (host, internal) {${src}\n})(globalThis.__host, globalThis.__isolane_internal);`;
    vm.runInContext(wrapped, ctx, { filename: file });
  }
  // What the engine does: take the internal object into a private slot.
  internal = vm.runInContext('globalThis.__isolane_internal', ctx);
  vm.runInContext('delete globalThis.__isolane_internal', ctx);

  // `withHarness`: a Web API suite, which runs with preamble.js before it.
  async function loadWorker(file, env = {}, withHarness = false) {
    const own = fs.readFileSync(file, 'utf8');
    const src = withHarness ? fs.readFileSync(path.join(__dirname, 'preamble.js'), 'utf8') + own : own;
    if (/^\s*(import|export)\b/m.test(src)) {
      const mod = new vm.SourceTextModule(src, { context: ctx, identifier: file });
      await mod.link(() => { throw new Error('imports are not supported'); });
      await mod.evaluate();
      internal.setModule(mod.namespace);
    } else {
      // A service worker's bindings are globals (as the engine sets them).
      for (const [name, value] of Object.entries(env)) ctx[name] = value;
      vm.runInContext(src, ctx, { filename: file });
      internal.checkServiceWorker();
    }
  }

  let nextCtxId = 1;
  function request(method, url, headers, body, env, timeoutMs = 15000) {
    const ctxId = nextCtxId++;
    let bodyId = 0;
    if (body !== null && body !== undefined) {
      bodyId = nextBodyId++;
      const chunks = Array.isArray(body) ? body.map((c) => Buffer.from(c)) : [Buffer.from(body)];
      bodies.set(bodyId, {
        async read() { return chunks.length ? chunks.shift() : null; },
        cancel() { chunks.length = 0; },
      });
    }
    const record = { head: null, chunks: [], streaming: false, ended: false, failed: null, done: false, logs };
    const donePromise = new Promise((resolve) => { record.resolve = resolve; });
    requests.set(ctxId, record);
    const envObj = vm.runInContext(`(${JSON.stringify(env || {})})`, ctx);
    internal.handleRequest(ctxId, method, url, headers.flat().join('\0'), bodyId, envObj);
    let timer;
    const timeout = new Promise((resolve) => { timer = setTimeout(() => { record.timedOut = true; resolve(); }, timeoutMs); });
    return Promise.race([donePromise, timeout]).then(() => {
      clearTimeout(timer);
      record.body = Buffer.concat(record.chunks);
      return record;
    });
  }

  function pendingTimers() { return timers.size; }
  function cancelAllTimers() { for (const t of timers.values()) clearTimeout(t); timers.clear(); }

  return { ctx, host, loadWorker, request, logs, pendingTimers, cancelAllTimers };
}

const CLONE_SRC = String.raw`(function () {
  const tag = (v) => Object.prototype.toString.call(v).slice(8, -1);
  const typed = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
    'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
  const errors = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };
  function fail(v) {
    let what;
    try { what = typeof v === 'function' ? String(v) : typeof v === 'symbol' ? v.toString() : '#<' + (v.constructor?.name || 'Object') + '>'; } catch { what = 'value'; }
    throw new TypeError('DataCloneError: ' + what + ' could not be cloned.');
  }
  return function clone(value) {
    const seen = new Map();
    function c(v) {
      if (typeof v === 'symbol' || typeof v === 'function') fail(v);
      if (typeof v !== 'object' || v === null) return v;
      if (seen.has(v)) return seen.get(v);
      const t = tag(v);
      let out;
      if (Array.isArray(v)) {
        out = new Array(v.length); seen.set(v, out);
        for (const k of Object.keys(v)) out[k] = c(v[k]);
        return out;
      }
      if (t === 'Date') { out = new Date(v.getTime()); seen.set(v, out); return out; }
      if (t === 'RegExp') { out = new RegExp(v.source, v.flags); seen.set(v, out); return out; }
      if (t === 'Boolean' || t === 'Number' || t === 'String' || t === 'BigInt') { out = Object(v.valueOf()); seen.set(v, out); return out; }
      if (t === 'ArrayBuffer') { out = v.slice(0); seen.set(v, out); return out; }
      if (typed.includes(t)) { out = new globalThis[t](c(v.buffer), v.byteOffset, v.length); seen.set(v, out); return out; }
      if (t === 'DataView') { out = new DataView(c(v.buffer), v.byteOffset, v.byteLength); seen.set(v, out); return out; }
      if (t === 'Map') { out = new Map(); seen.set(v, out); for (const [k, x] of v) out.set(c(k), c(x)); return out; }
      if (t === 'Set') { out = new Set(); seen.set(v, out); for (const k of v) out.add(c(k)); return out; }
      if (t === 'Error' || v instanceof Error) {
        const Ctor = errors[v.name] || Error;
        out = new Ctor(v.message); seen.set(v, out);
        if (v.stack !== undefined) out.stack = v.stack;
        if ('cause' in v) out.cause = c(v.cause);
        return out;
      }
      if (t === 'Promise' || t === 'WeakMap' || t === 'WeakSet' || t === 'WeakRef') fail(v);
      out = {}; seen.set(v, out);
      for (const k of Object.keys(v)) out[k] = c(v[k]);
      return out;
    }
    return c(value);
  };
})()`;

// A local HTTP server for the fetch suite (env TARGET).
function startTargetServer() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url, 'http://x');
      const body = Buffer.concat(chunks);
      if (u.pathname === '/echo') {
        res.writeHead(200, { 'content-type': 'application/json', 'x-echo': 'yes', 'set-cookie': ['a=1', 'b=2'] });
        res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: body.toString('utf8') }));
      } else if (u.pathname === '/status') {
        res.writeHead(Number(u.searchParams.get('code') || 200), { 'content-type': 'text/plain' });
        res.end(u.searchParams.get('body') || '');
      } else if (u.pathname === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        let i = 0;
        const tick = () => {
          if (i === 5) { res.end(); return; }
          res.write(`chunk${i++};`);
          setTimeout(tick, 5);
        };
        tick();
      } else if (u.pathname === '/slow') {
        const t = setTimeout(() => { res.writeHead(200); res.end('slow'); }, 3000);
        res.on('close', () => clearTimeout(t));
      } else if (u.pathname === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.alloc(1 << 20, 7));
      } else if (u.pathname === '/redirect') {
        res.writeHead(302, { location: '/echo' });
        res.end();
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// The request every suite worker gets (tests/web_api/README.md).
const SUITE_REQUEST = {
  method: 'POST',
  url: 'http://localhost/suite?x=1',
  headers: [['content-type', 'text/plain;charset=UTF-8'], ['x-suite', 'web_api']],
  body: 'ping',
};

// Suites whose API is a host function node cannot emulate: run them through
// the engine (`cargo test -p isolane-engine --test web_api`).
const ENGINE_ONLY = {
  'urlpattern.js': 'URLPattern parses with the urlpattern crate (host.urlPatternParse)',
  'html_rewriter.js': 'HTMLRewriter is lol_html (host.htmlRewriter*)',
  'form_data.js': 'multipart bodies parse with the multer crate (host.formDataParse)',
  'compression.js': 'CompressionStream is flate2 (host.compression*)',
  'encoding_legacy.js': "legacy encodings are encoding_rs (host.textDecode*); node's ICU lacks some and differs on others",
};

async function runSuite(file, opts, target) {
  const name = path.basename(file);
  if (ENGINE_ONLY[name]) return { name, ok: true, summary: `skipped: ${ENGINE_ONLY[name]}` };
  const rt = createRuntime(opts);
  try {
    await rt.loadWorker(file, { TARGET: target, SUITE: name }, true);
  } catch (e) {
    return { name, ok: false, summary: `load failed: ${e && e.stack || e}` };
  }
  const rec = await rt.request(SUITE_REQUEST.method, SUITE_REQUEST.url, SUITE_REQUEST.headers, SUITE_REQUEST.body,
    { TARGET: target, SUITE: name });
  rt.cancelAllTimers();
  if (rec.timedOut) return { name, ok: false, summary: 'timed out (requestDone never called)' };
  if (rec.failed) return { name, ok: false, summary: `handler failed: ${rec.failed.message}\n${rec.failed.stack}` };
  let result;
  try {
    result = JSON.parse(rec.body.toString('utf8'));
  } catch {
    return { name, ok: false, summary: `status ${rec.head && rec.head.status}, body not JSON: ${rec.body.toString('utf8').slice(0, 500)}` };
  }
  const failures = [...(result.failed || [])];
  // Optional: expected log lines (level, message), in order, as a subsequence of what was logged.
  if (Array.isArray(result.logs)) {
    let i = 0;
    for (const [level, message] of rec.logs) {
      if (i < result.logs.length && result.logs[i][0] === level && result.logs[i][1] === message) i++;
    }
    if (i < result.logs.length) {
      failures.push({ name: 'expected log line', error: `missing ${JSON.stringify(result.logs[i])}; got:\n` + rec.logs.map((l) => '    ' + JSON.stringify(l)).join('\n') });
    }
  }
  return {
    name, ok: failures.length === 0 && rec.head.status === 200,
    summary: `${result.passed} passed, ${failures.length} failed` + failures.map((f) => `\n    FAIL ${f.name}: ${f.error}`).join(''),
  };
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { verbose: false };
  let print = false;
  let method = 'GET';
  let body = null;
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--verbose') opts.verbose = true;
    else if (args[i] === '--print') print = true;
    else if (args[i] === '--method') method = args[++i];
    else if (args[i] === '--body') body = args[++i];
    else files.push(args[i]);
  }
  process.on('unhandledRejection', (e) => {
    process.stderr.write(`[harness] unhandled rejection: ${e && e.stack || e}\n`);
  });
  const server = await startTargetServer();
  const target = `http://127.0.0.1:${server.address().port}`;
  try {
    if (print) {
      for (const f of files) {
        const rt = createRuntime({ verbose: true });
        await rt.loadWorker(path.resolve(f));
        const rec = await rt.request(method, 'http://localhost/', [], body, { TARGET: target });
        rt.cancelAllTimers();
        console.log(JSON.stringify({ head: rec.head, failed: rec.failed, streamError: rec.streamError, timedOut: rec.timedOut }, null, 2));
        console.log(rec.body.toString('utf8'));
      }
      return;
    }
    const list = files.length
      ? files.map((f) => (fs.existsSync(f) ? path.resolve(f) : path.join(SUITE_DIR, f)))
      : fs.readdirSync(SUITE_DIR).filter((f) => f.endsWith('.js')).sort().map((f) => path.join(SUITE_DIR, f));
    let bad = 0;
    for (const file of list) {
      const r = await runSuite(file, opts, target);
      if (!r.ok) bad++;
      console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name}: ${r.summary}`);
    }
    console.log(bad ? `${bad} suite(s) failed` : 'all suites passed');
    process.exitCode = bad ? 1 : 0;
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

module.exports = { createRuntime };
if (require.main === module) main().catch((e) => { console.error(e); process.exit(1); });
