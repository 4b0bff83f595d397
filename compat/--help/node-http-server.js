// apps/node-http-server.js
import http from "node:http";
import { httpServerHandler } from "cloudflare:node";
async function echo(req, res) {
  let body = "";
  for await (const chunk of req) body += chunk;
  res.writeHead(201, { "content-type": "application/json", "x-method": req.method });
  res.end(JSON.stringify({ method: req.method, url: req.url, test: req.headers["x-test"] ?? null, body }));
}
var server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  switch (url.pathname) {
    case "/echo":
      echo(req, res);
      return;
    case "/pieces":
      res.setHeader("content-type", "text/plain");
      res.setHeader("x-pieces", ["a", "b"]);
      res.statusCode = 202;
      res.write("one,");
      res.write(Buffer.from("two,"));
      setTimeout(() => res.end("three"), 1);
      return;
    case "/empty":
      res.writeHead(204).end();
      return;
    case "/state":
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ listening: server.listening, address: server.address(), headersSent: res.headersSent }));
      return;
    default:
      res.statusCode = 404;
      res.setHeader("content-type", "text/plain");
      res.end("not here");
  }
});
server.listen(8080);
var node_http_server_default = httpServerHandler({ port: 8080 });
export {
  node_http_server_default as default
};
