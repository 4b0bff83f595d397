// /probe: the workflows run to their ends, and each status() seen on
// the way, as JSON (compared between isolane dev and wrangler dev).
import { WorkflowEntrypoint } from 'cloudflare:workers';
import { NonRetryableError } from 'cloudflare:workflows';

export class Done extends WorkflowEntrypoint {
  async run(event, step) {
    const a = await step.do('a', async () => ({ got: event.payload.x }));
    const again = await step.do('a', async () => 2);
    return { a, again, id: typeof event.instanceId, at: event.timestamp instanceof Date };
  }
}

export class Fails extends WorkflowEntrypoint {
  async run(event, step) {
    await step.do('boom', { retries: { limit: 1, delay: 10, backoff: 'constant' } }, async () => {
      throw new TypeError('boom');
    });
  }
}

// Not retried: errored after its one attempt.
export class Fatal extends WorkflowEntrypoint {
  async run(event, step) {
    await step.do('fatal', { retries: { limit: 5, delay: '10 seconds', backoff: 'constant' } }, async () => {
      throw new NonRetryableError('no point retrying');
    });
  }
}

// Catches its step's NonRetryableError, then sleeps: the step's callback
// runs once (counted in KV), whether or not `run()` runs again after the
// sleep (Isolane does, from the step log; miniflare goes on in memory).
export class Kept extends WorkflowEntrypoint {
  async run(event, step) {
    const id = event.instanceId;
    let caught;
    try {
      await step.do('declined', { retries: { limit: 5, delay: '10 seconds', backoff: 'constant' } }, async () => {
        await this.env.SEEN.put(`kept:${id}:${crypto.randomUUID()}`, '1');
        throw new NonRetryableError('card declined');
      });
    } catch (e) {
      caught = { isError: e instanceof Error, declined: String(e.message).endsWith('card declined') };
    }
    await step.sleep('nap', 500);
    const runs = (await this.env.SEEN.list({ prefix: `kept:${id}:` })).keys.length;
    return { caught, runs };
  }
}

export class Waits extends WorkflowEntrypoint {
  async run(event, step) {
    const got = await step.waitForEvent('e', { type: 'go', timeout: '1 hour' });
    return { payload: got.payload, type: got.type };
  }
}

async function until(instance, want, tries = 400) {
  for (let i = 0; i < tries; i++) {
    const status = await instance.status();
    if (want.includes(status.status)) return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return instance.status();
}

const shape = (s) => ({ status: s.status, error: s.error ?? null, output: s.output ?? null });

async function attempt(f) {
  try {
    await f();
    return 'ok';
  } catch (e) {
    return `${e.name}`;
  }
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname !== '/probe') return new Response('ok');
    const run = crypto.randomUUID().slice(0, 8);
    const done = await env.DONE.create({ id: `done-${run}`, params: { x: 7 } });
    const fails = await env.FAILS.create({ id: `fails-${run}` });
    const waits = await env.WAITS.create({ id: `waits-${run}` });
    const out = { id: done.id === `done-${run}` };
    out.done = shape(await until(done, ['complete', 'errored']));
    out.fails = shape(await until(fails, ['complete', 'errored']));
    // Its retry delay (10 s) is longer than this wait: errored only if not
    // retried.
    const fatal = await env.FATAL.create({ id: `fatal-${run}` });
    out.fatal = shape(await until(fatal, ['complete', 'errored'], 100));
    const kept = await env.KEPT.create({ id: `kept-${run}` });
    out.kept = shape(await until(kept, ['complete', 'errored'], 100));
    // miniflare says `running` while a run waits for an event (Isolane:
    // `waiting`, as Cloudflare documents): a short wait for `waiting`.
    out.waiting = shape(await until(waits, ['waiting'], 40));
    await waits.sendEvent({ type: 'go', payload: { n: 1 } });
    out.went = shape(await until(waits, ['complete', 'errored']));
    out.duplicate = await attempt(() => env.DONE.create({ id: `done-${run}` }));
    out.unknown = await attempt(() => env.DONE.get(`nope-${run}`));
    return Response.json(out);
  },
};
