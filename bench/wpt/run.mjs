// Runs the WPT `.any.js` files of issue 13 on `isolane dev` and on workerd
// and writes the comparison (bench/wpt/results.md). Driven by run.sh, which
// documents the options; `node run.mjs --help` lists them.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { workerScript } from "./lib/bundle.mjs";
import { collect } from "./lib/manifest.mjs";
import { count, markdown } from "./lib/report.mjs";
import { runOnce, staticServer } from "./lib/servers.mjs";

/** In-Worker deadline for a file (testharness has no timeouts in a shell). */
const DEADLINE_MS = { normal: 15_000, long: 45_000 };
/** Past the in-Worker deadline, the process is killed and the file fails. */
const HARD_MARGIN_MS = 20_000;

const { values: opts } = parseArgs({
  options: {
    wpt: { type: "string", default: process.env.WPT_DIR },
    "wpt-commit": { type: "string", default: process.env.WPT_COMMIT },
    isolane: { type: "string", default: process.env.ISOLANE_BIN },
    workerd: { type: "string", default: process.env.WORKERD_BIN },
    results: { type: "string", default: process.env.WPT_RESULTS },
    out: { type: "string" },
    filter: { type: "string" },
    jobs: { type: "string", default: "1" },
    "report-only": { type: "boolean", default: false },
    baseline: { type: "string", default: process.env.WPT_BASELINE },
    help: { type: "boolean", default: false },
  },
});
if (opts.help || !opts.wpt || !opts.results) {
  console.error("usage: node run.mjs --wpt <checkout> --results <dir> [--isolane bin] [--workerd bin] [--out results.md] [--filter regex] [--jobs n] [--baseline <earlier results dir>] [--report-only]");
  process.exit(opts.help ? 0 : 64);
}
const root = resolve(opts.wpt);
for (const must of ["resources/testharness.js"]) {
  if (!existsSync(join(root, must))) {
    console.error(`wpt: ${root} has no ${must}: not a WPT checkout`);
    process.exit(64);
  }
}
mkdirSync(opts.results, { recursive: true });

const all = collect(root);
const filter = opts.filter ? new RegExp(opts.filter) : null;
const runs = all.filter((r) => !r.skip && (!filter || filter.test(r.id)));
const skipped = all.filter((r) => r.skip);
const outcomesFile = (name) => join(opts.results, `${name}.json`);
const load = (name) => (existsSync(outcomesFile(name)) ? JSON.parse(readFileSync(outcomesFile(name), "utf8")) : {});
const outcomes = { isolane: load("isolane"), workerd: load("workerd") };

if (!opts["report-only"]) {
  const origin = await staticServer(root);
  const bins = { isolane: opts.isolane, workerd: opts.workerd };
  let next = 0;
  const worker = async () => {
    while (next < runs.length) {
      const n = next++;
      const run = runs[n];
      const deadline = run.long ? DEADLINE_MS.long : DEADLINE_MS.normal;
      const script = workerScript(root, run, origin, deadline);
      const dir = join(opts.results, "runs", run.id.replace(/[^A-Za-z0-9._-]+/g, "_"));
      const started = Date.now();
      const [i, w] = await Promise.all(
        ["isolane", "workerd"].map((name) => runOnce(name, bins[name], join(dir, name), script, deadline + HARD_MARGIN_MS)),
      );
      // Keep the generated scripts and logs only where something went wrong.
      const clean = (o) => !o.failure && o.result.harness?.status === "OK";
      if (clean(i) && clean(w) && !process.env.WPT_KEEP) rmSync(dir, { recursive: true, force: true });
      outcomes.isolane[run.id] = i;
      outcomes.workerd[run.id] = w;
      const passed = (o) => (o.failure ? `failed (${o.failure.slice(0, 60)})` : `${o.result.tests.filter((t) => t.status === "PASS").length}/${o.result.tests.length}`);
      console.error(`[${n + 1}/${runs.length}] ${run.id}: isolane ${passed(i)}, workerd ${passed(w)} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      writeFileSync(outcomesFile("isolane"), JSON.stringify(outcomes.isolane));
      writeFileSync(outcomesFile("workerd"), JSON.stringify(outcomes.workerd));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(opts.jobs) || 1) }, worker));
}

if (opts.out) {
  const rows = all
    .filter((r) => !r.skip && (outcomes.isolane[r.id] || outcomes.workerd[r.id]))
    .map((r) => count(r, { isolane: outcomes.isolane[r.id], workerd: outcomes.workerd[r.id] }));
  const info = {
    wptCommit: opts["wpt-commit"] ?? gitHead(root) ?? "unknown",
    isolane: process.env.ISOLANE_LABEL ?? opts.isolane ?? "?",
    workerd: process.env.WORKERD_LABEL ?? version(opts.workerd) ?? "?",
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
  };
  let before = null;
  if (opts.baseline) {
    // An earlier run's results folder: the page says what changed since.
    const old = (name) => JSON.parse(readFileSync(join(opts.baseline, `${name}.json`), "utf8"));
    const base = { isolane: old("isolane"), workerd: old("workerd") };
    before = all
      .filter((r) => !r.skip && (base.isolane[r.id] || base.workerd[r.id]))
      .map((r) => count(r, { isolane: base.isolane[r.id], workerd: base.workerd[r.id] }));
  }
  writeFileSync(opts.out, markdown(info, rows, skipped, before));
  console.error(`wpt: wrote ${opts.out}`);
}

function gitHead(dir) {
  try {
    return execFileSync("git", ["-C", dir, "rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

function version(bin) {
  try {
    return bin ? execFileSync(bin, ["--version"], { encoding: "utf8" }).trim() : null;
  } catch {
    return null;
  }
}
