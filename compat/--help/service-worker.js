// apps/service-worker.js
addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (url.pathname === "/binding") {
    event.respondWith(new Response(`greeting: ${typeof GREETING === "undefined" ? "missing" : GREETING}`));
    return;
  }
  event.respondWith(new Response(`service worker: ${event.request.method} ${url.pathname}`));
});
