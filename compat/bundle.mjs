// Bundles every app in apps/ the way wrangler bundles a Worker: one ES module,
// esbuild, platform neutral with the workerd/worker/browser conditions, target
// es2022. Used by cli/tests/compat.rs: `node compat/bundle.mjs <out dir>`
// writes <out dir>/<app>.js for each apps/<app>.{js,ts,tsx}. An app whose
// apps/<app>.json lists the `nodejs_compat` flag is bundled as wrangler
// bundles with it (see nodeBuiltins in lib/wrangler.mjs).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, parse } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "./lib/wrangler.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node bundle.mjs <out dir>");
  process.exit(64);
}
/** Whether apps/<name>.json asks for Node.js compatibility. */
function nodeCompat(name) {
  const manifest = join(here, "apps", `${name}.json`);
  if (!existsSync(manifest)) return false;
  const flags = JSON.parse(readFileSync(manifest, "utf8")).compatibilityFlags ?? [];
  return flags.includes("nodejs_compat");
}

/** apps/<name>/ with a react-router.config.ts: `react-router build` into
 * <out>/<name>-build, then its worker.js bundled with "virtual:server-build"
 * as that server build. */
function reactRouterApps() {
  const dirs = readdirSync(join(here, "apps"), { withFileTypes: true }).filter(
    (d) => d.isDirectory() && existsSync(join(here, "apps", d.name, "react-router.config.ts")),
  );
  return dirs.map((d) => {
    const app = join(here, "apps", d.name);
    const buildDir = join(out, `${d.name}-build`);
    execFileSync(process.execPath, [join(here, "node_modules/@react-router/dev/bin.js"), "build", app], {
      env: { ...process.env, RR_BUILD_DIR: buildDir, NODE_ENV: "production" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    const serverBuild = {
      name: "server-build",
      setup(b) {
        b.onResolve({ filter: /^virtual:server-build$/ }, () => ({ path: join(buildDir, "server/index.js") }));
      },
    };
    return build({
      entryPoints: [join(app, "worker.js")],
      outfile: join(out, `${d.name}.js`),
      ...workerBundle,
      define: { "process.env.NODE_ENV": '"production"' },
      logLevel: "warning",
      nodePaths: [join(here, "node_modules")],
      plugins: [serverBuild, nodeBuiltins()],
    });
  });
}

const apps = readdirSync(join(here, "apps")).filter((f) => /^[a-z0-9-]+\.(js|ts|tsx)$/.test(f));
await Promise.all([
  ...reactRouterApps(),
  ...apps.map((file) =>
    build({
      entryPoints: [join(here, "apps", file)],
      outfile: join(out, `${parse(file).name}.js`),
      ...workerBundle,
      jsx: "automatic",
      jsxImportSource: "hono/jsx",
      logLevel: "warning",
      plugins: nodeCompat(parse(file).name) ? [nodeBuiltins()] : [],
    }),
  ),
]);
