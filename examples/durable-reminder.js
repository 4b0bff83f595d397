// Reminders kept by a Durable Object's alarm, one object per name.
//
//   isolane dev examples/durable-reminder.js --durable-object REMINDER=Reminder
//
//   curl -X POST 'localhost:8787/remind/tea?in=2000'  # rings in 2 s
//   curl localhost:8787/remind/tea                    # {"alarm":…,"rang":…}
//
// The alarm is kept in .isolane/state: it rings after a restart of
// isolane dev too. An alarm() that throws is retried (alarmInfo.retryCount)
// up to six times, two seconds apart and doubling.
import { DurableObject } from 'cloudflare:workers';

export class Reminder extends DurableObject {
  async alarm(alarmInfo) {
    const rang = ((await this.ctx.storage.get('rang')) ?? 0) + 1;
    await this.ctx.storage.put('rang', rang);
    await this.ctx.storage.put('retryCount', alarmInfo.retryCount);
  }

  async fetch(request) {
    const storage = this.ctx.storage;
    if (request.method === 'POST') {
      const delay = Number(new URL(request.url).searchParams.get('in') ?? 0);
      await storage.setAlarm(Date.now() + delay);
    }
    const [alarm, rang] = [await storage.getAlarm(), (await storage.get('rang')) ?? 0];
    return Response.json({ alarm, rang });
  }
}

export default {
  async fetch(request, env) {
    const name = new URL(request.url).pathname.replace(/^\/remind\/?/, '') || 'default';
    return env.REMINDER.getByName(name).fetch(request);
  }
};
