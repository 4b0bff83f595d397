// Which WPT `.any.js` files the comparison runs, read from a local WPT
// checkout: each file's `// META:` lines (global, script, timeout, title,
// variant) and, for the files it cannot run in a Worker, the reason.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, posix, relative } from "node:path";

/** The WPT directories of issue 13, in report order. */
export const DIRS = ["url", "encoding", "fetch/api", "streams", "compression", "FileAPI", "dom"];

/** `// META: global=` values that mean "runs in some kind of worker or shell". */
const WORKER_GLOBALS = new Set(["worker", "dedicatedworker", "sharedworker", "serviceworker", "jsshell"]);

/** Paths wptserve serves from elsewhere in the checkout (its route aliases). */
const ALIASES = { "resources/WebIDLParser.js": "resources/webidl2/lib/webidl2.js" };

/** Test-file text that needs something a Worker cannot have, with the reason. */
const IMPOSSIBLE = [
  [/\bXMLHttpRequest\b/, "uses XMLHttpRequest"],
  [/navigator\.serviceWorker|\bServiceWorkerRegistration\b/, "needs service worker registration"],
  [/new (Shared)?Worker\(/, "starts a dedicated or shared worker"],
];
/** Test-file text that needs a document, unless the file guards it. */
const DOCUMENT = /\bdocument\.|\biframe\b/;
const WINDOW_GUARD = /GLOBAL\.isWindow\(\)|(self|globalThis)\.document\b|["']document["'] in (self|globalThis)/;

/** Text that needs the WPT server (its Python handlers or `.sub` substitution). */
const NEEDS_SERVER = [
  [/\.py\b/, "needs the WPT server (a .py handler)"],
  [/get-host-info\.sub\.js/, "needs the WPT server (get-host-info.sub.js, other origins)"],
  [/\.sub\.(js|html|json|txt)\b/, "needs the WPT server (.sub substitution)"],
];

/**
 * Every `.any.js` file under the DIRS of `root`, as runs: one per variant.
 * Each run: { id, file, dir, variant, scripts: [paths in the checkout], title,
 * long, skip: reason | null }.
 */
export function collect(root) {
  const runs = [];
  for (const dir of DIRS) {
    for (const file of walk(join(root, dir)).filter((f) => f.endsWith(".any.js")).sort()) {
      const rel = relative(root, file).split("\\").join("/");
      runs.push(...plan(root, rel, dir));
    }
  }
  return runs;
}

function walk(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path));
    else out.push(path);
  }
  return out;
}

/** The `// META: key=value` lines at the top of a test file. */
export function parseMeta(source) {
  const meta = [];
  for (const line of source.split("\n")) {
    const m = /^\/\/\s*META:\s*([a-z_]+)=(.*)$/.exec(line.trim());
    if (m) meta.push([m[1], m[2].trim()]);
    else if (line.trim() !== "" && !line.trim().startsWith("//")) break;
  }
  return meta;
}

function plan(root, rel, dir) {
  const source = readFileSync(join(root, rel), "utf8");
  const meta = parseMeta(source);
  const values = (key) => meta.filter(([k]) => k === key).map(([, v]) => v);
  const globals = (values("global")[0] ?? "window,dedicatedworker").split(",").map((g) => g.trim());
  const scripts = values("script")
    .map((s) => posix.normalize(s.startsWith("/") ? s.slice(1) : posix.join(posix.dirname(rel), s)))
    .map((s) => ALIASES[s] ?? s);
  const variants = values("variant");
  const base = {
    file: rel,
    dir,
    scripts,
    title: values("title")[0] ?? null,
    long: values("timeout").includes("long"),
    skip: skipReason(root, rel, source, globals, scripts),
  };
  if (variants.length === 0) return [{ ...base, id: rel, variant: "" }];
  return variants.map((variant) => ({ ...base, id: rel + variant, variant }));
}

function skipReason(root, rel, source, globals, scripts) {
  if (!globals.some((g) => WORKER_GLOBALS.has(g))) return `global=${globals.join(",")} (no worker scope)`;
  for (const script of scripts) {
    if (!existsSync(join(root, script))) return `META script ${script} is not in the checkout`;
  }
  for (const [re, reason] of NEEDS_SERVER) {
    if (re.test(source) || scripts.some((s) => re.test(s))) return reason;
  }
  // Code only (comments say "XMLHttpRequest" too): the file and its scripts.
  const uncommented = (text) => text.replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, "");
  const code = [source, ...scripts.map((p) => readFileSync(join(root, p), "utf8"))].map(uncommented).join("\n");
  for (const [re, reason] of IMPOSSIBLE) if (re.test(code)) return reason;
  if (DOCUMENT.test(uncommented(source)) && !WINDOW_GUARD.test(source)) return "needs a document (iframe or elements)";
  if (/\.sub\.any\.js$/.test(rel)) return "needs the WPT server (.sub substitution)";
  return null;
}
