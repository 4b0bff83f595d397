// 39_loader.js — Worker Loader bindings (Dynamic Workers, docs/loader.md):
// the object a `workerLoader: {}` binding puts in a Worker's `env`
// (`internal.loaderBinding(binding)`, called by the engine as it builds
// `env`). `get(id, callback)` returns a WorkerStub at once; its
// `getEntrypoint(name, {props})` is a Fetcher of 30_service.js (fetch and JS
// RPC) whose calls first load the code: when this thread does not hold
// `id`'s code (host.loaderWarm), the callback is asked for it (once per
// stub), and the code is checked, encoded and handed to host.loaderDefine
// (src/loader.rs), which makes it a bundle run in an isolate of its own on
// this thread. `load(code)` is `get` with an id never used again.
'use strict';

const kLoader = Symbol('create');
const KINDS = ['js', 'cjs', 'text', 'data', 'json', 'wasm'];
const MAX_DEPTH = 64;

function refuse(message) {
  return new TypeError(`Worker Loader: ${message}`);
}

// Throws unless `value` is a JSON value (null, a boolean, a finite
// number, a string, a plain array or object of them): what loaded code's
// `env` may hold besides the caller's own service bindings.
function checkJson(value, path, depth = 0) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number' && Number.isFinite(value)) return;
  if (typeof value === 'object' && depth < MAX_DEPTH) {
    const proto = Object.getPrototypeOf(value);
    if (Array.isArray(value) && proto === Array.prototype) {
      value.forEach((item, i) => checkJson(item, `${path}[${i}]`, depth + 1));
      return;
    }
    if (proto === Object.prototype || proto === null) {
      for (const key of Object.keys(value)) checkJson(value[key], `${path}.${key}`, depth + 1);
      return;
    }
  }
  throw refuse(`${path} is not a JSON value nor a service binding: loaded code's env holds JSON values and the caller's service bindings only`);
}

// A module's bytes: source and text as UTF-8, JSON as its text, data and
// WebAssembly as given.
function moduleBytes(name, kind, content) {
  switch (kind) {
    case 'js': case 'cjs': case 'text':
      if (typeof content !== 'string') throw refuse(`module ${name}: {${kind}} must be a string`);
      return new TextEncoder().encode(content);
    case 'json': {
      const text = JSON.stringify(content);
      if (text === undefined) throw refuse(`module ${name}: {json} must be a JSON value`);
      return new TextEncoder().encode(text);
    }
    default:
      if (content instanceof ArrayBuffer) return new Uint8Array(content.slice(0));
      if (ArrayBuffer.isView(content)) {
        return new Uint8Array(content.buffer.slice(content.byteOffset, content.byteOffset + content.byteLength));
      }
      throw refuse(`module ${name}: {${kind}} must be an ArrayBuffer or a typed array`);
  }
}

// The modules as [name, kind, length] and their bytes one after the other.
function encodeModules(modules) {
  if (modules === null || typeof modules !== 'object') throw refuse('modules must be an object of module names to modules');
  const list = [];
  const parts = [];
  let total = 0;
  for (const [name, module] of Object.entries(modules)) {
    let kind = 'js';
    let content = module;
    if (typeof module !== 'string') {
      const keys = module === null || typeof module !== 'object'
        ? [] : Object.keys(module).filter((key) => module[key] !== undefined);
      if (keys.length !== 1 || !KINDS.includes(keys[0])) {
        throw refuse(`module ${name} must be a string (an ES module) or one of {js}, {cjs}, {text}, {data}, {json}, {wasm}`);
      }
      kind = keys[0];
      content = module[kind];
    }
    const bytes = moduleBytes(name, kind, content);
    list.push([name, kind, bytes.byteLength]);
    parts.push(bytes);
    total += bytes.byteLength;
  }
  const content = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    content.set(part, at);
    at += part.byteLength;
  }
  return [list, content];
}

