// Node's own tests of events, path, querystring and url, as npm packages
// ship them (suites.json; Node's test/parallel files are not on npm, see
// docs/nodejs.md), each test file bundled as one Worker whose
// `require('../')` is the runtime's built-in, served by one `isolane dev`
// and one workerd. Prints the files that pass on each.
//
//   node compat/nodetests/run.mjs
//
// Downloads the packages into $ISOLANE_NODETESTS_CACHE (default
// compat/nodetests/.cache). Exits 1 when fewer files pass on Isolane.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "../lib/wrangler.mjs";
import { freePorts, serveIsolane, serveWorkerd } from "../sweep/servers.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = resolve(here, "../..");
const cache = resolve(process.env.ISOLANE_NODETESTS_CACHE ?? join(here, ".cache"));
const isolaneBin = resolve(process.env.ISOLANE_BIN ?? join(root, "target/debug/isolane"));
const workerdBin = join(here, "../node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const { suites } = JSON.parse(readFileSync(join(here, "suites.json"), "utf8"));

function install() {
  const specs = suites.flatMap((suite) => [suite.package, ...(suite.deps ?? [])]);
  mkdirSync(cache, { recursive: true });
  if (!existsSync(join(cache, "package.json"))) writeFileSync(join(cache, "package.json"), '{"private":true}');
  execFileSync("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", ...specs], { cwd: cache, stdio: "inherit" });
}

/** Points the package's own module (`..`, `../`, `../index.js`) at the built-in, and tape/mocha at the harness. */
function redirect(suite, packageDir) {
  const harness = join(here, "harness.cjs");
  return {
    name: "node-tests",
    setup(b) {
      b.onResolve({ filter: /^\.\.\/?(index(\.js)?)?$/ }, (args) =>
        resolve(args.resolveDir, args.path.replace(/\/?index(\.js)?$/, "")) === packageDir
          ? { path: suite.module, namespace: "node-built-in-modules" }
          : undefined,
      );
      b.onResolve({ filter: /^(tape|mocha)$/ }, (args) => ({ path: harness, suffix: args.path === "mocha" ? "?mocha" : "" }));
      b.onLoad({ filter: /harness\.cjs$/ }, (args) =>
        args.suffix === "?mocha" ? { contents: `module.exports = require(${JSON.stringify(harness)}).mocha;`, resolveDir: here, loader: "js" } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "node-built-in-modules" }, (args) => ({
        contents: `import builtin from ${JSON.stringify(args.path)}; module.exports = builtin;`,
        loader: "js",
      }));
    },
  };
}

async function bundle(suite, file, out) {
  const packageDir = join(cache, "node_modules", suite.package.replace(/@[^@/]+$/, ""));
  const testFile = join(packageDir, suite.dir, file);
  const contents = `import harness from ${JSON.stringify(join(here, "harness.cjs"))};
export default {
  async fetch() {
    try {
      const n = await harness.run(() => import(${JSON.stringify(testFile)}));
      return new Response("loaded, passed (" + n + " registered tests)");
    } catch (error) {
      return new Response(String(error && error.stack || error).split("\\n").slice(0, 2).join(" "), { status: 500 });
    }
  },
};`;
  await build({
    stdin: { contents, resolveDir: dirname(testFile), sourcefile: "worker.js" },
    outfile: out,
    ...workerBundle,
    logLevel: "error",
    plugins: [redirect(suite, packageDir), nodeBuiltins()],
  });
}

async function main() {
  install();
  const files = [];
  mkdirSync(join(cache, "bundles"), { recursive: true });
  for (const suite of suites) {
    const dir = join(cache, "node_modules", suite.package.replace(/@[^@/]+$/, ""), suite.dir);
    const names = suite.files ?? readdirSync(dir).filter((f) => f.endsWith(".js") && !(suite.skip ?? []).includes(f));
    for (const name of names.sort()) {
      const pkg = { name: `${suite.module}: ${suite.dir}/${name}`, id: `p${files.length}` };
      pkg.bundle = join(cache, "bundles", `${pkg.id}.js`);
      await bundle(suite, name, pkg.bundle);
      files.push(pkg);
    }
  }
  const ports = await freePorts(files.length + 1);
  await serveWorkerd(workerdBin, cache, files, ports.slice(1), "2025-11-01");
  await serveIsolane(isolaneBin, cache, files, ports[0], "2025-11-01");
  const mark = (answer) => (answer.ok ? "pass" : `FAIL ${answer.error}`);
  for (const file of files) console.log(`${file.name}\n  workerd: ${mark(file.workerd)}\n  isolane: ${mark(file.isolane)}`);
  const count = (side) => files.filter((f) => f[side].ok).length;
  console.log(`\n${files.length} test files; pass on workerd: ${count("workerd")}, on isolane: ${count("isolane")}`);
  process.exitCode = count("isolane") >= count("workerd") ? 0 : 1;
}

await main();
