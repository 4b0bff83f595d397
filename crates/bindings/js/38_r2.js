// 38_r2.js — R2 buckets: the R2Bucket a Worker's R2 binding puts in its
// `env` (`internal.r2Binding(binding)`, called by the engine as it builds
// `env`), over host.r2Slot/r2Op/r2Begin/r2Write/r2Open/r2Read
// (`src/r2.rs`). The host scopes every operation to the Worker's own
// namespace and bucket: JavaScript passes only the binding's name. Bodies
// stream a chunk at a time both ways. Shapes and messages are workerd's
// (an Error `put: <R2's message> (<code>)`).
'use strict';

const kCreate = Symbol('create');
// The most bytes one read or write moves.
const CHUNK = 1 << 20;
const HASHES = ['md5', 'sha1', 'sha256', 'sha384', 'sha512'];
const HTTP_FIELDS = [
  ['contentType', 'content-type'],
  ['contentLanguage', 'content-language'],
  ['contentDisposition', 'content-disposition'],
  ['contentEncoding', 'content-encoding'],
  ['cacheControl', 'cache-control'],
];

function r2Error(action, code, message) {
  return new Error(`${action}: ${message} (${code})`);
}

// An op's `[code, value]`: the value, or R2's error thrown.
function answer(action, pair) {
  if (pair[0] !== 0) throw r2Error(action, pair[0], pair[1]);
  return pair[1] === null ? null : JSON.parse(pair[1]);
}

function isHeaders(v) {
  return v instanceof Headers;
}

function toHex(v, field) {
  if (typeof v === 'string') return v;
  const view = internal.bufferSourceView(v);
  if (view === null) throw new TypeError(`${field} must be an ArrayBuffer, an ArrayBufferView or a hex string.`);
  let out = '';
  for (const b of view) out += b.toString(16).padStart(2, '0');
  return out;
}

function fromHex(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
  return out.buffer;
}

// `httpMetadata` as stored: an object's known fields, or Headers'.
function httpMetadata(v) {
  if (v === undefined || v === null) return {};
  const out = {};
  if (isHeaders(v)) {
    for (const [field, header] of HTTP_FIELDS) {
      const value = v.get(header);
      if (value !== null) out[field] = value;
    }
    const expires = v.get('expires');
    if (expires !== null) out.cacheExpiry = new Date(expires).getTime();
    return out;
  }
  if (!internal.isObject(v)) throw new TypeError('httpMetadata must be an object or a Headers object.');
  for (const [field] of HTTP_FIELDS) {
    if (v[field] !== undefined) out[field] = String(v[field]);
  }
  if (v.cacheExpiry !== undefined) out.cacheExpiry = new Date(v.cacheExpiry).getTime();
  return out;
}

function customMetadata(v) {
  if (v === undefined || v === null) return {};
  if (!internal.isObject(v)) throw new TypeError('customMetadata must be an object.');
  const out = {};
  for (const [k, value] of Object.entries(v)) out[k] = String(value);
  return out;
}

// One etag condition (a header's list, or a field's string): each `*`,
// `W/"…"` (weak) or `"…"`/bare (strong).
function etags(text) {
  return String(text).split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    if (s === '*') return { type: 'wildcard' };
    if (s.startsWith('W/')) return { type: 'weak', value: s.slice(2).replace(/^"|"$/g, '') };
    return { type: 'strong', value: s.replace(/^"|"$/g, '') };
  });
}

function time(v) {
  return v instanceof Date ? v.getTime() : new Date(v).getTime();
}

