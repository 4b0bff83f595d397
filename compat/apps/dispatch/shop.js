// The customer's Worker called through the platform's dispatch binding:
// a fetch of an allowed and of a forbidden host (both taken by the
// platform's outbound Worker); `/loop` fetches until its subrequest limit
// refuses it; `/connect` tries `connect()`; `/direct` (its own route) a
// fetch that is not the outbound Worker's.
import { connect } from 'cloudflare:sockets';
export default { async fetch(request) {
  const path = new URL(request.url).pathname;
  if (path === '/loop') {
    let n = 0;
    try { for (;;) { await (await fetch('http://allowed.example/' + n)).text(); n += 1; } }
    catch (e) { return new Response('after ' + n + ': ' + e.constructor.name + ': ' + e.message); }
  }
  if (path === '/connect') {
    try { const socket = connect('allowed.example:80'); await socket.opened; return new Response('reached'); }
    catch (e) { return new Response('refused ' + e.constructor.name + ': ' + e.message); }
  }
  if (path === '/direct') {
    try { const r = await fetch('http://127.0.0.1:9/'); return new Response('direct ' + r.status + ' ' + await r.text()); }
    catch (e) { return new Response('direct ' + e.constructor.name); }
  }
  const a = await fetch('http://allowed.example/p', { headers: { 'x-from': 'customer' } });
  const f = await fetch('http://forbidden.example/');
  return new Response(a.status + ' ' + a.headers.get('x-guard') + ' ' + await a.text() + ' | ' + f.status + ' ' + await f.text());
} };
