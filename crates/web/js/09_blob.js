// 09_blob.js — Blob and File (File API), kept in memory.
'use strict';

function normalizeType(type) {
  const s = internal.toDOMString(type);
  // only printable ASCII is allowed; otherwise the type is the empty string
  return /^[\x20-\x7e]*$/.test(s) ? s.toLowerCase() : '';
}

function partsToBytes(blobParts, endings) {
  if (blobParts === undefined) return new Uint8Array(0);
  if (!internal.isObject(blobParts) || typeof blobParts[Symbol.iterator] !== 'function') {
    throw new TypeError("Failed to construct 'Blob': The provided value cannot be converted to a sequence.");
  }
  const chunks = [];
  let total = 0;
  for (const part of blobParts) {
    let bytes;
    if (internal.isBlob(part)) {
      bytes = internal.blobBytes(part);
    } else if (internal.isArrayBufferView(part) || part instanceof internal.NativeArrayBuffer) {
      bytes = internal.bufferSourceCopy(part);
    } else {
      let s = internal.toUSVString(part);
      if (endings === 'native') s = s.replace(/\r\n|\r/g, '\n');
      bytes = host.utf8Encode(s);
    }
    chunks.push(bytes);
    total += bytes.byteLength;
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.byteLength; }
  return out;
}

class Blob {
  #bytes;
  #type;

  constructor(blobParts = undefined, options = undefined) {
    const opts = internal.toDictionary(options, 'BlobPropertyBag');
    const endings = opts.endings === undefined ? 'transparent' : internal.toDOMString(opts.endings);
    if (endings !== 'transparent' && endings !== 'native') {
      throw new TypeError(`Failed to construct 'Blob': The provided value '${endings}' is not a valid enum value of type EndingType.`);
    }
    this.#bytes = partsToBytes(blobParts, endings);
    this.#type = opts.type === undefined ? '' : normalizeType(opts.type);
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#bytes in self)) throw new TypeError('Illegal invocation');
  }

  get size() { Blob.#check(this); return this.#bytes.byteLength; }
  get type() { Blob.#check(this); return this.#type; }

  slice(start = undefined, end = undefined, contentType = undefined) {
    Blob.#check(this);
    const size = this.#bytes.byteLength;
    const clamp = (v, dflt) => {
      if (v === undefined) return dflt;
      let n = Math.trunc(internal.toNumber(v)) || 0;
      if (n < 0) n = Math.max(size + n, 0);
      return Math.min(n, size);
    };
    const from = clamp(start, 0);
    const to = clamp(end, size);
    const blob = new Blob();
    blob.#bytes = this.#bytes.slice(from, Math.max(from, to));
    blob.#type = contentType === undefined ? '' : normalizeType(contentType);
    return blob;
  }

  text() {
    try { Blob.#check(this); } catch (e) { return Promise.reject(e); }
    return Promise.resolve(host.utf8Decode(this.#bytes, false, false));
  }
  arrayBuffer() {
    try { Blob.#check(this); } catch (e) { return Promise.reject(e); }
    return Promise.resolve(this.#bytes.slice().buffer);
  }
  bytes() {
    try { Blob.#check(this); } catch (e) { return Promise.reject(e); }
    return Promise.resolve(this.#bytes.slice());
  }
  stream() {
    Blob.#check(this);
    return internal.streamFromBytes(this.#bytes);
  }

  static {
    internal.isBlob = (v) => internal.isObject(v) && #bytes in v;
    internal.blobBytes = (b) => b.#bytes;
    internal.setBlobContents = (blob, bytes, type) => {
      blob.#bytes = bytes;
      blob.#type = normalizeType(type);
    };
    internal.newBlob = (bytes, type) => {
      const blob = new Blob();
      blob.#bytes = bytes;
      blob.#type = normalizeType(type);
      return blob;
    };
  }
}
internal.enumerableMembers(Blob, ['size', 'type', 'slice', 'text', 'arrayBuffer', 'bytes', 'stream']);
internal.setToStringTag(Blob.prototype, 'Blob');

class File extends Blob {
  #name;
  #lastModified;

  constructor(fileBits, fileName, options = undefined) {
    internal.requireArgs(arguments.length, 2, "Failed to construct 'File'");
    super(fileBits, options);
    this.#name = internal.toUSVString(fileName);
    const opts = internal.toDictionary(options, 'FilePropertyBag');
    this.#lastModified = opts.lastModified === undefined ? (internal.now ? internal.now() : 0) : Math.trunc(internal.toNumber(opts.lastModified));
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#name in self)) throw new TypeError('Illegal invocation');
  }

  get name() { File.#check(this); return this.#name; }
  get lastModified() { File.#check(this); return this.#lastModified; }

  static {
    internal.isFile = (v) => internal.isObject(v) && #name in v;
    // A File over `bytes` (shared, never mutated: no copy), for FormData.
    internal.newFile = (bytes, name, type, lastModified) => {
      const file = new File([], name, { lastModified });
      internal.setBlobContents(file, bytes, type);
      return file;
    };
  }
}
internal.enumerableMembers(File, ['name', 'lastModified']);
internal.setToStringTag(File.prototype, 'File');

internal.defineGlobal('Blob', Blob);
internal.defineGlobal('File', File);
