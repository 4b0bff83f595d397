// AsyncLocalStorage as frameworks use it: hono's contextStorage middleware
// (getContext() anywhere below a request), and node:async_hooks directly
// across awaits, timers, promise chains, concurrent runs and EventEmitter.
import { Hono } from "hono";
import { contextStorage, getContext } from "hono/context-storage";
import { AsyncLocalStorage, AsyncResource } from "node:async_hooks";
import { EventEmitter } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";

const als = new AsyncLocalStorage();
const app = new Hono();
app.use(contextStorage());
app.use(async (c, next) => {
  c.set("user", c.req.header("x-user") ?? "none");
  await next();
});

// Deep in "library" code, no context passed.
async function whoAmI() {
  await sleep(1);
  return getContext().var.user;
}

app.get("/context", async (c) => c.json({ id: await whoAmI(), path: getContext().req.path }));

app.get("/als", async (c) => {
  const seen = [];
  await als.run({ n: 1 }, async () => {
    seen.push(als.getStore().n);
    await Promise.resolve();
    seen.push(als.getStore().n);
    await new Promise((resolve) => setTimeout(() => { seen.push(als.getStore().n); resolve(); }, 1));
    await als.run({ n: 2 }, async () => { await sleep(1); seen.push(als.getStore().n); });
    seen.push(als.getStore().n);
    seen.push(await Promise.resolve().then(() => als.getStore().n));
    als.exit(() => seen.push(als.getStore() ?? "exited"));
  });
  seen.push(als.getStore() ?? "outside");
  return c.json(seen);
});

app.get("/concurrent", async (c) => {
  const one = (n) => als.run(n, async () => { await sleep(3 - n); return `${n}:${als.getStore()}`; });
  return c.json(await Promise.all([one(1), one(2), one(3)]));
});

app.get("/bind", async (c) => {
  const bound = als.run("bound", () => AsyncLocalStorage.bind(() => als.getStore()));
  const snapshot = als.run("snap", () => AsyncLocalStorage.snapshot());
  const resource = als.run("resource", () => new AsyncResource("job"));
  return c.json({
    bound: bound(),
    snapshot: snapshot(() => als.getStore()),
    resource: resource.runInAsyncScope(() => als.getStore()),
    outside: als.getStore() ?? null,
  });
});

app.get("/emitter", async (c) => {
  const emitter = new EventEmitter();
  const got = [];
  als.run("listener-store", () => emitter.on("x", () => got.push(als.getStore() ?? null)));
  als.run("emit-store", () => emitter.emit("x"));
  return c.json(got);
});

app.get("/each-request/:id", async (c) => {
  const before = als.getStore() ?? null;
  return als.run(c.req.param("id"), async () => {
    await sleep(1);
    return c.json({ before, during: als.getStore(), id: await whoAmI() });
  });
});

export default app;
