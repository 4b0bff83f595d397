// A Worker that loads code at run time through its Worker Loader binding
// (`env.LOADER`, docs/loader.md), run by cli/tests/dev_loader.rs on
// `isolane dev` and on workerd (its `workerLoader` binding) alike.
//
//   /load/<id>      code of ES, CommonJS, text, JSON, data and Wasm modules,
//                   called by fetch and by JS RPC (a named entrypoint with
//                   props); header x-callbacks: how often the code was asked
//   /anon           LOADER.load(code), fetched
//   /stub           code handed the caller's service binding `env.SVC` (when
//                   it has one) calls it
//   /offline/<how>  code loaded with globalOutbound: null trying `fetch` or
//                   `connect`
//   /hostile/<kind> code that never ends (loop, memory, hang, Wasm memory
//                   growth) under its
//                   own lowered limits, or that is handed the loader itself
// Every error is caught and answered 503 `caught <class>: <message>`.

// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const ADD_WASM = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 7, 1, 96, 2, 127, 127, 1, 127, 3, 2, 1, 0, 7, 7, 1, 3, 97, 100,
  100, 0, 0, 10, 9, 1, 7, 0, 32, 0, 32, 1, 106, 11,
]);

const MAIN = `import { WorkerEntrypoint } from 'cloudflare:workers';
import greeting from './greeting.txt';
import table from './table.json';
import helper from './helper.cjs';
import add from './add.wasm';
import raw from './raw.bin';
const sum = new WebAssembly.Instance(add).exports.add(table.a, table.b);
export class Greeter extends WorkerEntrypoint {
  greet(who) { return greeting + ' ' + who + ' from ' + this.env.ID + ' ' + JSON.stringify(this.ctx.props); }
}
export default {
  fetch(request, env) {
    const bytes = new Uint8Array(raw).join(',');
    return new Response(env.ID + ' ' + helper.shout(greeting) + ' sum=' + sum + ' raw=' + bytes + ' ' + new URL(request.url).pathname);
  }
};
`;

function code(id) {
  return {
    compatibilityDate: '2025-06-01',
    mainModule: 'main.js',
    modules: {
      'main.js': MAIN,
      'greeting.txt': { text: 'hello' },
      'table.json': { json: { a: 2, b: 40 } },
      'helper.cjs': { cjs: 'module.exports = { shout: (s) => s.toUpperCase() + "!" };' },
      'add.wasm': { wasm: ADD_WASM },
      'raw.bin': { data: new Uint8Array([1, 2, 3]) },
    },
    env: { ID: id },
  };
}

const OFFLINE = {
  fetch: `export default { async fetch() {
  try { await fetch('http://example.com/'); return new Response('reached'); }
  catch (e) { return new Response('refused ' + e.constructor.name + ': ' + e.message); }
} };`,
  connect: `import { connect } from 'cloudflare:sockets';
export default { async fetch() {
  try { const socket = connect('example.com:80'); await socket.opened; return new Response('reached'); }
  catch (e) { return new Response('refused ' + e.constructor.name + ': ' + e.message); }
} };`,
};

// (module (memory 1) (func (export "grow") (loop (drop (memory.grow (i32.const 100))) (br 0))))
const GROW_WASM = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 5, 3, 1, 0, 1, 7, 8, 1, 4, 103, 114,
  111, 119, 0, 0, 10, 15, 1, 13, 0, 3, 64, 65, 228, 0, 64, 0, 26, 12, 0, 11, 11,
]);

const HOSTILE = {
  loop: ['export default { fetch() { for (;;) {} } };', { cpuMs: 50 }],
  memory: [
    'export default { fetch() { const keep = []; for (;;) keep.push(new Array(1 << 20).fill(keep.length)); } };',
    { memoryMiB: 32 },
  ],
  hang: ['export default { fetch() { return new Promise(() => {}); } };', { wallMs: 500 }],
  wasm: [
    "import grow from './grow.wasm'; export default { fetch() { new WebAssembly.Instance(grow).exports.grow(); } };",
    { memoryMiB: 32, cpuMs: 1000 },
    { 'grow.wasm': { wasm: GROW_WASM } },
  ],
};

let callbacks = 0;

async function answer(url, env) {
  const [, kind, arg] = url.pathname.split('/');
  if (kind === 'load') {
    const before = callbacks;
    const worker = env.LOADER.get(arg, async () => {
      callbacks++;
      return code(arg);
    });
    const fetched = await worker.getEntrypoint().fetch(`http://loaded/${arg}`);
    const text = await fetched.text();
    const greeted = await worker.getEntrypoint('Greeter', { props: { tier: 'gold' } }).greet('caller');
    const headers = { 'x-callbacks': String(callbacks - before) };
    return new Response(`fetch:${fetched.status} ${text}|rpc:${greeted}`, { headers });
  }
  if (kind === 'anon') {
    const response = await env.LOADER.load(code('anonymous')).getEntrypoint().fetch('http://loaded/anon');
    return new Response(await response.text());
  }
  if (kind === 'stub') {
    if (env.SVC === undefined) return new Response('no SVC here');
    const worker = env.LOADER.get('stub', () => ({
      compatibilityDate: '2025-06-01',
      mainModule: 'main.js',
      modules: { 'main.js': "export default { async fetch(r, env) { const a = await env.API.fetch('http://backend/from-loaded'); return new Response('loaded got: ' + await a.text() + ' / ' + await env.API.hello('loaded')); } };" },
      env: { API: env.SVC },
      globalOutbound: null,
    }));
    const response = await worker.getEntrypoint().fetch('http://loaded/');
    return new Response(await response.text());
  }
  if (kind === 'offline') {
    const worker = env.LOADER.get(`offline-${arg}`, () => ({
      compatibilityDate: '2025-06-01',
      mainModule: 'main.js',
      modules: { 'main.js': OFFLINE[arg] },
      globalOutbound: null,
    }));
    const response = await worker.getEntrypoint().fetch('http://loaded/');
    return new Response(await response.text());
  }
  if (kind === 'hostile') {
    const [source, limits, more] = HOSTILE[arg] ?? ['export default { fetch() { return new Response("tame"); } };', {}];
    const env_ = arg === 'loader' ? { LOADER: env.LOADER } : {};
    const worker = env.LOADER.get(`hostile-${arg}-${url.searchParams.get('n') ?? 0}`, () => ({
      compatibilityDate: '2025-06-01',
      mainModule: 'main.js',
      modules: { 'main.js': source, ...more },
      env: env_,
      limits,
    }));
    const response = await worker.getEntrypoint().fetch('http://loaded/');
    return new Response(`not stopped: ${response.status} ${await response.text()}`);
  }
  return new Response('not found', { status: 404 });
}

export default {
  async fetch(request, env) {
    try {
      return await answer(new URL(request.url), env);
    } catch (e) {
      return new Response(`caught ${e.constructor.name}: ${e.message}`, { status: 503 });
    }
  },
};
