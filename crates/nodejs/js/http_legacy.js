// The parts of node:http under Node's old internal module names
// (`_http_agent`, `_http_client`, `_http_common`, `_http_incoming`,
// `_http_outgoing`, `_http_server`), which packages still require and
// workerd keeps. Runs as function (host, internal, require, module, exports).

const http = require('node:http');
const { stubs } = require('node:internal/errors');

// RFC 9110's token characters, and what a header value may not hold.
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

module.exports = {
  agent: { Agent: http.Agent, globalAgent: http.globalAgent },
  client: { ClientRequest: http.ClientRequest },
  common: {
    CRLF: '\r\n',
    _checkInvalidHeaderChar: (value) => INVALID_VALUE.test(value),
    _checkIsHttpToken: (value) => TOKEN.test(value),
    chunkExpression: /(?:^|\W)chunked(?:$|\W)/i,
    continueExpression: /(?:^|\W)100-continue(?:$|\W)/i,
    kIncomingMessage: Symbol('IncomingMessage'),
    methods: http.METHODS,
    parsers: { name: 'parsers', max: 1000 },
  },
  incoming: { IncomingMessage: http.IncomingMessage },
  outgoing: {
    OutgoingMessage: http.OutgoingMessage,
    kHighWaterMark: Symbol('kHighWaterMark'),
    kUniqueHeaders: Symbol('kUniqueHeaders'),
    parseUniqueHeadersOption: (headers) => (Array.isArray(headers) ? new Set(headers.map((h) => h.toLowerCase())) : null),
    validateHeaderName: http.validateHeaderName,
    validateHeaderValue: http.validateHeaderValue,
  },
  server: {
    STATUS_CODES: http.STATUS_CODES,
    Server: http.Server,
    ServerResponse: http.ServerResponse,
    kServerResponse: Symbol('ServerResponse'),
    kConnectionsCheckingInterval: Symbol('http.server.connectionsCheckingInterval'),
    ...stubs('http', ['_connectionListener', 'httpServerPreClose', 'setupConnectionsTracking', 'storeHTTPOptions']),
  },
};
