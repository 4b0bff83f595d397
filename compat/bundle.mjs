// Bundles every app in apps/ the way wrangler bundles a Worker: one ES module,
// esbuild, platform neutral with the workerd/worker/browser conditions, target
// es2022. Used by cli/tests/compat.rs: `node compat/bundle.mjs <out dir>`
// writes <out dir>/<app>.js for each apps/<app>.{js,ts,tsx}; names after the
// out dir bundle only those apps (cli/tests/dev_frameworks.rs). An app whose
// apps/<app>.json lists the `nodejs_compat` flag is bundled as wrangler
// bundles with it (see nodeBuiltins in lib/wrangler.mjs).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, parse, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "./lib/wrangler.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const out = process.argv[2];
// An option where the folder belongs (`--help`) is no folder to write into.
if (!out || out.startsWith("-")) {
  console.error("usage: node bundle.mjs <out dir> [app ...]");
  process.exit(64);
}
const only = process.argv.slice(3);
/** Whether the app `name` is to be bundled in this run. */
const wanted = (name) => only.length === 0 || only.includes(name);
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
    (d) => d.isDirectory() && wanted(d.name) && existsSync(join(here, "apps", d.name, "react-router.config.ts")),
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

/** Every file of a folder app's source, skipping its build output and
 * what `isolane dev` and `wrangler dev` write in its folder (their builds
 * and logs), which would make the next run rebuild it. */
function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => !/(^|\/)(\.next|\.open-next|\.isolane|\.wrangler|node_modules)\//.test(relative(dir, f)))
    .filter((f) => !f.endsWith(".log"))
    .sort();
}

/** A digest of a folder app's source and compat's lockfile: the build is
 * redone only when it changes. */
function sourceDigest(dir) {
  const hash = createHash("sha256").update(readFileSync(join(here, "package-lock.json")));
  for (const file of sourceFiles(dir)) hash.update(relative(dir, file)).update("\0").update(readFileSync(file));
  return hash.digest("hex");
}

/** apps/<name>/ with an open-next.config.ts: a Next.js app, built in place
 * by `opennextjs-cloudflare build` (`next build`, then OpenNext's Worker in
 * .open-next/; about a minute on two cores, redone only when the source or
 * the lockfile changed), then .open-next/worker.js bundled as wrangler
 * bundles it, with unenv's polyfills. */
function nextApps() {
  const dirs = readdirSync(join(here, "apps"), { withFileTypes: true }).filter(
    (d) => d.isDirectory() && wanted(d.name) && existsSync(join(here, "apps", d.name, "open-next.config.ts")),
  );
  return dirs.map((d) => {
    const app = join(here, "apps", d.name);
    const stamp = join(app, ".open-next/.isolane-source-sha256");
    const digest = sourceDigest(app);
    if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== digest) {
      const cli = join(here, "node_modules/@opennextjs/cloudflare/dist/cli/index.js");
      try {
        execFileSync(process.execPath, [cli, "build"], {
          cwd: app,
          env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", CI: "1" },
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (e) {
        throw new Error(`opennextjs-cloudflare build in ${app} failed:\n${e.stdout}\n${e.stderr}`);
      }
      writeFileSync(stamp, digest);
    }
    return build({
      entryPoints: [join(app, ".open-next/worker.js")],
      outfile: join(out, `${d.name}.js`),
      ...workerBundle,
      external: ["cloudflare:*"],
      define: { "process.env.NODE_ENV": '"production"' },
      logLevel: "warning",
      plugins: [nodeBuiltins({ unenv: true })],
    });
  });
}

const apps = readdirSync(join(here, "apps")).filter((f) => /^[a-z0-9-]+\.(js|ts|tsx)$/.test(f) && wanted(parse(f).name));
await Promise.all([
  ...reactRouterApps(),
  ...nextApps(),
  ...apps.map((file) =>
    build({
      entryPoints: [join(here, "apps", file)],
      outfile: join(out, `${parse(file).name}.js`),
      ...workerBundle,
      jsx: "automatic",
      jsxImportSource: "hono/jsx",
      // The runtime's own modules, as wrangler leaves them.
      external: ["cloudflare:*"],
      logLevel: "warning",
      plugins: nodeCompat(parse(file).name) ? [nodeBuiltins()] : [],
    }),
  ),
]);
