// The smallest worker: `isolane dev examples/hello.js`, then `curl localhost:8787`.
export default {
  fetch(request, env, ctx) {
    return new Response("Hello from Isolane!\n", {
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  },
};
