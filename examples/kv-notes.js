// Notes kept in Workers KV.
//
//   isolane dev examples/kv-notes.js --kv NOTES
//
//   curl -X PUT localhost:8787/notes/hello -d 'hi there'           # store
//   curl -X PUT 'localhost:8787/notes/soon?ttl=60' -d 'goes away'  # expires in 60 s
//   curl localhost:8787/notes/hello                                # read (metadata in x-metadata)
//   curl 'localhost:8787/notes?prefix=h&limit=10'                   # list
//   curl -X DELETE localhost:8787/notes/hello                      # delete
//
// The data stays in .isolane/state across restarts (--state to move it).
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = decodeURIComponent(url.pathname.replace(/^\/notes\/?/, ''));
    if (key === '') {
      const q = url.searchParams;
      const page = await env.NOTES.list({
        prefix: q.get('prefix') ?? '',
        limit: q.has('limit') ? Number(q.get('limit')) : undefined,
        cursor: q.get('cursor'),
      });
      return Response.json(page);
    }
    switch (request.method) {
      case 'PUT': {
        const ttl = url.searchParams.get('ttl');
        await env.NOTES.put(key, request.body ?? '', {
          metadata: { type: request.headers.get('content-type') ?? 'text/plain' },
          expirationTtl: ttl === null ? undefined : Number(ttl),
        });
        return new Response('stored\n', { status: 201 });
      }
      case 'DELETE':
        await env.NOTES.delete(key);
        return new Response(null, { status: 204 });
      default: {
        const { value, metadata } = await env.NOTES.getWithMetadata(key);
        if (value === null) return new Response('no such note\n', { status: 404 });
        return new Response(value, { headers: { 'x-metadata': JSON.stringify(metadata) } });
      }
    }
  },
};
