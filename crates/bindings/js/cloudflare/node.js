// cloudflare:node (workerd's module of the same name): `httpServerHandler`,
// the Worker's handler that hands each request to the node:http server
// listening on a port (`server.listen(port)`; node:internal/http_server).
// Runs as function (host, internal, require, module, exports).

const server = require('node:internal/http_server');

// `{ port }`, or a Server that listens.
function portOf(options) {
  if (options instanceof server.Server) {
    const address = options.address();
    if (address === null) throw new TypeError('The server passed to httpServerHandler is not listening');
    return address.port;
  }
  const port = options?.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TypeError('httpServerHandler takes { port } (an integer 0-65535) or a listening http.Server');
  }
  return port;
}

function httpServerHandler(options) {
  const port = portOf(options);
  return {
    fetch(request) {
      return server.respond(port, request);
    },
  };
}

module.exports = { httpServerHandler };