// The code a callback gave, as host.loaderDefine takes it: a JSON header
// and the modules' bytes.
function encode(code) {
  if (code === null || typeof code !== 'object') {
    throw refuse('the code must be an object {compatibilityDate, mainModule, modules, ...}');
  }
  const { compatibilityDate, compatibilityFlags = [], mainModule, env = {}, globalOutbound, limits = {} } = code;
  if (typeof compatibilityDate !== 'string') throw refuse('compatibilityDate must be a string (YYYY-MM-DD)');
  if (typeof mainModule !== 'string') throw refuse('mainModule must be the name of one of the modules');
  if (!Array.isArray(compatibilityFlags)) throw refuse('compatibilityFlags must be an array of strings');
  // A service binding of the caller's (env.SVC): its Worker's fetch handler
  // takes every fetch() of the loaded code.
  let outbound;
  if (globalOutbound !== undefined && globalOutbound !== null) {
    outbound = internal.serviceBindingName(globalOutbound);
    if (outbound === undefined) {
      throw refuse("globalOutbound must be null (no network), a service binding of the caller (env.SVC), or left out (the caller's network)");
    }
  }
  const [modules, content] = encodeModules(code.modules);
  const envJson = {};
  const services = {};
  for (const [name, value] of Object.entries(env ?? {})) {
    const service = internal.serviceBindingName(value);
    if (service !== undefined) {
      services[name] = service;
      continue;
    }
    checkJson(value, `env.${name}`);
    envJson[name] = JSON.stringify(value);
  }
  const given = limits ?? {};
  const header = JSON.stringify({
    compatibilityDate,
    compatibilityFlags: compatibilityFlags.map(String),
    mainModule,
    modules,
    env: envJson,
    services,
    noNetwork: globalOutbound === null,
    outbound,
    limits: {
      cpuMs: internal.callLimit(given.cpuMs, 'cpuMs'),
      wallMs: internal.callLimit(given.wallMs, 'wallMs'),
      memoryMiB: internal.callLimit(given.memoryMiB, 'memoryMiB'),
      subrequests: internal.callLimit(given.subRequests ?? given.subrequests, 'subRequests'),
    },
  });
  return [header, content];
}

class WorkerStub {
  #binding;
  #id;
  #load;

  constructor(key, binding, id, getCode) {
    if (key !== kLoader) throw new TypeError('Illegal constructor');
    this.#binding = binding;
    this.#id = id;
    let code;
    // Before each call: the code, when this thread does not hold it.
    this.#load = async () => {
      if (host.loaderWarm(binding, id)) return;
      code ??= Promise.resolve().then(() => getCode());
      const [header, content] = encode(await code);
      host.loaderDefine(binding, id, header, content);
    };
  }

  getEntrypoint(name = undefined, options = undefined) {
    if (name !== undefined && name !== null && typeof name !== 'string') {
      throw new TypeError('getEntrypoint: the name must be a string');
    }
    let props;
    if (options?.props !== undefined) {
      checkJson(options.props, 'props');
      props = JSON.stringify(options.props);
    }
    return internal.serviceBinding(this.#binding, {
      worker: this.#id,
      cpuMs: 0,
      subrequests: 0,
      entrypoint: name ?? undefined,
      props,
      load: this.#load,
    });
  }
}
internal.enumerableMembers(WorkerStub, ['getEntrypoint']);
internal.setToStringTag(WorkerStub.prototype, 'WorkerStub');

class WorkerLoader {
  #binding;

  constructor(key, binding) {
    if (key !== kLoader) throw new TypeError('Illegal constructor');
    this.#binding = binding;
  }

  get(id, getCode) {
    if (typeof getCode !== 'function') throw new TypeError('WorkerLoader.get: the second argument must be a function returning the code');
    return new WorkerStub(kLoader, this.#binding, String(id), getCode);
  }

  load(code) {
    const id = `\0load:${globalThis.crypto.randomUUID()}`;
    return new WorkerStub(kLoader, this.#binding, id, () => code);
  }
}
internal.enumerableMembers(WorkerLoader, ['get', 'load']);
internal.setToStringTag(WorkerLoader.prototype, 'WorkerLoader');

internal.loaderBinding = (binding) => new WorkerLoader(kLoader, binding);
