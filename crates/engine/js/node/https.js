// node:https — node:http's Agent and client for https: URLs (port 443);
// createServer throws "not implemented". Runs as function (host, internal,
// require, module, exports).

const http = require('node:http');
const { requester } = require('node:internal/http_client');
const { notImplemented, stubClass } = require('node:internal/errors');

class Agent extends http.Agent {
  constructor(options) {
    super(options);
    this.protocol = 'https:';
    this.defaultPort = 443;
  }
}

const globalAgent = new Agent();

module.exports = {
  Agent,
  globalAgent,
  ...requester(globalAgent),
  createServer: notImplemented('https.createServer'),
  Server: stubClass('https.Server'),
};
