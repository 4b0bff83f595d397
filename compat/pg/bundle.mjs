// Bundles worker.js as wrangler bundles a Worker with nodejs_compat
// (lib/wrangler.mjs), `cloudflare:*` left to the runtime:
// `node compat/pg/bundle.mjs <out file>`.
import { build } from "esbuild";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "../lib/wrangler.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node compat/pg/bundle.mjs <out file>");
  process.exit(64);
}
await build({
  entryPoints: [join(here, "worker.js")],
  outfile: out,
  ...workerBundle,
  external: ["cloudflare:*"],
  logLevel: "warning",
  plugins: [nodeBuiltins()],
});
