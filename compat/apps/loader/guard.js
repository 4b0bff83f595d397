// The outbound Worker of compat/apps/loader/outbound.js's loaded code: it
// refuses forbidden.example (403) and answers any other host itself (no
// real network), echoing the request it saw, with a header added.
export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.hostname === 'forbidden.example') {
      return new Response('guard refused ' + url.hostname, { status: 403 });
    }
    const body = await request.text();
    const seen = request.method + ' ' + request.url + ' x-from=' + request.headers.get('x-from') + ' body=' + body;
    return new Response('guard saw ' + seen, { headers: { 'x-guard': 'added' } });
  },
};
