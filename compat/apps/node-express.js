// Express 5 through cloudflare:node's `httpServerHandler` (workerd's way to
// run a Node server on Workers): routes, query parsing, `req.ip`/`protocol`
// and the four body parsers (express.json, urlencoded, text, raw: body-parser
// over on-finished, raw-body, type-is and iconv-lite), which read the
// Worker's request as a Node IncomingMessage. Errors go through an error
// handler that answers their status and type (V8's JSON.parse wording is
// left out: it differs between V8 versions).
import express from "express";
import { httpServerHandler } from "cloudflare:node";

const app = express();
const echo = (req, res) => {
  const body = Buffer.isBuffer(req.body) ? { hex: req.body.toString("hex") } : req.body;
  res.json({ body: body ?? null, type: req.get("content-type") ?? null });
};
app.post("/json", express.json({ limit: "1kb" }), echo);
app.post("/json-loose", express.json({ strict: false }), echo);
app.post("/urlencoded", express.urlencoded({ extended: true }), echo);
app.post("/simple", express.urlencoded({ extended: false }), echo);
app.post("/text", express.text({ type: "text/*" }), echo);
app.post("/raw", express.raw({ type: "application/octet-stream" }), echo);
app.get("/info", (req, res) => {
  res.json({ ip: req.ip, protocol: req.protocol, hostname: req.hostname, path: req.path, query: req.query });
});
app.use((req, res) => res.status(404).send("not here"));
app.use((error, req, res, next) => {
  res.status(error.status ?? 500).json({ status: error.status ?? null, type: error.type ?? null });
});
app.listen(8080);

export default httpServerHandler({ port: 8080 });
