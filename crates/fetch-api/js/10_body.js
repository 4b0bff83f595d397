// 10_body.js — the Body mixin shared by Request and Response (Fetch Standard).
// A body is either bytes of known length (sent whole to the host and turned
// into a stream only when someone asks for `.body`) or a ReadableStream.
'use strict';

const USED = 'Body has already been used. It can only be used once. Use tee() first if you need to read it twice.';

class BodyInner {
  constructor(source, stream) {
    this.source = source;   // Uint8Array (never mutated, may be shared by clones) or null
    this.stream = stream;   // ReadableStream or null (made lazily from source)
    this.used = false;      // consumed without a stream
  }

  getStream() {
    if (this.stream === null) {
      this.stream = internal.streamFromBytes(this.source);
      // Consumed whole already: the stream reads as a fully read one does,
      // disturbed and locked for good.
      if (this.used) internal.acquireReader(this.stream).cancel();
    }
    return this.stream;
  }

  get disturbed() {
    return this.used || (this.stream !== null && internal.streamIsDisturbed(this.stream));
  }

  get unusable() {
    return this.disturbed || (this.stream !== null && internal.streamIsLocked(this.stream));
  }

  // The bytes, whole, if they are known and nobody touched the stream.
  get wholeBytes() {
    if (this.source === null || this.disturbed) return null;
    if (this.stream !== null && internal.streamIsLocked(this.stream)) return null;
    return this.source;
  }

  // Reads the whole body; resolves with nothing once `box.bytes` holds it
  // and `box.shared` tells whether those bytes may be shared (a body's own
  // source, which clones share). Never resolves with an object (see
  // internal.acquireReader). Marks the body used at once.
  consume(box) {
    if (this.unusable) return Promise.reject(new TypeError(USED));
    if (this.stream === null) {
      this.used = true;
      box.bytes = this.source;
      box.shared = true;
      return Promise.resolve();
    }
    box.shared = false;
    return internal.readAllBytes(this.stream, box);
  }

  clone() {
    if (this.unusable) throw new TypeError(USED);
    if (this.source !== null) return new BodyInner(this.source, null);
    const [a, b] = internal.streamTee(this.stream);
    this.stream = a;
    return new BodyInner(null, b);
  }

  // Give this body to a new owner: the old owner's body reads as used.
  take() {
    if (this.unusable) throw new TypeError(USED);
    const taken = new BodyInner(this.source, this.stream);
    this.used = true;
    this.source = null;
    this.stream = null;
    return taken;
  }
}

// Extract a body from a BodyInit: { inner, type } (type may be null).
internal.extractBody = function extractBody(init) {
  if (internal.isReadableStream(init)) {
    if (internal.streamIsDisturbed(init) || internal.streamIsLocked(init)) {
      throw new TypeError('The ReadableStream passed as a body is disturbed or locked.');
    }
    return { inner: new BodyInner(null, init), type: null };
  }
  if (typeof init === 'string') {
    return { inner: new BodyInner(host.utf8Encode(init), null), type: 'text/plain;charset=UTF-8' };
  }
  if (internal.isURLSearchParams(init)) {
    return {
      inner: new BodyInner(host.utf8Encode(init.toString()), null),
      type: 'application/x-www-form-urlencoded;charset=UTF-8',
    };
  }
  const bytes = internal.bufferSourceCopy(init);
  if (bytes !== null) return { inner: new BodyInner(bytes, null), type: null };
  if (internal.isBlob && internal.isBlob(init)) {
    return { inner: new BodyInner(internal.blobBytes(init), null), type: init.type === '' ? null : init.type };
  }
  if (internal.isFormData && internal.isFormData(init)) {
    const { bytes: body, type } = internal.serializeFormData(init);
    return { inner: new BodyInner(body, null), type };
  }
  return { inner: new BodyInner(host.utf8Encode(internal.toUSVString(init)), null), type: 'text/plain;charset=UTF-8' };
};

internal.newBodyFromStream = (stream) => new BodyInner(null, stream);
internal.newBodyFromBytes = (u8) => new BodyInner(u8, null);

function wholeArrayBuffer(u8, shared) {
  if (!shared && u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength) return u8.buffer;
  return u8.slice().buffer;
}

// Install the Body mixin on a class. `getInner(obj)` returns its BodyInner or
// null (and brand-checks); `getHeaders(obj)` its Headers.
internal.installBody = function installBody(cls, getInner, getHeaders) {
  // Reads the body of `self` and settles with `finish(u8, shared)`.
  const read = (self, finish) => {
    let inner;
    try {
      inner = getInner(self);
    } catch (e) {
      return Promise.reject(e);
    }
    if (inner === null) return new Promise((resolve) => resolve(finish(new Uint8Array(0), false)));
    const box = { bytes: null, shared: false };
    return inner.consume(box).then(() => finish(box.bytes, box.shared));
  };
  const methods = {
    get body() {
      const inner = getInner(this);
      return inner === null ? null : inner.getStream();
    },
    get bodyUsed() {
      const inner = getInner(this);
      return inner !== null && inner.disturbed;
    },
    arrayBuffer() {
      return read(this, (u8, shared) => wholeArrayBuffer(u8, shared));
    },
    bytes() {
      return read(this, (u8, shared) => new Uint8Array(wholeArrayBuffer(u8, shared)));
    },
    text() {
      return read(this, (u8) => internal.utf8Decode(u8));
    },
    json() {
      return read(this, (u8) => JSON.parse(internal.utf8Decode(u8)));
    },
    blob() {
      const self = this;
      return read(this, (u8) => internal.newBlob(u8.slice(), getHeaders(self).get('content-type') ?? ''));
    },
    formData() {
      const self = this;
      return read(this, (bytes) => {
        // 24_form_data.js defines it; it runs only after every file loaded.
        return internal.parseFormDataBody(bytes, getHeaders(self).get('content-type') ?? '');
      });
    },
  };
  for (const key of Object.keys(methods)) {
    const d = Object.getOwnPropertyDescriptor(methods, key);
    d.enumerable = true;
    Object.defineProperty(cls.prototype, key, d);
  }
};

internal.BODY_USED_MESSAGE = USED;
