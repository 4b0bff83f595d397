// React Router 7 in framework mode (SSR with loaders, actions, error
// boundaries, meta, single-fetch `.data` requests), built by its Vite
// plugin and served from a Worker as its Cloudflare template does.
// compat/bundle.mjs runs `react-router build` and resolves
// "virtual:server-build" to the server build.
import { createRequestHandler } from "react-router";
import * as build from "virtual:server-build";

const handler = createRequestHandler(build, "production");

export default {
  fetch(request) {
    return handler(request);
  },
};
