// apps/proxy.js
var proxy_default = {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/") return new Response("proxy");
    if (url.pathname === "/unreachable") {
      try {
        await fetch("http://127.0.0.1:9/");
        return new Response("reached?", { status: 500 });
      } catch (e) {
        return new Response(`bad gateway: ${e.name}`, { status: 502 });
      }
    }
    if (url.pathname === "/upper") {
      const upstream2 = await fetch(`${env.UPSTREAM}/stream`);
      const upper = new TransformStream({
        transform(chunk, controller) {
          controller.enqueue(new TextEncoder().encode(new TextDecoder().decode(chunk).toUpperCase()));
        }
      });
      return new Response(upstream2.body.pipeThrough(upper), { headers: { "content-type": "text/plain" } });
    }
    if (url.pathname === "/merged") {
      const [a, b] = await Promise.all([fetch(`${env.UPSTREAM}/json/a`), fetch(`${env.UPSTREAM}/json/b`)]);
      return Response.json({ a: await a.json(), b: await b.json() });
    }
    if (!url.pathname.startsWith("/api/")) return new Response("no route", { status: 404 });
    const target = new URL(url.pathname.slice("/api".length) + url.search, env.UPSTREAM);
    const headers = new Headers(request.headers);
    headers.delete("cookie");
    headers.set("x-forwarded-host", url.host);
    headers.set("x-proxied-by", "compat");
    const upstream = await fetch(target, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual"
    });
    const response = new Response(upstream.body, upstream);
    response.headers.set("x-proxy", "compat");
    response.headers.delete("x-upstream-secret");
    const location = response.headers.get("location");
    if (location?.startsWith(env.UPSTREAM)) response.headers.set("location", location.replace(env.UPSTREAM, `${url.origin}/api`));
    return response;
  }
};
export {
  proxy_default as default
};
