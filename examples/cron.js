// A Worker with a cron trigger: `scheduled` runs at each tick of
// spec.triggers.crons (or `isolane dev examples/cron.js --cron '*/5 * * * *'`;
// `GET /__scheduled?cron=…` runs it once), and `fetch` shows what ran.
const ticks = [];

export default {
  async scheduled(controller, env, ctx) {
    if (controller.cron === 'fail') throw new Error('this tick fails on purpose');
    ticks.push({ cron: controller.cron, scheduledTime: controller.scheduledTime });
    if (ticks.length > 100) ticks.shift();
  },
  async fetch() {
    return Response.json(ticks);
  },
};
