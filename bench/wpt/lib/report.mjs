// bench/wpt/results.md from the runs' outcomes: per directory and per file,
// the subtests (the union of the names either runtime reported), how many
// each runtime passed, and the ratio Isolane / workerd.
import { DIRS } from "./manifest.mjs";

/** Files left out of the "without" totals: the legacy single-byte decoder file. */
export const SINGLE_BYTE = /^encoding\/textdecoder-fatal-single-byte\.any\.js/;
/** Also left out of the last total: the legacy multi-byte decoder files. */
export const LEGACY_MB = /^encoding\/legacy-mb-/;

/** Per-run counts: { id, dir, subtests, isolane, workerd, note, failing }. */
export function count(run, outcomes) {
  const names = new Set();
  const passed = {};
  const notes = [];
  for (const name of ["isolane", "workerd"]) {
    const outcome = outcomes[name];
    passed[name] = 0;
    if (!outcome || outcome.failure) {
      notes.push(`${name}: ${outcome ? outcome.failure : "not run"}`);
      continue;
    }
    const { harness, tests } = outcome.result;
    for (const key of keys(tests)) names.add(key);
    passed[name] = tests.filter((t) => t.status === "PASS").length;
    if (harness && harness.status !== "OK") notes.push(`${name}: harness ${harness.status}${harness.message ? ` (${harness.message})` : ""}`);
  }
  return {
    id: run.id,
    dir: run.dir,
    subtests: names.size,
    isolane: passed.isolane,
    workerd: passed.workerd,
    notes,
    failing: failing(outcomes),
    onlyIsolane: failing({ isolane: outcomes.workerd, workerd: outcomes.isolane }).length,
  };
}

/** Subtest names made unique (a file may repeat a name). */
function keys(tests) {
  const seen = new Map();
  return tests.map((t) => {
    const n = (seen.get(t.name) ?? 0) + 1;
    seen.set(t.name, n);
    return n === 1 ? t.name : `${t.name} #${n}`;
  });
}

/** Subtests workerd passes and Isolane does not, with Isolane's message. */
function failing(outcomes) {
  const w = outcomes.workerd?.result?.tests ?? [];
  const i = outcomes.isolane?.result?.tests ?? [];
  const onIsolane = new Map(keys(i).map((k, n) => [k, i[n]]));
  // A subtest Isolane never reported: say why the file stopped short.
  const stopped = outcomes.isolane?.failure ?? outcomes.isolane?.result?.harness?.message ?? null;
  const out = [];
  keys(w).forEach((k, n) => {
    if (w[n].status !== "PASS") return;
    const mine = onIsolane.get(k);
    if (!mine) out.push({ name: k, status: "MISSING", message: stopped });
    else if (mine.status !== "PASS") out.push({ name: k, status: mine.status, message: mine.message });
  });
  return out;
}

/** What changed since an earlier run: totals, then the files that moved. */
function since(all, rows) {
  // The same runs on both sides, so a filtered run compares like with like.
  const ids = new Set(rows.map((r) => r.id));
  const before = all.filter((r) => ids.has(r.id));
  const old = new Map(before.map((r) => [r.id, r]));
  const out = ["## Since the baseline run", "", "The baseline is an earlier run's results (`WPT_BASELINE`), over the same runs.", ""];
  const a = sum(before.filter((r) => !SINGLE_BYTE.test(r.id)));
  const b = sum(rows.filter((r) => !SINGLE_BYTE.test(r.id)));
  const x = sum(before);
  const y = sum(rows);
  out.push(row(["", "Isolane passed", "workerd passed", "Isolane / workerd"]), row(["---", "---:", "---:", "---:"]));
  out.push(row(["all files, baseline", x.isolane, x.workerd, ratio(x.isolane, x.workerd)]));
  out.push(row(["all files, now", y.isolane, y.workerd, ratio(y.isolane, y.workerd)]));
  out.push(row(["without the single-byte file, baseline", a.isolane, a.workerd, ratio(a.isolane, a.workerd)]));
  out.push(row(["without the single-byte file, now", b.isolane, b.workerd, ratio(b.isolane, b.workerd)]));
  const moved = rows
    .map((r) => ({ id: r.id, was: old.get(r.id)?.isolane ?? 0, now: r.isolane }))
    .filter((m) => m.was !== m.now)
    .sort((p, q) => Math.abs(q.now - q.was) - Math.abs(p.now - p.was));
  out.push("", row(["file", "Isolane before", "Isolane now", "change"]), row(["---", "---:", "---:", "---:"]));
  for (const m of moved) out.push(row([`\`${esc(m.id)}\``, m.was, m.now, (m.now > m.was ? "+" : "") + (m.now - m.was)]));
  out.push("");
  return out;
}

