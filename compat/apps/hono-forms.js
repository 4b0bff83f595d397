// HTML forms on Hono: parseBody for urlencoded and multipart bodies, the
// zod-validator `form` and `json` targets, and a file upload whose SHA-256 is
// answered (Request.formData and File under the hood).
import { Hono } from "hono";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";

const signup = z.object({
  email: z.email(),
  age: z.coerce.number().int().min(13),
  plan: z.enum(["free", "pro"]).default("free"),
});

const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");

const app = new Hono();
app.get("/", (c) =>
  c.html(`<form method="post" action="/signup"><input name="email"><input name="age"></form>`),
);
app.post("/parse", async (c) => {
  const body = await c.req.parseBody({ all: true });
  const out = {};
  for (const [key, value] of Object.entries(body)) {
    const one = (v) => (typeof v === "string" ? v : { file: v.name, type: v.type, size: v.size });
    out[key] = Array.isArray(value) ? value.map(one) : one(value);
  }
  return c.json(out);
});
app.post("/signup", zValidator("form", signup), (c) => c.json({ ok: true, user: c.req.valid("form") }, 201));
app.post("/signup.json", zValidator("json", signup), (c) => c.json({ ok: true, user: c.req.valid("json") }, 201));
app.post("/upload", async (c) => {
  const form = await c.req.formData();
  const file = form.get("file");
  if (!(file instanceof File)) return c.json({ error: "no file" }, 400);
  const bytes = await file.arrayBuffer();
  return c.json({
    name: file.name,
    type: file.type,
    size: file.size,
    sha256: hex(await crypto.subtle.digest("SHA-256", bytes)),
    note: form.get("note"),
    fields: [...form.keys()],
  });
});
app.get("/echo-form", async () => {
  // A FormData body built by the Worker, read back by the Worker.
  const form = new FormData();
  form.append("a", "1");
  form.append("blob", new Blob(["hello"], { type: "text/plain" }), "hello.txt");
  const round = await new Response(form).formData();
  return Response.json({ a: round.get("a"), blob: await round.get("blob").text(), name: round.get("blob").name });
});

export default app;
