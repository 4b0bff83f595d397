// node_modules/itty-router/index.mjs
var t = ({ base: e = "", routes: t2 = [], ...r2 } = {}) => ({ __proto__: new Proxy({}, { get: (r3, o2, a2, s2) => (r4, ...n2) => t2.push([o2.toUpperCase?.(), RegExp(`^${(s2 = (e + r4).replace(/\/+(\/|$)/g, "$1")).replace(/(\/?\.?):(\w+)\+/g, "($1(?<$2>*))").replace(/(\/?\.?):(\w+)/g, "($1(?<$2>[^$1/]+?))").replace(/\./g, "\\.").replace(/(\/?)\*/g, "($1.*)?")}/*$`), n2, s2]) && a2 }), routes: t2, ...r2, async fetch(e2, ...o2) {
  let a2, s2, n2 = new URL(e2.url), c2 = e2.query = { __proto__: null };
  for (let [e3, t3] of n2.searchParams) c2[e3] = c2[e3] ? [].concat(c2[e3], t3) : t3;
  e: try {
    for (let t3 of r2.before || []) if (null != (a2 = await t3(e2.proxy ?? e2, ...o2))) break e;
    t: for (let [r3, c3, l2, i2] of t2) if ((r3 == e2.method || "ALL" == r3) && (s2 = n2.pathname.match(c3))) {
      e2.params = s2.groups || {}, e2.route = i2;
      for (let t3 of l2) if (null != (a2 = await t3(e2.proxy ?? e2, ...o2))) break t;
    }
  } catch (t3) {
    if (!r2.catch) throw t3;
    a2 = await r2.catch(t3, e2.proxy ?? e2, ...o2);
  }
  try {
    for (let t3 of r2.finally || []) a2 = await t3(a2, e2.proxy ?? e2, ...o2) ?? a2;
  } catch (t3) {
    if (!r2.catch) throw t3;
    a2 = await r2.catch(t3, e2.proxy ?? e2, ...o2);
  }
  return a2;
} });
var r = (e = "text/plain; charset=utf-8", t2) => (r2, { ...o2 } = {}) => {
  if (void 0 === r2 || r2 instanceof Response) return r2;
  const a2 = new Response(t2?.(r2) ?? r2, o2);
  return a2.headers.set("content-type", e), a2;
};
var o = r("application/json; charset=utf-8", JSON.stringify);
var a = (e) => ({ 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 500: "Internal Server Error" })[e] || "Unknown Error";
var s = (e = 500, t2) => {
  if (e instanceof Error) {
    const { message: r2, ...o2 } = e;
    e = e.status || 500, t2 = { error: r2 || a(e), ...o2 };
  }
  return t2 = { status: e, ..."object" == typeof t2 ? t2 : { error: t2 || a(e) } }, o(t2, { status: e });
};
var n = (e) => {
  e.proxy = new Proxy(e.proxy || e, { get: (t2, r2) => void 0 !== t2[r2] ? t2[r2].bind?.(e) || t2[r2] : t2?.params?.[r2] });
};
var c = ({ format: e = o, missing: r2 = (() => s(404)), finally: a2 = [], before: c2 = [], ...l2 } = {}) => t({ before: [n, ...c2], catch: s, finally: [(e2, ...t2) => e2 ?? r2(e2, ...t2), e, ...a2], ...l2 });
var l = class extends Error {
  status;
  constructor(e = 500, t2) {
    super("object" == typeof t2 ? t2.error : t2), "object" == typeof t2 && Object.assign(this, t2), this.status = e;
  }
};
var i = (e, t2) => new Response(null, { ...t2, status: e });
var p = r("text/plain; charset=utf-8", String);
var f = r("text/html");
var u = r("image/jpeg");
var h = r("image/png");
var g = r("image/webp");
var d = async (e) => {
  e.content = e.body ? await e.clone().json().catch((() => e.clone().formData())).catch((() => e.text())) : void 0;
};
var y = (e = {}) => {
  const { origin: t2 = "*", credentials: r2 = false, allowMethods: o2 = "*", allowHeaders: a2, exposeHeaders: s2, maxAge: n2 } = e, c2 = { "access-control-allow-headers": a2?.join?.(",") ?? a2, "access-control-expose-headers": s2?.join?.(",") ?? s2, "access-control-allow-methods": o2?.join?.(",") ?? o2, "access-control-max-age": n2, "access-control-allow-credentials": r2 }, l2 = (e2) => {
    const o3 = e2?.headers.get("origin");
    return true === t2 ? o3 : t2 instanceof RegExp ? t2.test(o3) ? o3 : void 0 : Array.isArray(t2) ? t2.includes(o3) ? o3 : void 0 : t2 instanceof Function ? t2(o3) : "*" == t2 && r2 ? o3 : t2;
  };
  return { corsify: (e2, t3) => e2?.headers?.get("access-control-allow-origin") ? e2 : new Response(e2.body, { ...e2, headers: [...e2.headers, ["access-control-allow-origin", l2(t3)], ...Object.entries(c2)].filter(((e3) => e3[1])) }), preflight: (e2) => {
    if ("OPTIONS" == e2.method) return new Response(null, { status: 204, headers: Object.entries({ "access-control-allow-origin": l2(e2), ...c2 }).filter(((e3) => e3[1])) });
  } };
};

// apps/itty-router.js
var { preflight, corsify } = y({ origin: "https://app.example.com", allowMethods: ["GET", "POST", "DELETE"], exposeHeaders: ["x-total"] });
var todos = [
  { id: 1, title: "write compat suite", done: false },
  { id: 2, title: "ship it", done: false }
];
var admin = t({ base: "/admin" });
admin.get("/stats", () => ({ todos: todos.length }));
var router = c({ before: [preflight], finally: [corsify] });
router.get("/", () => p("itty")).get("/todos", ({ query }) => {
  const limit = Number(query.limit ?? todos.length);
  return o(todos.slice(0, limit), { headers: { "x-total": String(todos.length) } });
}).get("/todos/:id", ({ params }) => todos.find((t2) => t2.id === Number(params.id)) ?? s(404, "todo not found")).post("/todos", d, ({ content }) => {
  if (!content?.title) throw new l(400, "title required");
  return o({ id: 3, title: content.title, done: false }, { status: 201 });
}).delete("/todos/:id", () => i(204)).get("/page/:name", ({ params }) => f(`<h1>${params.name}</h1>`)).get("/later", (request, env, ctx) => {
  ctx.waitUntil(new Promise((r2) => setTimeout(r2, 1)));
  return { scheduled: true };
}).get("/throws", () => {
  throw new Error("nope");
}).all("/admin/*", admin.fetch);
var itty_router_default = { ...router };
export {
  itty_router_default as default
};
