// A JSON API on Hono: routing with params and wildcards, cors, etag,
// secure-headers, request-id, pretty-json, body-limit, cookies, errors and
// not-found handlers, and hono/adapter's runtime detection and env().
import { Hono } from "hono";
import { cors } from "hono/cors";
import { etag } from "hono/etag";
import { secureHeaders } from "hono/secure-headers";
import { prettyJSON } from "hono/pretty-json";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { getCookie, setCookie } from "hono/cookie";
import { env, getRuntimeKey } from "hono/adapter";

const users = new Map([
  ["1", { id: "1", name: "Ada", roles: ["admin"] }],
  ["2", { id: "2", name: "Linus", roles: [] }],
]);

const app = new Hono();
app.use("*", secureHeaders());
app.use("/api/*", cors({ origin: ["https://app.example.com"], allowHeaders: ["X-Custom"], maxAge: 600 }));
app.use("/api/*", etag());
app.use("/api/*", prettyJSON());

app.get("/", (c) => c.text("hono api"));
app.get("/api/users", (c) => {
  const role = c.req.query("role");
  const list = [...users.values()].filter((u) => !role || u.roles.includes(role));
  return c.json({ users: list, count: list.length });
});
app.get("/api/users/:id{[0-9]+}", (c) => {
  const user = users.get(c.req.param("id"));
  if (!user) throw new HTTPException(404, { message: "no such user" });
  return c.json(user);
});
app.post("/api/users", bodyLimit({ maxSize: 256, onError: (c) => c.text("too big", 413) }), async (c) => {
  const body = await c.req.json();
  if (typeof body.name !== "string") return c.json({ error: "name required" }, 422);
  return c.json({ id: "3", name: body.name }, 201, { Location: "/api/users/3" });
});
app.get("/files/*", (c) => c.text(`file: ${c.req.path.slice("/files/".length)}`));
app.get("/cookie", (c) => {
  const seen = getCookie(c, "seen");
  setCookie(c, "seen", String(Number(seen ?? 0) + 1), { path: "/", httpOnly: true, sameSite: "Lax" });
  return c.text(`seen ${seen ?? "never"}`);
});
app.get("/redirect", (c) => c.redirect("/api/users", 302));
app.get("/boom", () => {
  throw new Error("kaboom");
});
app.get("/runtime", (c) => c.json({ runtime: getRuntimeKey(), greeting: env(c).GREETING ?? null }));

app.notFound((c) => c.json({ error: "not found", path: c.req.path }, 404));
app.onError((err, c) => {
  if (err instanceof HTTPException) return c.json({ error: err.message }, err.status);
  return c.json({ error: err.message }, 500);
});

export default app;
