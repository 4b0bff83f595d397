// Counters kept by a Durable Object, one object per counter name.
//
//   isolane dev examples/durable-counter.js --durable-object COUNTER=Counter
//
//   curl -X POST localhost:8787/hits/home   # +1, answers the new count
//   curl localhost:8787/hits/home           # the count, through an RPC call
//
// Concurrent increments of one counter never lose one (the object's input
// gate), an answer comes once its write is durable (the output gate), and
// the counts stay in .isolane/state across restarts (--state to move it).
import { DurableObject } from 'cloudflare:workers';

export class Counter extends DurableObject {
  async fetch(request) {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    await this.ctx.storage.put('n', n);
    return new Response(`${n}\n`);
  }

  async count() {
    return (await this.ctx.storage.get('n')) ?? 0;
  }
}

export default {
  async fetch(request, env) {
    const name = new URL(request.url).pathname.replace(/^\/hits\/?/, '') || 'default';
    const counter = env.COUNTER.getByName(name);
    if (request.method === 'POST') return counter.fetch(request);
    return new Response(`${await counter.count()}\n`);
  },
};
