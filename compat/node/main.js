// Node.js compatibility checks (issue 30): 32 checks over the node: modules
// Workers use. Each answers true or false; a module that does not load
// fails its checks only. GET / answers "<passed>/32" and the failures.
import checks from './checks.cjs';

export default {
  async fetch() {
    const failed = [];
    let passed = 0;
    for (const [name, check] of checks) {
      let ok = false;
      try {
        ok = (await check()) === true;
      } catch (error) {
        failed.push(`${name}: ${error && error.message}`);
        continue;
      }
      if (ok) passed++;
      else failed.push(`${name}: false`);
    }
    return new Response(`${passed}/${checks.length}\n${failed.join('\n')}\n`);
  },
};
