// Installs the sweep's packages (latest versions, no install scripts: they
// would build native parts or download binaries, which a Worker cannot use
// anyway) into the cache folder, in chunks; a chunk that fails is retried one
// package at a time, so one broken package costs only itself.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const CHUNK = 25;
const FLAGS = ["--ignore-scripts", "--legacy-peer-deps", "--no-audit", "--no-fund", "--loglevel=error", "--save"];

function npmInstall(cache, specs) {
  try {
    execFileSync("npm", ["install", ...FLAGS, ...specs], { cwd: cache, stdio: ["ignore", "ignore", "pipe"], timeout: 900_000 });
    return null;
  } catch (error) {
    const lines = String(error.stderr ?? error.message).split("\n").filter((l) => /ERR!/.test(l));
    return (lines.find((l) => /code|404|notarget|ETARGET/.test(l)) ?? lines[0] ?? "npm install failed").replace(/npm (ERR|error)!?\s*/g, "");
  }
}

function installedVersion(cache, name) {
  const manifest = join(cache, "node_modules", name, "package.json");
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")).version : undefined;
}

export async function install(cache, packages) {
  const manifest = join(cache, "package.json");
  if (!existsSync(manifest)) writeFileSync(manifest, JSON.stringify({ name: "isolane-sweep", private: true }, null, 2));
  const missing = packages.filter((pkg) => !installedVersion(cache, pkg.name));
  for (let at = 0; at < missing.length; at += CHUNK) {
    const chunk = missing.slice(at, at + CHUNK);
    console.error(`installing ${at + chunk.length}/${missing.length}`);
    if (npmInstall(cache, chunk.map((pkg) => `${pkg.name}@latest`)) === null) continue;
    for (const pkg of chunk) {
      const error = npmInstall(cache, [`${pkg.name}@latest`]);
      if (error !== null) pkg.installError = error.trim().slice(0, 120);
    }
  }
  for (const pkg of packages) {
    pkg.version = installedVersion(cache, pkg.name);
    if (!pkg.version && !pkg.installError) pkg.installError = "not in node_modules after npm install";
  }
}
