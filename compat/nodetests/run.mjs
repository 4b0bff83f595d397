// Node's own tests as Workers, on one `isolane dev` and one workerd, the
// way workerd runs them: each test file is one Worker, bundled as wrangler
// bundles it (compat/lib/wrangler.mjs), answering whether the file passed.
//
//   node compat/nodetests/run.mjs [--node-src DIR] [--modules buffer,path,...]
//
// With --node-src (default: $ISOLANE_NODE_SRC), the test/parallel files of a
// nodejs/node checkout at DIR (nodesrc.mjs, over common.cjs); without it, the
// npm ports of Node's modules that ship Node's tests (npm.mjs, suites.json),
// downloaded into $ISOLANE_NODETESTS_CACHE (default compat/nodetests/.cache).
// Prints each file's result on both runtimes and a table per module. Exits 1
// when fewer files pass on Isolane than on workerd in some module (the few
// that Isolane's limits fail by design, BY_DESIGN, aside).
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { COMPATIBILITY_DATE } from "../lib/wrangler.mjs";
import { freePorts, serveIsolane, serveWorkerd } from "../sweep/servers.mjs";
import { MODULES, nodeSrcFiles } from "./nodesrc.mjs";
import { npmFiles } from "./npm.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = resolve(here, "../..");
const cache = resolve(process.env.ISOLANE_NODETESTS_CACHE ?? join(here, ".cache"));
const isolaneBin = resolve(process.env.ISOLANE_BIN ?? join(root, "target/debug/isolane"));
const workerdBin = join(here, "../node_modules/@cloudflare/workerd-linux-64/bin/workerd");

function options() {
  const { values } = parseArgs({
    options: { "node-src": { type: "string" }, modules: { type: "string" }, only: { type: "string" } },
  });
  const src = values["node-src"] ?? process.env.ISOLANE_NODE_SRC;
  const modules = values.modules ? values.modules.split(",") : MODULES.map(([m]) => m);
  return { src: src ? resolve(src) : undefined, modules, only: values.only ? new RegExp(values.only) : undefined };
}

// Files that pass on workerd and fail on Isolane by Isolane's own limits
// (docs/nodejs.md): they count as failing in the table, and the exit code
// does not hold them against Isolane.
const BY_DESIGN = new Map([
  ["test-buffer-constants.js", "a 512 MiB string, past the Worker's 128 MiB memory limit"],
  ["test-buffer-sharedarraybuffer.js", "a Worker has no SharedArrayBuffer"],
  ["test-string-decoder-fuzz.js", "loops until Date.now() moves, which it does only between turns"],
]);

function table(files) {
  const modules = [...new Set(files.map((f) => f.module))].sort();
  const rows = modules.map((m) => [m, files.filter((f) => f.module === m)]).concat([["all", files]]);
  const count = (list, side) => list.filter((f) => f[side].ok).length;
  console.log("\n| module | files | pass on workerd | pass on Isolane |\n| --- | ---: | ---: | ---: |");
  for (const [m, list] of rows) console.log(`| ${m} | ${list.length} | ${count(list, "workerd")} | ${count(list, "isolane")} |`);
  const designed = (f) => f.workerd.ok && !f.isolane.ok && BY_DESIGN.has(f.name.split(": ")[1]);
  for (const f of files.filter(designed)) console.log(`by design: ${f.name} (${BY_DESIGN.get(f.name.split(": ")[1])})`);
  const held = (list) => count(list.filter((f) => !designed(f)), "workerd");
  return rows.filter(([, list]) => count(list, "isolane") < held(list)).map(([m]) => m);
}

async function main() {
  const { src, modules, only } = options();
  mkdirSync(join(cache, "bundles"), { recursive: true });
  let files = src ? await nodeSrcFiles(src, cache, modules) : await npmFiles(cache);
  if (only) files = files.filter((f) => only.test(f.name));
  const runnable = files.filter((f) => !f.skip);
  for (const f of files.filter((f) => f.skip)) f.workerd = f.isolane = { ok: false, error: f.skip };
  const ports = await freePorts(runnable.length + 1);
  await serveWorkerd(workerdBin, cache, runnable, ports.slice(1), COMPATIBILITY_DATE);
  await serveIsolane(isolaneBin, cache, runnable, ports[0], COMPATIBILITY_DATE);
  const mark = (answer) => (answer.ok ? "pass" : `FAIL ${answer.error}`);
  for (const file of files) {
    if (file.skip) console.log(`${file.name}\n  both: FAIL ${file.skip}`);
    else console.log(`${file.name}\n  workerd: ${mark(file.workerd)}\n  isolane: ${mark(file.isolane)}`);
  }
  const behind = table(files);
  if (behind.length) console.log(`\nIsolane passes fewer files than workerd in: ${behind.join(", ")}`);
  process.exitCode = behind.length ? 1 : 0;
}

await main();
