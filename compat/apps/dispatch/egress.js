// The platform's outbound Worker: refuses forbidden.example, echoes the
// rest with its `env.tenant` (the call's param), `env.secret` (not a
// declared param) and its own binding `env.OWN`, a header added. It
// answers itself: no network.
export default { async fetch(request, env) {
  const url = new URL(request.url);
  if (url.hostname === 'forbidden.example') return new Response('egress refused', { status: 403 });
  return new Response('egress saw ' + request.method + ' ' + request.url + ' x-from=' + request.headers.get('x-from')
    + ' tenant=' + env.tenant + ' secret=' + env.secret + ' own=' + env.OWN, { headers: { 'x-guard': 'added' } });
} };
