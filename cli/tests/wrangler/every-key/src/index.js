import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import notice from "./notice.txt";

export class Room extends DurableObject {}
export class Ledger extends DurableObject {}
export class Signup extends WorkflowEntrypoint {
  async run() {}
}

export default {
  async fetch(request, env) {
    return new Response(`${env.GREETING}: ${notice}`);
  },
  async queue() {},
  async scheduled() {},
};
