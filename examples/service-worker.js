// The service-worker form: addEventListener('fetch', …) and event.respondWith.
addEventListener("fetch", (event) => {
  event.respondWith(handle(event.request));
});

async function handle(request) {
  const { pathname } = new URL(request.url);
  if (pathname === "/uuid") {
    return new Response(crypto.randomUUID() + "\n");
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(pathname));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new Response(`sha256(${pathname}) = ${hex}\n`);
}
