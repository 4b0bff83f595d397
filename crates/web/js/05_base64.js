// 05_base64.js — atob and btoa (HTML, forgiving-base64).
'use strict';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

function invalid(what) {
  return new internal.DOMException(what === 'atob'
    ? "atob() called with invalid base64-encoded data. (Only whitespace, '+', '/', alphanumeric ASCII, and up to two terminal '=' signs when the input data length is divisible by 4 are allowed.)"
    : 'btoa() can only operate on characters in the Latin1 (ISO/IEC 8859-1) range.', 'InvalidCharacterError');
}

function atob(data) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'atob'");
  let s = internal.toDOMString(data).replace(/[\t\n\f\r ]+/g, '');
  if (s.length % 4 === 0) {
    if (s.endsWith('==')) s = s.slice(0, -2);
    else if (s.endsWith('=')) s = s.slice(0, -1);
  }
  if (s.length % 4 === 1) throw invalid('atob');
  let out = '';
  let buffer = 0, bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? DECODE[c] : -1;
    if (v < 0) throw invalid('atob');
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += String.fromCharCode((buffer >> bits) & 0xff);
    }
  }
  return out;
}

function btoa(data) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'btoa'");
  const s = internal.toDOMString(data);
  let out = '';
  let i = 0;
  for (; i + 2 < s.length; i += 3) {
    const a = s.charCodeAt(i), b = s.charCodeAt(i + 1), c = s.charCodeAt(i + 2);
    if ((a | b | c) > 255) throw invalid('btoa');
    out += ALPHABET[a >> 2] + ALPHABET[((a & 3) << 4) | (b >> 4)] + ALPHABET[((b & 15) << 2) | (c >> 6)] + ALPHABET[c & 63];
  }
  if (i < s.length) {
    const a = s.charCodeAt(i), b = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
    if ((a | b) > 255) throw invalid('btoa');
    out += ALPHABET[a >> 2] + ALPHABET[((a & 3) << 4) | (b >> 4)];
    out += i + 1 < s.length ? ALPHABET[(b & 15) << 2] + '=' : '==';
  }
  return out;
}

internal.defineGlobal('atob', atob);
internal.defineGlobal('btoa', btoa);