// `onlyIf` as the host takes it: from an object or Headers; null for none.
function conditional(v) {
  if (v === undefined || v === null) return null;
  const out = {};
  if (isHeaders(v)) {
    const ifMatch = v.get('if-match');
    const ifNoneMatch = v.get('if-none-match');
    const modified = v.get('if-modified-since');
    const unmodified = v.get('if-unmodified-since');
    if (ifMatch !== null) out.etagMatches = etags(ifMatch);
    if (ifNoneMatch !== null) out.etagDoesNotMatch = etags(ifNoneMatch);
    if (modified !== null) out.uploadedAfter = time(modified);
    if (unmodified !== null) out.uploadedBefore = time(unmodified);
    out.secondsGranularity = true;
    return out;
  }
  if (!internal.isObject(v)) throw new TypeError('onlyIf must be an object or a Headers object.');
  if (v.etagMatches !== undefined) out.etagMatches = etags(v.etagMatches);
  if (v.etagDoesNotMatch !== undefined) out.etagDoesNotMatch = etags(v.etagDoesNotMatch);
  if (v.uploadedAfter !== undefined) out.uploadedAfter = time(v.uploadedAfter);
  if (v.uploadedBefore !== undefined) out.uploadedBefore = time(v.uploadedBefore);
  out.secondsGranularity = Boolean(v.secondsGranularity);
  return out;
}

// The bytes of a put's value, handed to `write` a chunk at a time.
async function feed(value, write) {
  if (value === null || value === undefined) return;
  let bytes = null;
  if (typeof value === 'string') bytes = host.utf8Encode(value);
  else if (internal.isBlob(value)) bytes = internal.blobBytes(value);
  else bytes = internal.bufferSourceView(value);
  if (bytes !== null) {
    for (let at = 0; at < bytes.byteLength; at += CHUNK) await write(bytes.subarray(at, at + CHUNK));
    return;
  }
  if (!internal.isReadableStream(value)) {
    throw new TypeError('R2 put() accepts only nulls, strings, Blobs, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.');
  }
  if (internal.streamIsDisturbed(value) || internal.streamIsLocked(value)) {
    throw new TypeError('The ReadableStream passed to R2 put() is disturbed or locked.');
  }
  const reader = internal.acquireReader(value);
  for (;;) {
    await reader.read();
    if (reader.done) return;
    const chunk = internal.chunkBytes(reader.value, true);
    try {
      if (chunk === null) throw new TypeError('This ReadableStream did not return bytes.');
      for (let at = 0; at < chunk.byteLength; at += CHUNK) await write(chunk.subarray(at, at + CHUNK));
    } catch (e) {
      try { await reader.cancel(e); } catch { /* the error is what counts */ }
      throw e;
    }
  }
}

// A new body in a slot holding `value`'s bytes, digested with `digests`.
async function body(binding, action, value, digests) {
  const slot = host.r2Slot();
  answer(action, await host.r2Begin(binding, JSON.stringify(digests), slot));
  await feed(value, async (chunk) => answer(action, await host.r2Write(slot, chunk)));
  return slot;
}

class R2Checksums {
  constructor(hexes) {
    for (const field of HASHES) {
      if (hexes[field] !== undefined) this[field] = fromHex(hexes[field]);
    }
    Object.defineProperty(this, 'toJSON', { value: () => ({ ...hexes }), enumerable: false });
  }
}

function writeHttpMetadata(meta, headers) {
  for (const [field, header] of HTTP_FIELDS) {
    if (meta[field] !== undefined) headers.set(header, meta[field]);
  }
  if (meta.cacheExpiry !== undefined) headers.set('expires', meta.cacheExpiry.toUTCString());
}

// workerd's class names (`R2Object` and `R2ObjectBody` in its types).
class HeadResult {
  constructor(key, o, range) {
    if (key !== kCreate) internal.illegalConstructor();
    this.key = o.key;
    this.version = o.version;
    this.size = o.size;
    this.etag = o.etag;
    this.httpEtag = `"${o.etag}"`;
    this.checksums = new R2Checksums(o.checksums);
    this.uploaded = new Date(o.uploaded);
    const http = { ...o.httpMetadata };
    if (http.cacheExpiry !== undefined) http.cacheExpiry = new Date(http.cacheExpiry);
    this.httpMetadata = http;
    this.customMetadata = o.customMetadata;
    if (range !== undefined) this.range = range;
    this.storageClass = o.storageClass;
  }

  writeHttpMetadata(headers) {
    writeHttpMetadata(this.httpMetadata, headers);
  }
}

