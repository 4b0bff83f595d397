// 37_images.js — Cloudflare's Images binding: the object an `images: {}`
// binding puts in a Worker's `env` (`internal.imagesBinding()`, called by the
// engine as it builds `env`). `info(stream)` and `input(stream)` read the
// stream whole (as workerd's binding does before its backend call); the host
// reads the header (host.imagesInfo) or decodes, transforms and encodes off
// this thread (host.imagesTransform, src/images.rs). The host answers
// `[code, text, bytes?]`; a non-zero code is thrown as an `ImagesError` whose
// message is `IMAGES_<INFO|TRANSFORM>_ERROR <code>: …`, as workerd's binding
// words its backend's refusals.
'use strict';

const kImages = Symbol('create');

class ImagesError extends Error {
  #code;

  constructor(message, code) {
    super(message);
    this.#code = code;
  }

  get code() { return this.#code; }
}

function fail(operation, code, text) {
  return new ImagesError(`IMAGES_${operation}_${text}`.trim(), code);
}

// The bytes of `stream`, base64 text when `encoding` says so.
async function bytesOf(stream, options) {
  if (!(stream instanceof ReadableStream)) {
    throw new TypeError('The Images binding takes a ReadableStream of the image');
  }
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  const encoding = options === undefined || options === null ? undefined : options.encoding;
  if (encoding === undefined || encoding === null) return bytes;
  if (encoding !== 'base64') throw new TypeError(`Unsupported input encoding: ${encoding}`);
  const text = new TextDecoder().decode(bytes).replace(/\s+/g, '');
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

class ImageTransformationResult {
  #bytes;
  #type;

  constructor(key, bytes, type) {
    if (key !== kImages) internal.illegalConstructor();
    this.#bytes = bytes;
    this.#type = type;
  }

  contentType() { return this.#type; }

  image(options = undefined) {
    const bytes = this.#bytes;
    if (options !== undefined && options !== null && options.encoding === 'base64') {
      let binary = '';
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return new Response(btoa(binary)).body;
    }
    return new Response(bytes).body;
  }

  response() {
    return new Response(this.#bytes, { headers: { 'content-type': this.#type } });
  }
}
internal.enumerableMembers(ImageTransformationResult, ['contentType', 'image', 'response']);

class ImageTransformer {
  #input;
  #transforms = [];
  #consumed = false;

  constructor(key, input) {
    if (key !== kImages) internal.illegalConstructor();
    this.#input = input;
  }

  transform(transform) {
    if (!internal.isObject(transform)) throw new TypeError('transform() takes an object of transform options');
    this.#transforms.push(transform);
    return this;
  }

  draw(_image, _options = undefined) {
    throw new ImagesError('IMAGES_TRANSFORM_ERROR 9523: ERROR: draw() is not supported by this runtime yet', 9523);
  }

  async output(options) {
    if (this.#consumed) {
      throw new ImagesError('IMAGES_TRANSFORM_ERROR 9525: ImageTransformer consumed; you may only call .output() once', 9525);
    }
    this.#consumed = true;
    if (!internal.isObject(options) || typeof options.format !== 'string') {
      throw new TypeError('output() takes { format, quality? }');
    }
    let quality = 0;
    if (options.quality !== undefined) {
      quality = Number(options.quality);
      if (!Number.isFinite(quality) || quality < 1 || quality > 100) {
        throw new TypeError('output() quality must be a number from 1 to 100');
      }
    }
    const bytes = await this.#input;
    const [code, text, image] = await host.imagesTransform(bytes, JSON.stringify(this.#transforms), options.format, quality);
    if (code !== 0) throw fail('TRANSFORM', code, text);
    return new ImageTransformationResult(kImages, image, text);
  }
}
internal.enumerableMembers(ImageTransformer, ['transform', 'draw', 'output']);

class ImagesBinding {
  constructor(key) {
    if (key !== kImages) internal.illegalConstructor();
  }

  async info(stream, options = undefined) {
    const [code, text] = host.imagesInfo(await bytesOf(stream, options));
    if (code !== 0) throw fail('INFO', code, text);
    return JSON.parse(text);
  }

  input(stream, options = undefined) {
    const input = bytesOf(stream, options);
    // Read now, as workerd does; its failure is output()'s.
    input.catch(() => {});
    return new ImageTransformer(kImages, input);
  }
}
internal.enumerableMembers(ImagesBinding, ['info', 'input']);

internal.imagesBinding = () => new ImagesBinding(kImages);
