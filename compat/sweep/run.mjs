// The import sweep (issue 30): the npm packages of packages.txt, each
// installed from the registry, bundled as wrangler bundles a Worker with
// `nodejs_compat` (lib/wrangler.mjs) and imported by one Worker; all of them
// served by one `isolane dev` and one workerd. Prints how many load on each
// and every package where the two differ.
//
//   node compat/sweep/run.mjs [--only a,b] [--markdown <file>] [--date YYYY-MM-DD]
//
// Downloads every package (with its dependencies) into $ISOLANE_SWEEP_CACHE
// (default compat/sweep/.cache). The Isolane binary is $ISOLANE_BIN (default
// target/debug/isolane). Exits 1 when fewer packages load on Isolane than on
// workerd.
import { build } from "esbuild";
import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBuiltins, workerBundle } from "../lib/wrangler.mjs";
import { install } from "./install.mjs";
import { serveIsolane, serveWorkerd, freePorts } from "./servers.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = resolve(here, "../..");
const cache = resolve(process.env.ISOLANE_SWEEP_CACHE ?? join(here, ".cache"));
const isolaneBin = resolve(process.env.ISOLANE_BIN ?? join(root, "target/debug/isolane"));
const workerdBin = join(here, "../node_modules/@cloudflare/workerd-linux-64/bin/workerd");

function option(name) {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

/** The compatibility date both runtimes get (`--date`): by default one after
 * every Node.js module date workerd has, so the stub modules it opens by
 * date (node:child_process, node:tty, ... from 2026-03-17) count too. */
const COMPATIBILITY_DATE = option("--date") ?? "2026-11-01";

function packageList() {
  const names = readFileSync(join(here, "packages.txt"), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const only = option("--only");
  return only ? names.filter((name) => only.split(",").includes(name)) : names;
}

/** One ES module that imports the package, as a Worker's main module. */
async function bundle(pkg, out) {
  const contents = `import * as mod from ${JSON.stringify(pkg.name)};
export default { fetch() { return new Response("loaded " + Object.keys(mod).length); } };`;
  try {
    await build({
      stdin: { contents, resolveDir: cache, sourcefile: "worker.js" },
      outfile: out,
      ...workerBundle,
      define: { "process.env.NODE_ENV": '"production"' },
      logLevel: "silent",
      plugins: [nodeBuiltins()],
    });
    return null;
  } catch (error) {
    const first = error.errors?.[0];
    return first ? first.text : String(error.message ?? error).split("\n")[0];
  }
}

async function bundleAll(packages) {
  const dir = join(cache, "bundles");
  mkdirSync(dir, { recursive: true });
  let next = 0;
  const worker = async () => {
    while (next < packages.length) {
      const pkg = packages[next++];
      pkg.bundle = join(dir, `${pkg.id}.js`);
      pkg.bundleError = await bundle(pkg, pkg.bundle);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

function verdict(answer) {
  return answer.ok ? "loads" : answer.error;
}

function report(packages) {
  const bundled = packages.filter((pkg) => !pkg.installError && !pkg.bundleError);
  const count = (side) => bundled.filter((pkg) => pkg[side]?.ok).length;
  const lines = [];
  for (const pkg of packages) {
    if (pkg.installError) lines.push(`  ${pkg.name}: not installed (${pkg.installError})`);
    else if (pkg.bundleError) lines.push(`  ${pkg.name}: does not bundle (${pkg.bundleError})`);
    else if (pkg.workerd.ok !== pkg.isolane.ok) {
      lines.push(`  ${pkg.name}@${pkg.version}: workerd ${verdict(pkg.workerd)}; isolane ${verdict(pkg.isolane)}`);
    }
  }
  const summary = {
    packages: packages.length,
    bundled: bundled.length,
    workerd: count("workerd"),
    isolane: count("isolane"),
  };
  console.log(lines.join("\n"));
  console.log(
    `\n${summary.packages} packages, ${summary.bundled} bundled; load on workerd: ${summary.workerd}, on isolane: ${summary.isolane}`,
  );
  return summary;
}

function markdown(packages, summary) {
  const rows = packages.map((pkg) => {
    const cell = (side) => (pkg.installError || pkg.bundleError ? "–" : pkg[side].ok ? "loads" : `fails: ${pkg[side].error}`);
    const note = pkg.installError ? `not installed: ${pkg.installError}` : pkg.bundleError ? `does not bundle: ${pkg.bundleError}` : "";
    return `| ${pkg.name} | ${pkg.version ?? ""} | ${cell("workerd")} | ${cell("isolane")} | ${note} |`.replaceAll("\n", " ");
  });
  return [
    `${summary.packages} packages, ${summary.bundled} bundled; load on workerd: **${summary.workerd}**, on Isolane: **${summary.isolane}**.`,
    "",
    "| package | version | workerd | isolane | note |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
    "",
  ].join("\n");
}

async function main() {
  if (!existsSync(isolaneBin)) throw new Error(`${isolaneBin} is missing: build it (hack/cargo.sh build -p isolane)`);
  const packages = packageList().map((name, i) => ({ name, id: `p${i}` }));
  mkdirSync(cache, { recursive: true });
  await install(cache, packages);
  await bundleAll(packages);
  const served = packages.filter((pkg) => !pkg.installError && !pkg.bundleError);
  const ports = await freePorts(served.length + 1);
  console.error(`serving ${served.length} bundles on each runtime`);
  await serveWorkerd(workerdBin, cache, served, ports.slice(1), COMPATIBILITY_DATE);
  await serveIsolane(isolaneBin, cache, served, ports[0], COMPATIBILITY_DATE);
  const summary = report(packages);
  writeFileSync(join(cache, "results.json"), JSON.stringify({ summary, packages }, null, 2));
  const md = option("--markdown");
  if (md) writeFileSync(md, markdown(packages, summary));
  process.exitCode = summary.isolane >= summary.workerd ? 0 : 1;
}

await main();
