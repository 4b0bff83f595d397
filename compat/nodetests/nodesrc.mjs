// Node's own test files (test/parallel/test-*.js of a nodejs/node checkout
// at `src`), each bundled as one Worker the way wrangler bundles one, with
// `require('../common')` pointed at common.cjs, our own stand-in for Node's
// test/common. Files that need what a Worker has not (Node's internals,
// child processes, threads, vm, the fixtures on disk) are not run: they count
// as failing on both runtimes, with the reason.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundle } from "./npm.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const common = join(here, "common.cjs");

/** The modules whose tests run, by the test file name's prefix. */
export const MODULES = [
  ["buffer", /^test-buffer-/],
  ["string_decoder", /^test-string-decoder/],
  ["events", /^test-(event-emitter-|events-)/],
  ["path", /^test-path/],
  ["querystring", /^test-querystring/],
  ["url", /^test-url/],
  ["util", /^test-util/],
];

const NEEDS = [
  [/--expose[-_]internals|require\(['"]internal\/|internalBinding|process\.binding/, "Node internals (--expose-internals)"],
  [/require\(['"](node:)?child_process['"]\)|common\/child_process/, "child_process"],
  [/require\(['"](node:)?worker_threads['"]\)/, "worker_threads"],
  [/require\(['"](node:)?vm['"]\)/, "vm"],
  [/common\/(fixtures|tmpdir)|require\(['"](node:)?fs['"]\)/, "fs fixtures"],
  [/--expose[-_]gc|global(This)?\.gc\(/, "--expose-gc"],
  [/require\(['"](node:)?(inspector|repl|net|http|tls|cluster|dgram)['"]\)/, "a Node-only module"],
];

/** Why `source` cannot run as a Worker, or undefined. */
export function unrunnable(source) {
  const reasons = NEEDS.filter(([re]) => re.test(source)).map(([, why]) => why);
  const helper = /require\(['"](?:\.\.\/)+common\/([\w-]+)/.exec(source);
  if (helper && !/^index(\.js)?$/.test(helper[1])) reasons.push(`Node's common/${helper[1]}`);
  return reasons.length ? `needs ${[...new Set(reasons)].join(", ")}` : undefined;
}

function commonShim() {
  return {
    name: "node-common",
    setup(b) {
      b.onResolve({ filter: /^(\.\.\/)+common(\/index(\.js)?)?$/ }, () => ({ path: common }));
    },
  };
}

/** The test files of `modules` under `src`, bundled into `cache`; those that cannot run carry `skip`. */
export async function nodeSrcFiles(src, cache, modules) {
  const dir = join(src, "test", "parallel");
  if (!existsSync(dir)) throw new Error(`${dir} does not exist: --node-src wants a nodejs/node checkout`);
  const files = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".js")).sort()) {
    const module = MODULES.find(([m, re]) => modules.includes(m) && re.test(name))?.[0];
    if (!module) continue;
    const file = { module, name: `${module}: ${name}`, id: `p${files.length}` };
    file.skip = unrunnable(readFileSync(join(dir, name), "utf8"));
    if (!file.skip) {
      file.bundle = join(cache, "bundles", `${file.id}.js`);
      try {
        await bundle(join(dir, name), common, file.bundle, [commonShim()]);
      } catch (error) {
        file.skip = `does not bundle: ${String(error.message).split("\n").slice(0, 2).join(" ").slice(0, 140)}`;
      }
    }
    files.push(file);
  }
  return files;
}
