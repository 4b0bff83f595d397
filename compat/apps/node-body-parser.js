// body-parser (Express's body parsing: raw-body, iconv-lite, http-errors,
// type-is, qs, on-finished; CommonJS over node:zlib, node:stream,
// node:buffer, node:events, async_hooks) driven by a fetch handler: the
// Request becomes the Node-style request stream it reads.
import bodyParser from "body-parser";
import { Readable } from "node:stream";

const parsers = {
  json: bodyParser.json({ limit: "1kb" }),
  "json-loose": bodyParser.json({ strict: false }),
  urlencoded: bodyParser.urlencoded({ extended: true }),
  simple: bodyParser.urlencoded({ extended: false }),
  text: bodyParser.text({ type: "text/*", defaultCharset: "utf-8" }),
  raw: bodyParser.raw({ type: "application/octet-stream" }),
};

function nodeRequest(request) {
  const url = new URL(request.url);
  const req = request.body ? Readable.fromWeb(request.body) : Readable.from([]);
  req.headers = Object.fromEntries(request.headers);
  req.method = request.method;
  req.url = url.pathname + url.search;
  return req;
}

export default {
  async fetch(request) {
    const name = new URL(request.url).pathname.slice(1);
    const parser = parsers[name];
    if (!parser) return new Response("not found", { status: 404 });
    const req = nodeRequest(request);
    const error = await new Promise((resolve) => parser(req, {}, resolve));
    if (error) {
      return Response.json({ status: error.status, type: error.type, message: error.message }, { status: error.status ?? 500 });
    }
    const body = Buffer.isBuffer(req.body) ? { buffer: req.body.toString("hex") } : req.body;
    return Response.json({ body: body ?? null });
  },
};
