// How wrangler bundles a Worker with `nodejs_compat` (its esbuild plugin,
// packages/wrangler/src/deployment-bundle/esbuild-plugins in
// cloudflare/workers-sdk): Node's built-ins, by `node:` or bare name, stay
// imports the runtime resolves, and a CommonJS `require()` of one becomes a
// small module that imports it, so the bundle needs no global `require`
// (neither workerd nor Isolane has one in an ES-module Worker). wrangler
// also aliases the modules workerd lacks (`node:inspector`, `tty`, ...) to
// unenv's polyfills, chosen by @cloudflare/unenv-preset for the
// compatibility date and flags. `nodeBuiltins({ unenv: true })` does that
// too (the `nextjs` app needs it); without it, those modules fail to load on
// both runtimes alike. Not done: wrangler's injected `process` global (both
// runtimes have `process` with `nodejs_compat`).
import { getCloudflarePreset } from "@cloudflare/unenv-preset";
import { builtinModules, createRequire } from "node:module";
import { defineEnv } from "unenv";

const require = createRequire(import.meta.url);

/** The date cli/tests/compat/servers.rs gives workerd and Isolane. */
export const COMPATIBILITY_DATE = "2026-11-01";

/** esbuild's options as wrangler sets them for a Worker: one ES module,
 * platform neutral, the workerd/worker/browser conditions, target es2022. */
export const workerBundle = {
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["browser", "module", "main"],
  conditions: ["workerd", "worker", "browser"],
  target: "es2022",
};

const NAMESPACE = "node-built-in-modules";
const POLYFILL_NAMESPACE = "unenv-polyfill";
const here = new URL(".", import.meta.url).pathname;
const escape = (name) => name.replace(/[/\\^$*+?.()|[\]{}]/g, "\\$&");
const filter = new RegExp(`^(node:.+|${builtinModules.map(escape).join("|")})$`);

/** The built-ins unenv's Cloudflare preset replaces by a polyfill (its
 * alias is a file, not `node:…`), as absolute paths. */
function unenvPolyfills() {
  const preset = getCloudflarePreset({ compatibilityDate: COMPATIBILITY_DATE, compatibilityFlags: ["nodejs_compat"] });
  const { alias } = defineEnv({ presets: [preset], npmShims: true }).env;
  const polyfills = new Map();
  for (const [name, target] of Object.entries(alias)) {
    if (filter.test(name) && /^(unenv|@cloudflare\/unenv-preset)\//.test(target)) {
      polyfills.set(name, require.resolve(target));
    }
  }
  return polyfills;
}

/** `require()` of a polyfill: its ES module as a CommonJS value. The path
 * has no `.mjs`, so esbuild treats this module as CommonJS. */
function polyfillRequired(path) {
  return [
    `const esm = require(${JSON.stringify(path)});`,
    `module.exports = Object.assign("default" in esm ? esm.default : {}, esm);`,
  ].join("\n");
}

/** The esbuild plugin; `unenv: true` adds wrangler's polyfills. */
export function nodeBuiltins({ unenv = false } = {}) {
  const polyfills = unenv ? unenvPolyfills() : new Map();
  return {
    name: "nodejs_compat",
    setup(build) {
      build.onResolve({ filter }, (args) => {
        const polyfill = polyfills.get(args.path);
        if (!polyfill) return undefined;
        return args.kind === "require-call"
          ? { path: args.path, namespace: POLYFILL_NAMESPACE }
          : { path: polyfill };
      });
      build.onLoad({ filter: /.*/, namespace: POLYFILL_NAMESPACE }, (args) => ({
        contents: polyfillRequired(polyfills.get(args.path)),
        loader: "js",
        resolveDir: here,
      }));
      build.onResolve({ filter }, (args) =>
        args.kind === "require-call"
          ? { path: args.path, namespace: NAMESPACE }
          : { path: args.path, external: true },
      );
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: `import builtin from ${JSON.stringify(args.path)}; module.exports = builtin;`,
        loader: "js",
      }));
    },
  };
}
