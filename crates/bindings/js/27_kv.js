// 27_kv.js — Workers KV: the KVNamespace a Worker's KV binding puts in its
// `env` (`internal.kvNamespace(binding)`, called by the engine as it builds
// `env`), over host.kvGet/kvPut/kvDelete/kvList. The host scopes every
// operation to the Worker's own namespace: JavaScript passes only the
// binding's name. Shapes and messages are workerd's.
'use strict';

const kCreate = Symbol('create');
const TYPES = ['text', 'json', 'arrayBuffer', 'stream'];

// `get(key, type)` or `get(key, {type, cacheTtl})`.
function getOptions(options) {
  let type = 'text';
  let cacheTtl;
  if (typeof options === 'string') {
    type = options;
  } else if (options !== undefined && options !== null) {
    if (!internal.isObject(options)) throw new TypeError('KV get() options must be a string or an object.');
    if (options.type !== undefined) type = String(options.type);
    if (options.cacheTtl !== undefined) cacheTtl = Number(options.cacheTtl);
  }
  if (!TYPES.includes(type)) {
    throw new TypeError('Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".');
  }
  return [type, cacheTtl];
}

function decode(u8, type) {
  switch (type) {
    case 'json': return JSON.parse(internal.utf8Decode(u8));
    case 'arrayBuffer': return u8.buffer;
    case 'stream': return internal.streamFromBytes(u8);
    default: return internal.utf8Decode(u8);
  }
}

function parseMetadata(text) {
  return text === null ? null : JSON.parse(text);
}

// A ReadableStream's bytes, refused (with Cloudflare's Error) as soon as
// they pass the value limit, before more is read.
async function readBounded(stream) {
  if (internal.streamIsDisturbed(stream) || internal.streamIsLocked(stream)) {
    throw new TypeError('The ReadableStream passed to KV put() is disturbed or locked.');
  }
  const reader = internal.acquireReader(stream);
  const chunks = [];
  let total = 0;
  for (;;) {
    await reader.read();
    if (reader.done) break;
    const bytes = internal.chunkBytes(reader.value, true);
    try {
      if (bytes === null) throw new TypeError('This ReadableStream did not return bytes.');
      total += bytes.byteLength;
      host.kvCheckValue(total);
    } catch (e) {
      try { await reader.cancel(e); } catch { /* the refusal is what counts */ }
      throw e;
    }
    chunks.push(bytes);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.byteLength; }
  return out;
}

async function valueBytes(value) {
  if (typeof value === 'string') return host.utf8Encode(value);
  if (internal.isReadableStream(value)) return readBounded(value);
  const view = internal.bufferSourceView(value);
  if (view !== null) return view;
  if (!internal.isObject(value)) return host.utf8Encode(String(value));
  throw new TypeError('KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.');
}

// Cloudflare's bulk read: `get([keys])` answers a Map of each key to what
// `answer` makes of its entry (null when there is none), in the keys'
// order; at most 100 keys, read as `text` or `json` only.
const MAX_BULK_KEYS = 100;

async function getBulk(binding, keys, type, cacheTtl, answer) {
  if (type !== 'text' && type !== 'json') {
    throw new TypeError(`"${type}" is not a valid type. Use "json" or "text"`);
  }
  if (keys.length === 0) throw new TypeError('KV get() needs at least one key.');
  if (keys.length > MAX_BULK_KEYS) {
    throw new TypeError(`KV GET_BULK failed: 400 You can request a maximum of ${MAX_BULK_KEYS} keys.`);
  }
  const names = keys.map(String);
  const hits = await Promise.all(names.map((name) => host.kvGet(binding, name, cacheTtl)));
  const map = new Map();
  for (let i = 0; i < names.length; i++) map.set(names[i], answer(hits[i]));
  return map;
}

class KVNamespace {
  #binding;

  constructor(key = undefined, binding = '') {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
  }

  async get(key, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'KvNamespace'");
    const [type, cacheTtl] = getOptions(options);
    if (Array.isArray(key)) {
      return getBulk(this.#binding, key, type, cacheTtl, (hit) => (hit === null ? null : decode(hit.value, type)));
    }
    const hit = await host.kvGet(this.#binding, String(key), cacheTtl);
    return hit === null ? null : decode(hit.value, type);
  }

  async getWithMetadata(key, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getWithMetadata' on 'KvNamespace'");
    const [type, cacheTtl] = getOptions(options);
    const withMetadata = (hit) => (hit === null
      ? { value: null, metadata: null }
      : { value: decode(hit.value, type), metadata: parseMetadata(hit.metadata) });
    if (Array.isArray(key)) return getBulk(this.#binding, key, type, cacheTtl, withMetadata);
    const hit = await host.kvGet(this.#binding, String(key), cacheTtl);
    return { ...withMetadata(hit), cacheStatus: null };
  }

  async put(key, value, options = undefined) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'put' on 'KvNamespace'");
    key = String(key);
    const o = internal.toDictionary(options, 'KV put() options');
    const metadata = o.metadata === undefined ? null : JSON.stringify(o.metadata);
    const bytes = await valueBytes(value);
    await host.kvPut(this.#binding, key, bytes, metadata ?? null, o.expiration, o.expirationTtl);
    return undefined;
  }

  async delete(key) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'KvNamespace'");
    await host.kvDelete(this.#binding, String(key));
    return undefined;
  }

  async list(options = undefined) {
    const o = internal.toDictionary(options, 'KV list() options');
    const prefix = o.prefix === undefined || o.prefix === null ? '' : String(o.prefix);
    const cursor = o.cursor === undefined || o.cursor === null ? null : String(o.cursor);
    const page = await host.kvList(this.#binding, prefix, o.limit, cursor);
    const keys = page.keys.map(([name, expiration, metadata]) => {
      const key = { name };
      if (expiration !== null) key.expiration = expiration;
      if (metadata !== null) key.metadata = JSON.parse(metadata);
      return key;
    });
    const result = { keys, list_complete: page.complete, cacheStatus: null };
    if (!page.complete) result.cursor = page.cursor;
    return result;
  }
}
internal.enumerableMembers(KVNamespace, ['get', 'getWithMetadata', 'put', 'delete', 'list']);
internal.setToStringTag(KVNamespace.prototype, 'KvNamespace');

internal.kvNamespace = (binding) => new KVNamespace(kCreate, binding);
