// node:stream/consumers — reads a whole Node or web stream (any async
// iterable of chunks) as bytes, text or JSON. Runs as function (host,
// internal, require, module, exports).

const { Buffer } = require('node:buffer');

async function buffer(stream) {
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks);
}

async function text(stream) {
  return (await buffer(stream)).toString('utf8');
}

module.exports = {
  buffer,
  arrayBuffer: async (stream) => {
    const bytes = await buffer(stream);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  },
  blob: async (stream) => new Blob([await buffer(stream)]),
  text,
  json: async (stream) => JSON.parse(await text(stream)),
};