// A stored body's bytes `[start, start + length)`, read as the stream is.
// Nothing is read before the first read; from then on the next chunk is
// asked for as one is handed over (one read in flight, in order), so the
// store's read of a chunk overlaps the sending of the one before.
function bodyStream(slot, start, length) {
  let at = start;
  const end = start + length;
  let ahead = null;
  const ask = () => {
    const len = Math.min(CHUNK, end - at);
    const read = host.r2Read(slot, at, len);
    at += len;
    return [len, read];
  };
  return new ReadableStream({
    async pull(controller) {
      const [len, read] = ahead ?? (at < end ? ask() : [0, null]);
      ahead = null;
      if (read === null) { controller.close(); return; }
      const [code, chunk] = await read;
      if (code !== 0) { controller.error(r2Error('get', code, chunk)); return; }
      if (chunk.byteLength === 0) { controller.close(); return; }
      // A short chunk is the end (the object was shorter than asked).
      if (chunk.byteLength === len && at < end) ahead = ask();
      controller.enqueue(chunk);
      if (ahead === null) controller.close();
    },
  }, { highWaterMark: 0 });
}

class GetResult extends HeadResult {
  #body;

  constructor(key, o, range, body) {
    super(key, o, range);
    this.#body = body;
  }

  get body() { return this.#body; }
  get bodyUsed() { return internal.streamIsDisturbed(this.#body); }
  arrayBuffer() { return new Response(this.#body).arrayBuffer(); }
  bytes() { return new Response(this.#body).bytes(); }
  text() { return new Response(this.#body).text(); }
  json() { return new Response(this.#body).json(); }
  async blob() {
    const bytes = await this.arrayBuffer();
    return new Blob([bytes], { type: this.httpMetadata.contentType ?? '' });
  }
}

// `range` (an object or Headers) against `size`: `{offset, length}`.
function range(v, size) {
  if (v === undefined || v === null) return { offset: 0, length: size };
  let { offset, length, suffix } = v;
  if (isHeaders(v)) {
    const header = v.get('range');
    if (header === null) return { offset: 0, length: size };
    const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
    if (m === null || (m[1] === '' && m[2] === '')) return { offset: 0, length: size };
    if (m[1] === '') suffix = Number(m[2]);
    else {
      offset = Number(m[1]);
      if (m[2] !== '') length = Number(m[2]) - offset + 1;
    }
    offset = offset === undefined ? undefined : Math.min(offset, size);
  }
  if (suffix !== undefined) {
    if (suffix <= 0) throw r2Error('get', 10039, 'The requested range is not satisfiable');
    suffix = Math.min(suffix, size);
    return { offset: size - suffix, length: suffix };
  }
  offset = offset === undefined ? 0 : Number(offset);
  length = length === undefined ? size - offset : Number(length);
  if (offset < 0 || offset > size || length <= 0) {
    if (!(size === 0 && offset === 0)) throw r2Error('get', 10039, 'The requested range is not satisfiable');
  }
  return { offset, length: Math.max(0, Math.min(length, size - offset)) };
}

// `put`'s and `createMultipartUpload`'s options as the host takes them.
function putOptions(o) {
  const checksums = {};
  for (const field of HASHES) {
    if (o[field] !== undefined) checksums[field] = toHex(o[field], field);
  }
  if (Object.keys(checksums).length > 1) throw new TypeError('You cannot specify multiple hashing algorithms.');
  return {
    httpMetadata: httpMetadata(o.httpMetadata),
    customMetadata: customMetadata(o.customMetadata),
    checksums,
    onlyIf: conditional(o.onlyIf),
    storageClass: o.storageClass === undefined ? null : String(o.storageClass),
  };
}

class R2MultipartUpload {
  #binding;

  constructor(key, binding, objectKey, uploadId) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
    this.key = objectKey;
    this.uploadId = uploadId;
  }

  async uploadPart(partNumber, value, options = undefined) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'uploadPart' on 'R2MultipartUpload'");
    internal.toDictionary(options, 'uploadPart() options');
    const slot = await body(this.#binding, 'uploadPart', value, []);
    const json = JSON.stringify({ uploadId: this.uploadId, partNumber: Number(partNumber) });
    const etag = answer('uploadPart', await host.r2Op(this.#binding, 'part', this.key, json, slot));
    return { partNumber: Number(partNumber), etag };
  }

  async abort() {
    answer('abortMultipartUpload', await host.r2Op(this.#binding, 'abort', this.key, JSON.stringify(this.uploadId), null));
    return undefined;
  }

  async complete(uploadedParts) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'complete' on 'R2MultipartUpload'");
    const parts = Array.from(uploadedParts, (p) => [Number(p.partNumber), String(p.etag)]);
    const json = JSON.stringify({ uploadId: this.uploadId, parts });
    const o = answer('completeMultipartUpload', await host.r2Op(this.#binding, 'complete', this.key, json, null));
    return new HeadResult(kCreate, o);
  }
}
internal.enumerableMembers(R2MultipartUpload, ['uploadPart', 'abort', 'complete']);

class R2Bucket {
  #binding;

  constructor(key = undefined, binding = '') {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
  }

  async head(key) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'head' on 'R2Bucket'");
    const o = answer('head', await host.r2Op(this.#binding, 'head', String(key), '', null));
    return o === null ? null : new HeadResult(kCreate, o, { offset: 0, length: o.size });
  }

  async get(key, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'R2Bucket'");
    const o = internal.toDictionary(options, 'get() options');
    const only = conditional(o.onlyIf);
    const slot = host.r2Slot();
    const got = answer('get', await host.r2Open(this.#binding, String(key), only === null ? null : JSON.stringify(only), slot));
    if (got === null) return null;
    if (!got.body) return new HeadResult(kCreate, got, { offset: 0, length: got.size });
    const r = range(o.range, got.size);
    return new GetResult(kCreate, got, r, bodyStream(slot, r.offset, r.length));
  }

  async put(key, value, options = undefined) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'put' on 'R2Bucket'");
    key = String(key);
    const o = putOptions(internal.toDictionary(options, 'put() options'));
    const slot = await body(this.#binding, 'put', value, Object.keys(o.checksums));
    const stored = answer('put', await host.r2Op(this.#binding, 'put', key, JSON.stringify(o), slot));
    return stored === null ? null : new HeadResult(kCreate, stored);
  }

  async delete(keys) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'R2Bucket'");
    const list = Array.isArray(keys) ? keys.map(String) : [String(keys)];
    answer('delete', await host.r2Op(this.#binding, 'delete', '', JSON.stringify(list), null));
    return undefined;
  }

  async list(options = undefined) {
    const o = internal.toDictionary(options, 'list() options');
    const opts = {};
    for (const field of ['prefix', 'cursor', 'delimiter', 'startAfter']) {
      if (o[field] !== undefined && o[field] !== null) opts[field] = String(o[field]);
    }
    if (o.limit !== undefined && o.limit !== null) opts.limit = Number(o.limit);
    opts.include = o.include === undefined ? [] : Array.from(o.include, String);
    const page = answer('list', await host.r2Op(this.#binding, 'list', '', JSON.stringify(opts), null));
    const result = {
      objects: page.objects.map((obj) => new HeadResult(kCreate, obj)),
      delimitedPrefixes: page.delimitedPrefixes,
      truncated: page.truncated,
    };
    if (page.truncated) result.cursor = page.cursor;
    return result;
  }

  async createMultipartUpload(key, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'createMultipartUpload' on 'R2Bucket'");
    key = String(key);
    const o = putOptions(internal.toDictionary(options, 'createMultipartUpload() options'));
    const id = answer('createMultipartUpload', await host.r2Op(this.#binding, 'create', key, JSON.stringify(o), null));
    return new R2MultipartUpload(kCreate, this.#binding, key, id);
  }

  resumeMultipartUpload(key, uploadId) {
    internal.requireArgs(arguments.length, 2, "Failed to execute 'resumeMultipartUpload' on 'R2Bucket'");
    return new R2MultipartUpload(kCreate, this.#binding, String(key), String(uploadId));
  }
}
internal.enumerableMembers(R2Bucket, ['head', 'get', 'put', 'delete', 'list', 'createMultipartUpload', 'resumeMultipartUpload']);
internal.setToStringTag(R2Bucket.prototype, 'R2Bucket');

internal.r2Binding = (binding) => new R2Bucket(kCreate, binding);
