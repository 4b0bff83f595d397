// node:https — node:http's Agent and client for https: URLs (port 443), and
// its server as workerd has it (node:http's, `http_server.js`: TLS is the
// front end's, so its key and certificate options are held and unused; the
// TLS context methods throw "not implemented"). Runs as function (host,
// internal, require, module, exports).

const http = require('node:http');
const { requester } = require('node:internal/http_client');
const { notImplemented } = require('node:internal/errors');

class Agent extends http.Agent {
  constructor(options) {
    super(options);
    this.protocol = 'https:';
    this.defaultPort = 443;
  }
}

const globalAgent = new Agent();

class Server extends http.Server {
  addContext() { notImplemented('https.Server.addContext')(); }

  getTicketKeys() { notImplemented('https.Server.getTicketKeys')(); }

  setSecureContext() { notImplemented('https.Server.setSecureContext')(); }

  setTicketKeys() { notImplemented('https.Server.setTicketKeys')(); }
}

module.exports = {
  Agent,
  globalAgent,
  ...requester(globalAgent),
  createServer: (options, listener) => new Server(options, listener),
  Server,
};
