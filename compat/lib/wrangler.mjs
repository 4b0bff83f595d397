// How wrangler bundles a Worker with `nodejs_compat` (its esbuild plugin,
// packages/wrangler/src/deployment-bundle/esbuild-plugins in
// cloudflare/workers-sdk): Node's built-ins, by `node:` or bare name, stay
// imports the runtime resolves, and a CommonJS `require()` of one becomes a
// small module that imports it, so the bundle needs no global `require`
// (neither workerd nor Isolane has one in an ES-module Worker). wrangler
// also aliases the modules workerd lacks to unenv's polyfills; this does
// not, so those fail to load on both runtimes alike.
import { builtinModules } from "node:module";

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
const escape = (name) => name.replace(/[/\\^$*+?.()|[\]{}]/g, "\\$&");
const filter = new RegExp(`^(node:.+|${builtinModules.map(escape).join("|")})$`);

/** The esbuild plugin. */
export function nodeBuiltins() {
  return {
    name: "nodejs_compat",
    setup(build) {
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
