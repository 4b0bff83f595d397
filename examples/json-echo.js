// Echoes the request as JSON: method, path, query, headers and parsed body.
//   curl -s localhost:8787/items?id=7 -d '{"name":"x"}' -H 'content-type: application/json'
let served = 0; // globals live as long as the warm isolate

export default {
  async fetch(request, env) {
    served += 1;
    const url = new URL(request.url);
    const text = await request.text();
    let body = text;
    if ((request.headers.get("content-type") ?? "").includes("json") && text) {
      try {
        body = JSON.parse(text);
      } catch {
        return Response.json({ error: "invalid JSON body" }, { status: 400 });
      }
    }
    return Response.json({
      method: request.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(request.headers),
      body,
      served,
      env: Object.keys(env),
    });
  },
};
