// The sweep's two servers: one `isolane dev` routing each package's Worker
// by host, one workerd with a socket per Worker. workerd stops at start when
// a Worker's script throws at load; those Workers are marked as failing
// (with workerd's message) and workerd is started again without them.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { get as httpGet } from "node:http";
import { mkdirSync, readFileSync, rmSync, writeFileSync, openSync } from "node:fs";
import { join, relative } from "node:path";

const ANSWER_TIMEOUT_MS = 30_000;
// isolane dev reads every Worker YAML (hundreds of MB for the sweep) before
// it answers; a debug build takes minutes.
const START_TIMEOUT_MS = 900_000;

export async function freePorts(count) {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise((ok) => { const s = createServer(); s.listen(0, "127.0.0.1", () => ok(s)); })),
  );
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
  return ports;
}

function start(bin, args, log) {
  const out = openSync(log, "w");
  const child = spawn(bin, args, { stdio: ["ignore", out, out], detached: false });
  child.exited = new Promise((ok) => child.on("exit", (code, signal) => ok(code ?? signal)));
  return child;
}

async function stop(child) {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  await child.exited;
}

/** GET / with `host` (node:http, since fetch may not set Host); what it says. */
function get(port, host) {
  return new Promise((ok) => {
    const request = httpGet({ host: "127.0.0.1", port, path: "/", headers: host ? { host } : {}, timeout: ANSWER_TIMEOUT_MS }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () =>
        ok(response.statusCode === 200 && text.startsWith("loaded")
          ? { ok: true }
          : { ok: false, error: `${response.statusCode} ${text.split("\n")[0].slice(0, 400)}` }),
      );
    });
    request.on("timeout", () => request.destroy(new Error("timeout")));
    request.on("error", (error) => ok({ ok: false, error: String(error.code ?? error.message).slice(0, 160) }));
  });
}

/** Waits until `port` accepts HTTP or `child` exits; true when it answers. */
async function answering(child, port) {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    try {
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
      return true;
    } catch {
      await Promise.race([child.exited, new Promise((ok) => setTimeout(ok, 200))]);
    }
  }
  throw new Error(`no answer on port ${port} within ${START_TIMEOUT_MS} ms`);
}

async function askAll(packages, side, ask) {
  let next = 0;
  const worker = async () => {
    while (next < packages.length) {
      const pkg = packages[next++];
      if (!pkg[side]) pkg[side] = await ask(pkg);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

export async function serveIsolane(bin, cache, packages, port, date) {
  const dir = join(cache, "isolane-workers");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const pkg of packages) {
    const worker = {
      apiVersion: "isolane.dev/v1alpha1",
      kind: "Worker",
      metadata: { name: pkg.id },
      spec: {
        routes: [{ host: `${pkg.id}.sweep.example` }],
        compatibilityDate: date,
        compatibilityFlags: ["nodejs_compat"],
        script: readFileSync(pkg.bundle, "utf8"),
      },
    };
    writeFileSync(join(dir, `${pkg.id}.yaml`), JSON.stringify(worker));
  }
  const child = start(bin, ["dev", "--workers", dir, "--port", String(port), "--threads", "1"], join(cache, "isolane-dev.log"));
  try {
    if (!(await answering(child, port))) throw new Error(`isolane dev exited; see ${join(cache, "isolane-dev.log")}`);
    await askAll(packages, "isolane", (pkg) => get(port, `${pkg.id}.sweep.example`));
  } finally {
    await stop(child);
  }
}

function capnp(cache, packages, date) {
  const services = packages.map((pkg) => `(name = "${pkg.id}", worker = .${pkg.id})`);
  const sockets = packages.map((pkg) => `(name = "${pkg.id}", address = "127.0.0.1:${pkg.port}", http = (), service = "${pkg.id}")`);
  const workers = packages.map(
    (pkg) =>
      `const ${pkg.id} :Workerd.Worker = (modules = [(name = "worker.js", esModule = embed "${relative(cache, pkg.bundle)}")], ` +
      `compatibilityDate = "${date}", compatibilityFlags = ["nodejs_compat"]);`,
  );
  const text = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (services = [${services.join(", ")}], sockets = [${sockets.join(", ")}]);
${workers.join("\n")}
`;
  const path = join(cache, "workerd.capnp");
  writeFileSync(path, text);
  return path;
}

/** The Workers workerd refused at start, by the `service <id>: …` lines of its log. */
function refused(log, live) {
  const found = new Map();
  const lines = readFileSync(log, "utf8").split("\n");
  lines.forEach((line, i) => {
    const m = /^service (p\d+): (.*)$/.exec(line);
    // workerd notes a flag that the date already implies; that is no refusal.
    if (m && /became the default as of .* does not need to be specified/.test(m[2])) return;
    if (m && live.has(m[1]) && !found.has(m[1])) found.set(m[1], `${m[2]} ${(lines[i + 1] ?? "").trim()}`.slice(0, 160));
  });
  return found;
}

export async function serveWorkerd(bin, cache, packages, ports, date) {
  packages.forEach((pkg, i) => (pkg.port = ports[i]));
  let live = new Map(packages.map((pkg) => [pkg.id, pkg]));
  const log = join(cache, "workerd.log");
  for (;;) {
    if (live.size === 0) return;
    const config = capnp(cache, [...live.values()], date);
    const child = start(bin, ["serve", config], log);
    const first = [...live.values()][0];
    if (await answering(child, first.port)) {
      try {
        await askAll([...live.values()], "workerd", (pkg) => get(pkg.port));
      } finally {
        await stop(child);
      }
      return;
    }
    // A port taken since it was picked (other processes share the
    // machine): pick another and start again.
    const taken = [...readFileSync(log, "utf8").matchAll(/Socket "(p\d+)": bind\(\): Address already in use/g)].map((m) => m[1]);
    for (const id of taken) live.get(id).port = (await freePorts(1))[0];
    if (taken.length > 0) continue;
    const failed = refused(log, live);
    if (failed.size === 0) throw new Error(`workerd exited without naming a Worker; see ${log}`);
    console.error(`workerd refused ${failed.size} Worker(s) at start; starting it again without them`);
    for (const [id, error] of failed) {
      live.get(id).workerd = { ok: false, error };
      live.delete(id);
    }
  }
}
