// 22_cache.js — the Cache API as Workers has it: `caches.default` and
// `caches.open(name)`, each a Cache with match/put/delete, on the node's
// shared store (host.cachePut/cacheMatch/cacheDelete), which scopes every
// entry to the worker's namespace.
'use strict';

const kCreate = Symbol('create');

// The key of a cache operation: URL, method and headers of `request`
// (a Request, or a URL string meaning a GET with no headers).
function keyOf(request, op) {
  if (internal.isRequest(request)) {
    const parts = internal.requestParts(request);
    return { url: parts.url, method: parts.method, headers: internal.headersList(parts.headers) };
  }
  const s = internal.toUSVString(request);
  const parsed = internal.parseURL(s);
  if (parsed === null) throw new TypeError(`Failed to execute '${op}' on 'Cache': Invalid URL: ${s}`);
  return { url: parsed[0], method: 'GET', headers: [] };
}

function ignoreMethod(options) {
  return Boolean(internal.toDictionary(options, 'CacheQueryOptions').ignoreMethod);
}

class Cache {
  #name;

  constructor(key = undefined, name = null) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#name = name;
  }

  async match(request, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'match' on 'Cache'");
    const key = keyOf(request, 'match');
    if (key.method !== 'GET' && !ignoreMethod(options)) return undefined;
    const hit = host.cacheMatch(this.#name, key.url, key.headers);
    if (hit === null) return undefined;
    const [status, statusText, headers, body] = hit;
    return new Response(body, { status, statusText, headers: internal.headersFromList(headers, 'none') });
  }

  async put(request, response) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'put' on 'Cache'");
    const key = keyOf(request, 'put');
    if (key.method !== 'GET') throw new TypeError('Cannot cache response to non-GET request.');
    if (!internal.isResponse(response)) {
      throw new TypeError("Failed to execute 'put' on 'Cache': parameter 2 is not of type 'Response'.");
    }
    const parts = internal.responseParts(response);
    if (parts.status === 206) throw new TypeError('Cannot cache response to a range request (206 Partial Content).');
    const vary = parts.headers.get('vary');
    if (vary !== null && vary.split(',').some((v) => v.trim() === '*')) {
      throw new TypeError("Cannot cache response with 'Vary: *' header.");
    }
    if (response.bodyUsed) throw new TypeError(internal.BODY_USED_MESSAGE);
    // Reading the body consumes the response, as in the Service Worker spec.
    const body = new Uint8Array(await response.arrayBuffer());
    host.cachePut(this.#name, key.url, key.headers, parts.status, parts.statusText,
      internal.headersList(parts.headers), body);
    return undefined;
  }

  async delete(request, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'Cache'");
    const key = keyOf(request, 'delete');
    if (key.method !== 'GET' && !ignoreMethod(options)) return false;
    return host.cacheDelete(this.#name, key.url, key.headers);
  }

  // Not offered by Workers either: fetching into the cache is `fetch` + `put`.
  async add() { throw new TypeError("Failed to execute 'add' on 'Cache': the method is not implemented."); }
  async addAll() { throw new TypeError("Failed to execute 'addAll' on 'Cache': the method is not implemented."); }
}
internal.enumerableMembers(Cache, ['match', 'put', 'delete', 'add', 'addAll']);
internal.setToStringTag(Cache.prototype, 'Cache');

const defaultCache = new Cache(kCreate, null);

class CacheStorage {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
  }

  get default() { return defaultCache; }

  async open(cacheName) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'open' on 'CacheStorage'");
    return new Cache(kCreate, internal.toDOMString(cacheName));
  }
}
internal.enumerableMembers(CacheStorage, ['default', 'open']);
internal.setToStringTag(CacheStorage.prototype, 'CacheStorage');

internal.defineGlobal('caches', new CacheStorage(kCreate));
internal.defineGlobal('Cache', Cache);
internal.defineGlobal('CacheStorage', CacheStorage);
