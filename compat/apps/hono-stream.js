// Streaming answers on Hono, as chat and AI front ends send them:
// hono/streaming's streamText and streamSSE (server-sent events with ids and
// event names), a piped ReadableStream, and a timing header.
import { Hono } from "hono";
import { stream, streamSSE, streamText } from "hono/streaming";

const words = ["Workers", "stream", "their", "answers", "word", "by", "word."];

const app = new Hono();
app.get("/", (c) => c.text("stream"));
app.get("/text", (c) =>
  streamText(c, async (s) => {
    for (const word of words) {
      await s.write(`${word} `);
      await s.sleep(1);
    }
    await s.writeln("");
  }),
);
app.get("/sse", (c) =>
  streamSSE(c, async (s) => {
    for (const [id, word] of words.entries()) {
      await s.writeSSE({ id: String(id), event: id % 2 ? "odd" : "even", data: JSON.stringify({ word }) });
    }
    await s.writeSSE({ event: "done", data: "[DONE]" });
  }),
);
app.get("/bytes", (c) =>
  stream(c, async (s) => {
    s.onAbort(() => {});
    await s.write(new Uint8Array([104, 105, 10]));
    await s.pipe(new Response("piped tail\n").body);
  }),
);
app.get("/readable", () => {
  let n = 0;
  const body = new ReadableStream({
    pull(controller) {
      if (n === 3) return controller.close();
      controller.enqueue(new TextEncoder().encode(`chunk ${n++}\n`));
    },
  });
  return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
});

export default app;
