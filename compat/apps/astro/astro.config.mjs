// Server output with Cloudflare's adapter, as `npm create astro` with
// `astro add cloudflare` makes it; no wrangler config of its own (the
// adapter generates the built Worker's, dist/server/wrangler.json).
import { defineConfig } from "astro/config";
import cloudflare from "@astrojs/cloudflare";

export default defineConfig({
  output: "server",
  adapter: cloudflare(),
});
