// Bundles every app in apps/ the way wrangler bundles a Worker: one ES module,
// esbuild, platform neutral with the workerd/worker/browser conditions, target
// es2022. Used by cli/tests/compat.rs: `node compat/bundle.mjs <out dir>`
// writes <out dir>/<app>.js for each apps/<app>.{js,ts,tsx}.
import { build } from "esbuild";
import { readdirSync } from "node:fs";
import { join, parse } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node bundle.mjs <out dir>");
  process.exit(64);
}
const apps = readdirSync(join(here, "apps")).filter((f) => /^[a-z0-9-]+\.(js|ts|tsx)$/.test(f));
await Promise.all(
  apps.map((file) =>
    build({
      entryPoints: [join(here, "apps", file)],
      outfile: join(out, `${parse(file).name}.js`),
      bundle: true,
      format: "esm",
      platform: "neutral",
      mainFields: ["browser", "module", "main"],
      conditions: ["workerd", "worker", "browser"],
      target: "es2022",
      jsx: "automatic",
      jsxImportSource: "hono/jsx",
      logLevel: "warning",
    }),
  ),
);
