// The Worker script for one run of one WPT file: our harness glue
// (harness.js), then testharness.js, the file's META scripts and the file
// itself, all read from the WPT checkout now, never stored in this repo.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const GLUE = readFileSync(join(here, "harness.js"), "utf8");

/**
 * `run` comes from manifest.collect; `origin` is the static server's
 * (http://127.0.0.1:port) that relative URLs in the test resolve against.
 */
export function workerScript(root, run, origin, deadlineMs) {
  const read = (rel) => readFileSync(join(root, rel), "utf8");
  // A dedicated worker's URL for this file, as wptserve names it.
  const testUrl = `${origin}/${run.file.replace(/\.js$/, ".worker.js")}${run.variant}`;
  const sources = [...run.scripts, run.file].map((rel) => [rel, read(rel)]);
  const parts = [
    `var __WPT = ${JSON.stringify({ testUrl, deadlineMs })};`,
    GLUE,
    "function __wptFile(__wptScope, location, __wptHooks) {",
    exportsOf(sources.map(([, text]) => text)),
    // Relative URLs resolve against the test's URL in `fetch` and `new
    // Request`, as they do in a worker created from it: neither runtime has a
    // `location`. A Proxy keeps `Request` itself (prototype, name, brand).
    "function __wptAbsolute(input) {",
    "  if (typeof input !== 'string') return input;",
    "  try { return new URL(input, location.href).href; } catch (e) { return input; }",
    "}",
    "var fetch = function (input, init) { return globalThis.fetch(__wptAbsolute(input), init); };",
    "var Request = new Proxy(globalThis.Request, { construct: function (target, args, newTarget) {",
    "  if (args.length > 0) args[0] = __wptAbsolute(args[0]);",
    "  return Reflect.construct(target, args, newTarget === Request ? target : newTarget);",
    "} });",
    "self.GLOBAL = { isWindow: function () { return false; }, isWorker: function () { return true; }, isShadowRealm: function () { return false; } };",
    run.title === null ? "" : `self.META_TITLE = ${JSON.stringify(run.title)};`,
    "(function (self) {",
    read("resources/testharness.js"),
    "})(__wptScope);",
    "add_test_state_callback(__wptHooks.seen);",
    "add_result_callback(__wptHooks.seen);",
    "add_completion_callback(__wptHooks.complete);",
  ];
  for (const [rel, text] of sources) parts.push(`// ${rel}`, text);
  parts.push("done();", "}");
  return parts.join("\n");
}

/**
 * A classic script's top-level functions are properties of the global; here
 * they are locals of one function. Copy the hoisted ones a test reads off the
 * global (`globalThis.fetch_spec` in idlharness) onto it.
 */
function exportsOf(texts) {
  const names = new Set();
  for (const text of texts) {
    for (const m of text.matchAll(/\b(?:globalThis|self)\.([A-Za-z_$][\w$]*)/g)) names.add(m[1]);
  }
  return [...names]
    .map((n) => `try { if (typeof ${n} === "function" && !(${JSON.stringify(n)} in globalThis)) globalThis.${n} = ${n}; } catch (e) {}`)
    .join("\n");
}
