// The npm ports of Node's modules that ship Node's tests (suites.json),
// each test file bundled as one Worker whose `require('../')` is the
// runtime's built-in and whose tape/mocha is harness.cjs.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "../lib/wrangler.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { suites } = JSON.parse(readFileSync(join(here, "suites.json"), "utf8"));

function install(cache) {
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

/** The Worker: runs `testFile` with `runner` (a module whose `run(load)` resolves when the file passed). */
export function entry(runner, testFile) {
  return `import runner from ${JSON.stringify(runner)};
export default {
  async fetch() {
    try {
      const n = await runner.run(() => import(${JSON.stringify(testFile)}));
      return new Response("loaded, passed (" + n + " checks)");
    } catch (error) {
      const where = String(error && error.stack).split("\\n").find((line) => /^\\s+at /.test(line)) ?? "";
      const what = (error && error.name ? error.name + ": " : "") + String(error && error.message || error);
      return new Response((what.replace(/\\s+/g, " ").slice(0, 300) + " " + where.trim()), { status: 500 });
    }
  },
};`;
}

/** Bundles `testFile` as wrangler would, with `plugins` before the built-ins. */
export async function bundle(testFile, runner, out, plugins) {
  await build({
    stdin: { contents: entry(runner, testFile), resolveDir: dirname(testFile), sourcefile: "worker.js" },
    outfile: out,
    ...workerBundle,
    logLevel: "silent",
    plugins: [...plugins, nodeBuiltins()],
  });
}

/** Downloads the packages into `cache` and bundles each test file; the files to run. */
export async function npmFiles(cache) {
  install(cache);
  const files = [];
  for (const suite of suites) {
    const packageDir = join(cache, "node_modules", suite.package.replace(/@[^@/]+$/, ""));
    const dir = join(packageDir, suite.dir);
    const names = suite.files ?? readdirSync(dir).filter((f) => f.endsWith(".js") && !(suite.skip ?? []).includes(f));
    for (const name of names.sort()) {
      const file = { module: suite.module, name: `${suite.module}: ${suite.dir}/${name}`, id: `p${files.length}` };
      file.bundle = join(cache, "bundles", `${file.id}.js`);
      await bundle(join(dir, name), join(here, "harness.cjs"), file.bundle, [redirect(suite, packageDir)]);
      files.push(file);
    }
  }
  return files;
}
