// The service-worker form: no import/export, addEventListener('fetch', …),
// FetchEvent with request, respondWith, waitUntil, passThroughOnException.
// Answers with the same JSON as the module suites.
let waitUntilRan = false;
// Bindings are globals in this form, there from the first line.
const suiteAtTopLevel = typeof SUITE === 'string' ? SUITE : typeof SUITE;

addEventListener('fetch', (event) => {
  const failed = [];
  let passed = 0;
  const check = (name, fn) => {
    try { fn(); passed++; } catch (e) { failed.push({ name, error: String((e && e.stack) || e) }); }
  };
  check('FetchEvent', () => {
    if (!(event instanceof FetchEvent)) throw new Error('not a FetchEvent');
    if (!(event instanceof Event)) throw new Error('not an Event');
    if (event.type !== 'fetch') throw new Error(`type ${event.type}`);
    if (!(event.request instanceof Request)) throw new Error('no request');
    if (event.request.method !== 'POST') throw new Error(`method ${event.request.method}`);
    if (event.isTrusted !== true) throw new Error('not trusted');
    event.passThroughOnException();
  });
  check('bindings are globals', () => {
    if (suiteAtTopLevel !== 'service_worker.js') throw new Error(`SUITE at top level: ${suiteAtTopLevel}`);
    if (SUITE !== 'service_worker.js') throw new Error(`SUITE: ${SUITE}`);
    if (typeof TARGET !== 'string' || !TARGET.startsWith('http://')) throw new Error(`TARGET: ${typeof TARGET}`);
    if (globalThis.SUITE !== SUITE) throw new Error('not a property of globalThis');
  });
  check('waitUntil', () => {
    event.waitUntil(new Promise((r) => setTimeout(() => { waitUntilRan = true; r(); }, 1)));
    let threw = false;
    try { event.waitUntil(); } catch (e) { threw = e instanceof TypeError; }
    if (!threw) throw new Error('waitUntil() without an argument should throw TypeError');
  });
  check('respondWith validation', () => {
    let threw = null;
    try { new FetchEvent('fetch', {}); } catch (e) { threw = e; }
    if (!(threw instanceof TypeError)) throw new Error('FetchEvent without a request should throw TypeError');
  });
  event.respondWith((async () => {
    const body = await event.request.text();
    if (body !== 'ping') failed.push({ name: 'request body', error: `got ${JSON.stringify(body)}` }); else passed++;
    let again = null;
    try { event.respondWith(new Response('twice')); } catch (e) { again = e; }
    if (!(again instanceof DOMException) || again.name !== 'InvalidStateError') {
      failed.push({ name: 'respondWith after dispatch', error: String(again) });
    } else {
      passed++;
    }
    return new Response(JSON.stringify({ passed, failed }), { headers: { 'content-type': 'application/json' } });
  })());
});

addEventListener('fetch', () => {
  // respondWith stops immediate propagation: this listener must not run
  throw new Error('second fetch listener ran');
});
