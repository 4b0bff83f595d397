// The SPA's API: run first for /api/* (wrangler.toml's run_worker_first);
// every other path is the assets'.
export default {
  fetch(request) {
    const url = new URL(request.url);
    const user = url.pathname.match(/^\/api\/users\/(\d+)$/);
    if (user) return Response.json({ id: Number(user[1]), name: `user ${user[1]}` });
    return Response.json({ error: "no such API", path: url.pathname }, { status: 404 });
  },
};
