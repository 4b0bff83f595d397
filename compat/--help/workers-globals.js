// apps/workers-globals.js
var routes;
var handlers = {
  async "/url-pattern"(request) {
    const url = new URL(request.url);
    routes ??= [[new URLPattern({ pathname: "/users/:id(\\d+)/posts/:slug" }), ({ pathname }) => Response.json(pathname.groups)]];
    for (const [pattern, handle] of routes) {
      const match = pattern.exec(url.searchParams.get("path"), url.origin);
      if (match) return handle(match);
    }
    return new Response("no match", { status: 404 });
  },
  async "/decode"(request) {
    const url = new URL(request.url);
    const decoder = new TextDecoder(url.searchParams.get("label"), { fatal: url.searchParams.has("fatal") });
    try {
      return Response.json({ encoding: decoder.encoding, text: decoder.decode(await request.arrayBuffer()) });
    } catch (e) {
      return Response.json({ error: e.name }, { status: 400 });
    }
  },
  async "/navigator"() {
    return Response.json({ userAgent: navigator.userAgent, hardwareConcurrency: typeof navigator.hardwareConcurrency });
  },
  async "/events"() {
    const target = new EventTarget();
    const seen = [];
    target.addEventListener("ping", (e) => seen.push([e.type, e.detail, e instanceof CustomEvent]));
    target.dispatchEvent(new CustomEvent("ping", { detail: { n: 1 } }));
    return Response.json({ seen, reportError: typeof reportError });
  },
  async "/clone"() {
    const value = { date: /* @__PURE__ */ new Date(0), map: /* @__PURE__ */ new Map([["k", 1]]), set: /* @__PURE__ */ new Set([1, 2]), nested: { a: [1, { b: 2n.toString() }] } };
    const copy = structuredClone(value);
    return Response.json({ date: copy.date.toISOString(), map: [...copy.map], set: [...copy.set], same: copy !== value, nested: copy.nested });
  },
  async "/identity-stream"() {
    const { readable, writable } = new IdentityTransformStream();
    const writer = writable.getWriter();
    writer.write(new TextEncoder().encode("through identity"));
    writer.close();
    return new Response(readable);
  },
  async "/fixed-length"() {
    const { readable, writable } = new FixedLengthStream(5);
    const writer = writable.getWriter();
    writer.write(new TextEncoder().encode("fixed"));
    writer.close();
    return new Response(readable);
  },
  async "/string-stream"() {
    return new Response(new ReadableStream({ start(c) {
      c.enqueue("text ");
      c.enqueue("chunks");
      c.close();
    } }));
  },
  async "/webhook"(request) {
    const secret = new TextEncoder().encode("whsec_compat");
    const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    const body = await request.text();
    const sig = [...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const given = request.headers.get("x-signature") ?? "";
    return Response.json({ sig, valid: given === sig });
  },
  async "/uuid"() {
    const id = crypto.randomUUID();
    return Response.json({ id, v4: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id) });
  },
  async "/digest"() {
    const data = new TextEncoder().encode("abc");
    const hex = async (alg) => [...new Uint8Array(await crypto.subtle.digest(alg, data))].map((b) => b.toString(16).padStart(2, "0")).join("");
    return Response.json({ sha1: await hex("SHA-1"), sha256: await hex("SHA-256"), sha512: (await hex("SHA-512")).slice(0, 32) });
  },
  async "/data-url"() {
    const response = await fetch("data:text/plain;base64,aGVsbG8gZGF0YQ==");
    return new Response(await response.text(), { headers: { "x-type": response.headers.get("content-type") } });
  },
  async "/cache"(request) {
    const cache = caches.default;
    const key = new Request("https://cache.example/key");
    await cache.put(key, new Response("cached body", { headers: { "cache-control": "max-age=60" } }));
    return Response.json({ api: typeof cache.match, hasOpen: typeof caches.open });
  },
  async "/blob"() {
    const blob = new Blob(["ab", new Uint8Array([99])], { type: "text/plain" });
    const file = new File([blob], "f.txt", { type: "text/plain", lastModified: 0 });
    return Response.json({ size: blob.size, text: await blob.slice(1).text(), name: file.name, lastModified: file.lastModified });
  },
  async "/abort"() {
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    const timeout = AbortSignal.timeout(1);
    await new Promise((r) => setTimeout(r, 5));
    return Response.json({ aborted: controller.signal.aborted, reason: controller.signal.reason.message, timeout: timeout.reason?.name });
  }
};
var workers_globals_default = {
  async fetch(request) {
    const { pathname } = new URL(request.url);
    const handler = handlers[pathname];
    if (!handler) return new Response("not found", { status: 404 });
    return handler(request);
  }
};
export {
  workers_globals_default as default
};
