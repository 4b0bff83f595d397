// Compression and caching middleware on Hono: hono/compress (gzip and deflate
// through CompressionStream) and hono/cache (the Cache API), as an API that
// serves a large JSON document would use them.
import { Hono } from "hono";
import { compress } from "hono/compress";
import { cache } from "hono/cache";

const catalogue = {
  items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ["a", "b", "c"].slice(0, i % 4) })),
};

const app = new Hono();
app.get("/", (c) => c.text("compress"));
app.use("/catalogue/*", compress());
app.get("/catalogue/all", (c) => c.json(catalogue));
app.get("/catalogue/small", (c) => c.json({ tiny: true }));
app.get("/catalogue/deflate", compress({ encoding: "deflate" }), (c) => c.json(catalogue));
app.get("/cached/*", cache({ cacheName: "compat", cacheControl: "max-age=60" }));
app.get("/cached/answer", (c) => c.json({ answer: 42 }));
app.post("/decompress", async (c) => {
  // A gzip request body read through DecompressionStream.
  const text = await new Response(c.req.raw.body.pipeThrough(new DecompressionStream("gzip"))).text();
  return c.json({ length: text.length, head: text.slice(0, 20) });
});

export default app;
