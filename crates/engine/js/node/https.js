// node:https — node:http's Agent under https' name; request, get and
// createServer throw "not implemented". Runs as function (host, internal,
// require, module, exports).

const http = require('node:http');
const { notImplemented, stubClass } = require('node:internal/errors');

class Agent extends http.Agent {}

module.exports = {
  Agent,
  globalAgent: new Agent(),
  request: notImplemented('https.request'),
  get: notImplemented('https.get'),
  createServer: notImplemented('https.createServer'),
  Server: stubClass('https.Server'),
};
