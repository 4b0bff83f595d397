// node:http — its data (STATUS_CODES, METHODS), an Agent (it holds its
// options; requests go through the Worker's fetch, `http_client.js`), and
// the client: request, get, ClientRequest, IncomingMessage; the server
// (createServer, Server, ServerResponse: `http_server.js`) as workerd has it
// under enable_nodejs_http_server_modules, else they throw "not implemented".
// Runs as function (host, internal, require, module, exports).

const EventEmitter = require('node:events');
const { codedError } = require('node:internal/errors');
const client = require('node:internal/http_client');
const server = require('node:internal/http_server');

const STATUS_CODES = {
  100: 'Continue', 101: 'Switching Protocols', 102: 'Processing', 103: 'Early Hints',
  200: 'OK', 201: 'Created', 202: 'Accepted', 203: 'Non-Authoritative Information', 204: 'No Content',
  205: 'Reset Content', 206: 'Partial Content', 207: 'Multi-Status', 208: 'Already Reported', 226: 'IM Used',
  300: 'Multiple Choices', 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified',
  305: 'Use Proxy', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
  400: 'Bad Request', 401: 'Unauthorized', 402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 406: 'Not Acceptable', 407: 'Proxy Authentication Required', 408: 'Request Timeout',
  409: 'Conflict', 410: 'Gone', 411: 'Length Required', 412: 'Precondition Failed', 413: 'Payload Too Large',
  414: 'URI Too Long', 415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 417: 'Expectation Failed',
  418: "I'm a Teapot", 421: 'Misdirected Request', 422: 'Unprocessable Entity', 423: 'Locked',
  424: 'Failed Dependency', 425: 'Too Early', 426: 'Upgrade Required', 428: 'Precondition Required',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  504: 'Gateway Timeout', 505: 'HTTP Version Not Supported', 506: 'Variant Also Negotiates',
  507: 'Insufficient Storage', 508: 'Loop Detected', 509: 'Bandwidth Limit Exceeded', 510: 'Not Extended',
  511: 'Network Authentication Required',
};

const METHODS = [
  'ACL', 'BIND', 'CHECKOUT', 'CONNECT', 'COPY', 'DELETE', 'GET', 'HEAD', 'LINK', 'LOCK', 'M-SEARCH',
  'MERGE', 'MKACTIVITY', 'MKCALENDAR', 'MKCOL', 'MOVE', 'NOTIFY', 'OPTIONS', 'PATCH', 'POST', 'PROPFIND',
  'PROPPATCH', 'PURGE', 'PUT', 'QUERY', 'REBIND', 'REPORT', 'SEARCH', 'SOURCE', 'SUBSCRIBE', 'TRACE',
  'UNBIND', 'UNLINK', 'UNLOCK', 'UNSUBSCRIBE',
];

// Holds its options; makes no connections (requests are fetches).
class Agent extends EventEmitter {
  constructor(options = {}) {
    super();
    this.protocol = 'http:';
    this.defaultPort = 80;
    this.options = { ...options };
    this.keepAlive = !!options.keepAlive;
    this.maxSockets = options.maxSockets ?? Infinity;
    this.maxFreeSockets = options.maxFreeSockets ?? 256;
    this.requests = {};
    this.sockets = {};
    this.freeSockets = {};
  }

  destroy() {}
}

const globalAgent = new Agent();

function validateHeaderName(name) {
  new client.OutgoingMessage().setHeader(name, '');
}

function validateHeaderValue(name, value) {
  if (value === undefined) throw codedError(TypeError, 'ERR_HTTP_INVALID_HEADER_VALUE', `Invalid value "${value}" for header "${name}"`);
  new client.OutgoingMessage().setHeader('x', value);
}

module.exports = {
  STATUS_CODES,
  METHODS,
  Agent,
  globalAgent,
  maxHeaderSize: 16384,
  ...client.requester(globalAgent),
  createServer: server.createServer,
  Server: server.Server,
  ClientRequest: client.ClientRequest,
  IncomingMessage: client.IncomingMessage,
  OutgoingMessage: client.OutgoingMessage,
  ServerResponse: server.ServerResponse,
  validateHeaderName,
  validateHeaderValue,
  setMaxIdleHTTPParsers: () => {},
  WebSocket: globalThis.WebSocket,
  MessageEvent: globalThis.MessageEvent,
  CloseEvent: globalThis.CloseEvent,
};
