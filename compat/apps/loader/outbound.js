// A Worker that loads code with its service binding `env.OUT` as the
// code's globalOutbound (docs/loader.md), run by cli/tests/dev_outbound.rs
// on `isolane dev` and on workerd (its `workerLoader` binding) alike.
// `guard.js` is the Worker behind `env.OUT`.
//
//   /both     the loaded code fetches an allowed host (POST, a header, a
//             body) and a forbidden one; it answers what each fetch resolved to
//   /connect  the loaded code tries `connect()`
//   /loop     the loaded code fetches through the outbound until its
//             subrequest limit (20) refuses it
// Every error is caught and answered 503 `caught <class>: <message>`.

const GUEST = `import { connect } from 'cloudflare:sockets';
export default { async fetch(request) {
  const path = new URL(request.url).pathname;
  if (path === '/connect') {
    try { const socket = connect('allowed.example:80'); await socket.opened; return new Response('reached'); }
    catch (e) { return new Response('refused ' + e.constructor.name + ': ' + e.message); }
  }
  if (path === '/loop') {
    let n = 0;
    try { for (;;) { await (await fetch('http://allowed.example/' + n)).text(); n += 1; } }
    catch (e) { return new Response('after ' + n + ': ' + e.constructor.name + ': ' + e.message); }
  }
  const allowed = await fetch('http://allowed.example/path?q=1', {
    method: 'POST', headers: { 'x-from': 'loaded' }, body: 'payload',
  });
  const forbidden = await fetch('https://forbidden.example/secret');
  return new Response(allowed.status + ' ' + allowed.headers.get('x-guard') + ' ' + await allowed.text()
    + ' | ' + forbidden.status + ' ' + await forbidden.text());
} };`;

export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    const worker = env.LOADER.get('guarded', () => ({
      compatibilityDate: '2025-06-01',
      mainModule: 'main.js',
      modules: { 'main.js': GUEST },
      globalOutbound: env.OUT,
      limits: { subRequests: 20 },
    }));
    try {
      return await worker.getEntrypoint().fetch('http://guest' + path);
    } catch (e) {
      return new Response('caught ' + e.constructor.name + ': ' + e.message, { status: 503 });
    }
  },
};
