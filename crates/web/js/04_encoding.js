// 04_encoding.js — TextEncoder and TextDecoder (Encoding Standard; isolane-web).
// UTF-8 decodes here and in the core's host.utf8Decode (the fast path); every
// other encoding through a decoder the host keeps (encoding_rs:
// host.textDecoderNew and host.textDecode, src/encoding/decoder.rs), which
// carries `{stream: true}` state.
'use strict';

const UTF8_LABELS = new Set([
  'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8',
]);

class TextEncoder {
  #brand = true;

  static #check(self) {
    if (!internal.isObject(self) || !(#brand in self)) throw new TypeError('Illegal invocation');
  }

  get encoding() { TextEncoder.#check(this); return 'utf-8'; }

  encode(input = '') {
    TextEncoder.#check(this);
    return host.utf8Encode(internal.toDOMString(input));
  }

  encodeInto(source, destination) {
    TextEncoder.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'encodeInto' on 'TextEncoder'");
    source = internal.toDOMString(source);
    if (!(destination instanceof Uint8Array)) {
      throw new TypeError("Failed to execute 'encodeInto' on 'TextEncoder': parameter 2 is not of type 'Uint8Array'.");
    }
    const [read, written] = host.utf8EncodeInto(source, destination);
    return { read, written };
  }
}
internal.enumerableMembers(TextEncoder, ['encoding', 'encode', 'encodeInto']);
internal.setToStringTag(TextEncoder.prototype, 'TextEncoder');

// How many bytes at the end of `bytes` are a valid but incomplete UTF-8 sequence.
function incompleteTail(bytes) {
  const n = bytes.length;
  for (let back = 1; back <= 3 && back <= n; back++) {
    const b = bytes[n - back];
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    let need;
    if (b >= 0xc2 && b <= 0xdf) need = 2;
    else if (b >= 0xe0 && b <= 0xef) need = 3;
    else if (b >= 0xf0 && b <= 0xf4) need = 4;
    else return 0;
    if (back >= need) return 0; // complete (or over-long, which the decoder handles)
    // the second byte has a narrower range for some lead bytes
    if (back >= 2) {
      const c = bytes[n - back + 1];
      const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      if (c < lo || c > hi) return 0;
    }
    return back;
  }
  return 0;
}

const TEXT_STEP = 1024 * 1024;

class TextDecoder {
  #fatal;
  #ignoreBOM;
  #pending = null;     // Uint8Array of an incomplete sequence kept between stream calls
  #bomSeen = false;    // whether the start of the stream has been looked at

  #encoding = 'utf-8'; // the encoding's name, lowercase
  #label = null;       // for any other encoding than UTF-8: the label the host decoder is made from
  #handle = null;      // that decoder, made at the first decode

  constructor(label = 'utf-8', options = undefined) {
    label = internal.toDOMString(label);
    const opts = internal.toDictionary(options, 'TextDecoderOptions');
    const name = label.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, '').toLowerCase();
    if (!UTF8_LABELS.has(name)) {
      // Unknown labels and those of the replacement encoding are refused.
      const encoding = host.encodingForLabel(label);
      if (typeof encoding !== 'string') {
        throw new RangeError(`Failed to construct 'TextDecoder': The encoding label provided ('${label}') is invalid.`);
      }
      if (encoding !== 'utf-8') {
        this.#encoding = encoding;
        this.#label = label;
      }
    }
    this.#fatal = !!opts.fatal;
    this.#ignoreBOM = !!opts.ignoreBOM;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#fatal in self)) throw new TypeError('Illegal invocation');
  }

  get encoding() { TextDecoder.#check(this); return this.#encoding; }
  get fatal() { TextDecoder.#check(this); return this.#fatal; }
  get ignoreBOM() { TextDecoder.#check(this); return this.#ignoreBOM; }

  decode(input = undefined, options = undefined) {
    TextDecoder.#check(this);
    let bytes;
    if (input === undefined) {
      bytes = new Uint8Array(0);
    } else {
      bytes = internal.bufferSourceView(input);
      if (bytes === null) {
        throw new TypeError("Failed to execute 'decode' on 'TextDecoder': parameter 1 is not of type 'ArrayBuffer or ArrayBufferView'.");
      }
    }
    const stream = !!internal.toDictionary(options, 'TextDecodeOptions').stream;
    if (this.#label !== null) return this.#decodeOther(bytes, stream);
    if (this.#pending !== null) {
      const joined = new Uint8Array(this.#pending.length + bytes.length);
      joined.set(this.#pending);
      joined.set(bytes, this.#pending.length);
      bytes = joined;
      this.#pending = null;
    }
    if (stream) {
      const keep = incompleteTail(bytes);
      if (keep > 0) {
        this.#pending = bytes.slice(bytes.length - keep);
        bytes = bytes.subarray(0, bytes.length - keep);
      }
    }
    let out;
    try {
      out = bytes.length === 0 ? '' : host.utf8Decode(bytes, this.#fatal, true);
    } catch (e) {
      this.#pending = null;
      this.#bomSeen = false;
      throw new TypeError('The encoded data was not valid for encoding utf-8');
    }
    if (!this.#bomSeen && out.length > 0) {
      this.#bomSeen = true;
      if (!this.#ignoreBOM && out.charCodeAt(0) === 0xfeff) out = out.slice(1);
    }
    if (!stream) this.#bomSeen = false;
    return out;
  }

  // Any encoding but UTF-8, in steps of at most 1 MiB (the host sizes its
  // output buffer from the step); the host decoder starts afresh after the
  // last step of a call without `stream`, and after an error.
  #decodeOther(bytes, stream) {
    this.#handle ??= host.textDecoderNew(this.#label, this.#ignoreBOM);
    let out = '';
    let at = 0;
    do {
      const end = Math.min(at + TEXT_STEP, bytes.length);
      out += host.textDecode(this.#handle, bytes.subarray(at, end), this.#fatal, !stream && end === bytes.length);
      at = end;
    } while (at < bytes.length);
    return out;
  }
}
internal.enumerableMembers(TextDecoder, ['encoding', 'fatal', 'ignoreBOM', 'decode']);
internal.setToStringTag(TextDecoder.prototype, 'TextDecoder');

internal.defineGlobal('TextEncoder', TextEncoder);
internal.defineGlobal('TextDecoder', TextDecoder);
