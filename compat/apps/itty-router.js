// An itty-router v5+ API: AutoRouter with params, query, JSON/text/html
// responders, cors(), StatusError, withContent, a nested router and
// ctx.waitUntil.
import { AutoRouter, Router, cors, error, html, json, status, StatusError, text, withContent } from "itty-router";

const { preflight, corsify } = cors({ origin: "https://app.example.com", allowMethods: ["GET", "POST", "DELETE"], exposeHeaders: ["x-total"] });

const todos = [
  { id: 1, title: "write compat suite", done: false },
  { id: 2, title: "ship it", done: false },
];

const admin = Router({ base: "/admin" });
admin.get("/stats", () => ({ todos: todos.length }));

const router = AutoRouter({ before: [preflight], finally: [corsify] });
router
  .get("/", () => text("itty"))
  .get("/todos", ({ query }) => {
    const limit = Number(query.limit ?? todos.length);
    return json(todos.slice(0, limit), { headers: { "x-total": String(todos.length) } });
  })
  .get("/todos/:id", ({ params }) => todos.find((t) => t.id === Number(params.id)) ?? error(404, "todo not found"))
  .post("/todos", withContent, ({ content }) => {
    if (!content?.title) throw new StatusError(400, "title required");
    return json({ id: 3, title: content.title, done: false }, { status: 201 });
  })
  .delete("/todos/:id", () => status(204))
  .get("/page/:name", ({ params }) => html(`<h1>${params.name}</h1>`))
  .get("/later", (request, env, ctx) => {
    ctx.waitUntil(new Promise((r) => setTimeout(r, 1)));
    return { scheduled: true };
  })
  .get("/throws", () => {
    throw new Error("nope");
  })
  .all("/admin/*", admin.fetch);

export default { ...router };
