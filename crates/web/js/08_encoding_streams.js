// 08_encoding_streams.js — TextEncoderStream and TextDecoderStream (Encoding
// Standard): a TransformStream each, over the core's UTF-8 encoder and the
// global TextDecoder (04_encoding.js), constructed when a stream is made.
'use strict';

// `isolane-streams`' class (08_streams.js), taken at snapshot time: a Worker that
// replaces the global later changes nothing here.
const { TransformStream } = globalThis;

class TextEncoderStream {
  #t;
  constructor() {
    let pendingHighSurrogate = null;
    this.#t = new TransformStream({
      transform(chunk, controller) {
        let s = internal.toDOMString(chunk);
        if (pendingHighSurrogate !== null) { s = pendingHighSurrogate + s; pendingHighSurrogate = null; }
        if (s.length > 0) {
          const last = s.charCodeAt(s.length - 1);
          if (last >= 0xd800 && last <= 0xdbff) { pendingHighSurrogate = s[s.length - 1]; s = s.slice(0, -1); }
        }
        if (s.length > 0) controller.enqueue(host.utf8Encode(s));
      },
      flush(controller) {
        if (pendingHighSurrogate !== null) controller.enqueue(new Uint8Array([0xef, 0xbf, 0xbd]));
      },
    });
  }
  static #rec(self) {
    if (!internal.isObject(self) || !(#t in self)) throw new TypeError('Illegal invocation');
    return self.#t;
  }
  get encoding() { TextEncoderStream.#rec(this); return 'utf-8'; }
  get readable() { return TextEncoderStream.#rec(this).readable; }
  get writable() { return TextEncoderStream.#rec(this).writable; }
}
internal.enumerableMembers(TextEncoderStream, ['encoding', 'readable', 'writable']);
internal.setToStringTag(TextEncoderStream.prototype, 'TextEncoderStream');

class TextDecoderStream {
  #t;
  #decoder;
  constructor(label = 'utf-8', options = undefined) {
    const decoder = new TextDecoder(label, options);
    this.#decoder = decoder;
    this.#t = new TransformStream({
      transform(chunk, controller) {
        if (internal.bufferSourceView(chunk) === null) {
          throw new TypeError('TextDecoderStream: chunk is not an ArrayBuffer or ArrayBufferView.');
        }
        const s = decoder.decode(chunk, { stream: true });
        if (s) controller.enqueue(s);
      },
      flush(controller) {
        const s = decoder.decode();
        if (s) controller.enqueue(s);
      },
    });
  }
  static #rec(self) {
    if (!internal.isObject(self) || !(#t in self)) throw new TypeError('Illegal invocation');
    return self;
  }
  get encoding() { return TextDecoderStream.#rec(this).#decoder.encoding; }
  get fatal() { return TextDecoderStream.#rec(this).#decoder.fatal; }
  get ignoreBOM() { return TextDecoderStream.#rec(this).#decoder.ignoreBOM; }
  get readable() { return TextDecoderStream.#rec(this).#t.readable; }
  get writable() { return TextDecoderStream.#rec(this).#t.writable; }
}
internal.enumerableMembers(TextDecoderStream, ['encoding', 'fatal', 'ignoreBOM', 'readable', 'writable']);
internal.setToStringTag(TextDecoderStream.prototype, 'TextDecoderStream');

internal.defineGlobal('TextEncoderStream', TextEncoderStream);
internal.defineGlobal('TextDecoderStream', TextDecoderStream);
