// node:stream/web — the runtime's WHATWG streams under Node's names. Runs as
// function (host, internal, require, module, exports).

for (const name of [
  'ReadableStream', 'ReadableStreamDefaultReader', 'ReadableStreamBYOBReader',
  'ReadableStreamBYOBRequest', 'ReadableByteStreamController', 'ReadableStreamDefaultController',
  'TransformStream', 'TransformStreamDefaultController', 'WritableStream',
  'WritableStreamDefaultWriter', 'WritableStreamDefaultController', 'ByteLengthQueuingStrategy',
  'CountQueuingStrategy', 'TextEncoderStream', 'TextDecoderStream', 'CompressionStream',
  'DecompressionStream',
]) {
  if (globalThis[name] !== undefined) exports[name] = globalThis[name];
}
