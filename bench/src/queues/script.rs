//! The one script of section 19: the same source serves the producer and
//! the consumer Worker (each uses its own bindings), so `wrangler dev` can
//! serve it as one Worker with every binding.

/// Producer paths: `/batch?q=<binding>&from=K&n=N` (one `sendBatch` of the
/// numbers K..K+N as JSON bodies), `/ping?n=K` (one `send` of K to the
/// latency queue), `/wf/create?steps=N`, `/wf/status?id=`. Consumer paths:
/// `/count?q=<queue>` (`<distinct> <deliveries>`), `/wait?q=<queue>&n=K`
/// (answers once message K was seen: the consumer's own lag in ms, its
/// start less the message's timestamp). The queue handler reports each
/// batch to the queue's [`Tally`] object and acknowledges it by returning.
pub const SCRIPT: &str = r#"import { DurableObject, WorkflowEntrypoint } from 'cloudflare:workers';

export class Tally extends DurableObject {
  seen = new Set();
  deliveries = 0;
  lags = new Map();
  waiters = new Map();
  async fetch(request) {
    const url = new URL(request.url);
    switch (url.pathname) {
      case '/saw': {
        const { ns, lags } = await request.json();
        ns.forEach((n, i) => {
          this.seen.add(n);
          this.deliveries += 1;
          if (lags.length > 0) this.lags.set(n, lags[i]);
          const wake = this.waiters.get(n);
          if (wake !== undefined) {
            this.waiters.delete(n);
            wake();
          }
        });
        return new Response('ok');
      }
      case '/count':
        return new Response(`${this.seen.size} ${this.deliveries}`);
      case '/wait': {
        const n = Number(url.searchParams.get('n'));
        if (!this.seen.has(n)) await new Promise((resolve) => this.waiters.set(n, resolve));
        return new Response(String(this.lags.get(n) ?? -1));
      }
    }
    return new Response('no such path', { status: 404 });
  }
}

export class Steps extends WorkflowEntrypoint {
  async run(event, step) {
    const at = [Date.now()];
    for (let i = 0; i < event.payload.steps; i++) {
      await step.do('s' + i, async () => null);
      at.push(Date.now());
    }
    return at;
  }
}

const tally = (env, queue) => env.TALLY.get(env.TALLY.idFromName(queue));

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const q = (k) => url.searchParams.get(k);
    switch (url.pathname) {
      case '/':
        return new Response('ok');
      case '/batch': {
        const from = Number(q('from'));
        const messages = [];
        for (let i = 0; i < Number(q('n')); i++) messages.push({ body: { n: from + i }, contentType: 'json' });
        await env[q('q')].sendBatch(messages);
        return new Response('sent');
      }
      case '/ping':
        await env.PING.send({ n: Number(q('n')) }, { contentType: 'json' });
        return new Response('sent');
      case '/wf/create': {
        const instance = await env.WF.create({ params: { steps: Number(q('steps')) } });
        return new Response(instance.id);
      }
      case '/wf/status':
        return Response.json(await (await env.WF.get(q('id'))).status());
      case '/count':
      case '/wait':
        return tally(env, q('q')).fetch('http://tally' + url.pathname + url.search);
    }
    return new Response('no such path', { status: 404 });
  },
  async queue(batch, env) {
    const start = Date.now();
    const ns = batch.messages.map((m) => m.body.n);
    const lags = batch.queue === 'ping' ? batch.messages.map((m) => start - m.timestamp.getTime()) : [];
    const body = JSON.stringify({ ns, lags });
    const answer = await tally(env, batch.queue).fetch('http://tally/saw', { method: 'POST', body });
    if (!answer.ok) throw new Error(`the tally answered ${answer.status}`);
  },
};
"#;
