import schema from "./schema.sql";
import about from "./docs/about.md";

export class Cart {
  constructor(state) {
    this.state = state;
  }
  async fetch() {
    return new Response("cart");
  }
}

export default {
  async fetch(request, env) {
    return Response.json({ schema, about, config: env.CONFIG });
  },
  async scheduled() {},
};
