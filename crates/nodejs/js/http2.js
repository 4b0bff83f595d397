// node:http2 — importable only: every function throws "not implemented".
// Runs as function (host, internal, require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

module.exports = {
  constants: {},
  sensitiveHeaders: Symbol('nodejs.http2.sensitiveHeaders'),
  ...stubs('http2', ['connect', 'createServer', 'createSecureServer', 'getDefaultSettings', 'getPackedSettings', 'getUnpackedSettings', 'performServerHandshake']),
  Http2ServerRequest: stubClass('http2.Http2ServerRequest'),
  Http2ServerResponse: stubClass('http2.Http2ServerResponse'),
};
