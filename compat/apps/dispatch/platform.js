// A platform Worker calling the customer's `shop` through its dispatch
// namespace binding `D`, whose outbound Worker is `egress` (params
// `[tenant]`): `/t/<tenant>` passes `tenant` (and `secret`, which the
// binding does not declare) as `options.outbound`, `/none` passes none,
// `/loop` and `/connect` ask the shop for those (the loop's subrequests
// lowered to 20 for the call). Run by cli/tests/dev_outbound.rs
// (`isolane dev`) and e2e `system` `outbound::…` (a cluster).
export default { async fetch(request, env) {
  const [, what, tenant] = new URL(request.url).pathname.split('/');
  const options = what === 'none' ? {} : { outbound: { tenant, secret: 'kept' } };
  if (what === 'loop') options.limits = { subRequests: 20 };
  const path = what === 'loop' || what === 'connect' ? '/' + what : '/';
  try {
    const r = await env.D.get('shop', {}, options).fetch('http://shop' + path);
    return new Response(r.status + ' ' + await r.text());
  } catch (e) { return new Response('caught ' + e.constructor.name + ': ' + e.message, { status: 503 }); }
} };