/** The failing subtests of every row, grouped by a normalised message. */
function causes(rows) {
  const by = new Map();
  for (const r of rows) {
    for (const f of r.failing) {
      const text = `${f.status}: ${f.message ?? (f.status === "MISSING" ? "not reported, the file stopped early" : "")}`
        .replace(/\s+/g, " ")
        .replace(/function "(?:[^"\\]|\\.)*"/g, "function …")
        .replace(/'[^']*'/g, "…")
        .replace(/\bat __wpt.*$/, "")
        .slice(0, 110);
      const c = by.get(text) ?? { cause: text, subtests: 0, files: new Set(), example: r.id };
      c.subtests++;
      c.files.add(r.id);
      by.set(text, c);
    }
  }
  return [...by.values()].sort((a, b) => b.subtests - a.subtests);
}

const ratio = (a, b) => (b === 0 ? (a === 0 ? "—" : "∞") : (a / b).toFixed(2));

function sum(rows) {
  return rows.reduce(
    (t, r) => ({ files: t.files + 1, subtests: t.subtests + r.subtests, isolane: t.isolane + r.isolane, workerd: t.workerd + r.workerd }),
    { files: 0, subtests: 0, isolane: 0, workerd: 0 },
  );
}

const row = (cells) => `| ${cells.join(" | ")} |`;
const esc = (s) => String(s).replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The markdown page. `info`: { wptCommit, isolane, workerd, date, runs, skipped }. */
export function markdown(info, rows, skipped, before = null) {
  const out = [];
  const totals = [
    ["all files", rows],
    ["without the single-byte decoder file", rows.filter((r) => !SINGLE_BYTE.test(r.id))],
    ["without it and legacy-mb-*", rows.filter((r) => !SINGLE_BYTE.test(r.id) && !LEGACY_MB.test(r.id))],
  ];
  out.push(
    "# Web Platform Tests: Isolane vs workerd",
    "",
    "Generated by `bench/wpt/run.sh` (`make wpt`); do not edit. How to run it and",
    "what it counts: [docs/compat.md](../../docs/compat.md#web-platform-tests).",
    "",
    `- WPT commit: \`${info.wptCommit}\``,
    `- Isolane: ${info.isolane}`,
    `- workerd: ${info.workerd}`,
    `- run: ${info.date}, ${rows.length} runs of .any.js files (variants counted apart), ${skipped.length} skipped`,
    "",
    "## Totals",
    "",
    row(["", "runs", "subtests", "Isolane passed", "workerd passed", "Isolane / workerd", "only Isolane passes", "only workerd passes"]),
    row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]),
  );
  for (const [label, subset] of totals) {
    const t = sum(subset);
    const only = (f) => subset.reduce((n, r) => n + f(r), 0);
    out.push(row([label, t.files, t.subtests, t.isolane, t.workerd, ratio(t.isolane, t.workerd), only((r) => r.onlyIsolane), only((r) => r.failing.length)]));
  }
  out.push("", "The single-byte decoder file is `encoding/textdecoder-fatal-single-byte.any.js`", "(every legacy single-byte encoding, byte by byte).", "");
  if (before) out.push(...since(before, rows));
  out.push("## Per directory", "", row(["directory", "runs", "subtests", "Isolane", "workerd", "ratio"]), row(["---", "---:", "---:", "---:", "---:", "---:"]));
  for (const dir of DIRS) {
    const t = sum(rows.filter((r) => r.dir === dir));
    out.push(row([dir, t.files, t.subtests, t.isolane, t.workerd, ratio(t.isolane, t.workerd)]));
  }
  const gap = rows.filter((r) => r.workerd > r.isolane).sort((a, b) => b.workerd - b.isolane - (a.workerd - a.isolane));
  out.push("", "## Largest gaps (workerd passes, Isolane does not)", "");
  out.push(row(["file", "gap", "Isolane", "workerd", "first subtest Isolane fails", "its message"]), row(["---", "---:", "---:", "---:", "---", "---"]));
  for (const r of gap.slice(0, 40)) {
    const f = r.failing[0];
    out.push(row([`\`${esc(r.id)}\``, r.workerd - r.isolane, r.isolane, r.workerd, f ? esc(f.name).slice(0, 90) : "", f ? esc(`${f.status}${f.message ? `: ${f.message}` : ""}`).slice(0, 140) : esc(r.notes.join("; ")).slice(0, 140)]));
  }
  out.push("", "## The gap by cause", "", "Subtests workerd passes and Isolane does not, grouped by Isolane's message", "(quoted parts elided), largest first.", "");
  out.push(row(["subtests", "files", "Isolane's message", "e.g."]), row(["---:", "---:", "---", "---"]));
  for (const c of causes(rows).slice(0, 30)) out.push(row([c.subtests, c.files.size, esc(c.cause), `\`${esc(c.example)}\``]));
  out.push("", "## Per file", "", row(["file", "subtests", "Isolane", "workerd", "ratio", "notes"]), row(["---", "---:", "---:", "---:", "---:", "---"]));
  for (const r of rows) {
    out.push(row([`\`${esc(r.id)}\``, r.subtests, r.isolane, r.workerd, ratio(r.isolane, r.workerd), esc(r.notes.join("; ")).slice(0, 160)]));
  }
  out.push("", "## Skipped", "", row(["file", "why"]), row(["---", "---"]));
  for (const s of skipped) out.push(row([`\`${esc(s.id)}\``, esc(s.skip)]));
  out.push("");
  return out.join("\n");
}
