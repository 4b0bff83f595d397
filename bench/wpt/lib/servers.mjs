// The processes one run compares: a static file server over the WPT
// checkout (loopback), and `isolane dev` and `workerd serve` each serving one
// generated Worker, started fresh for every test file so that a file that
// hangs or crashes its runtime is cut off by killing the process.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { extname, join, normalize } from "node:path";

/** The Host both runtimes route the Worker by. */
const HOST = "wpt.test";
/** The compatibility date the compat suite (cli/tests/compat) uses too. */
const COMPATIBILITY_DATE = "2025-11-01";
const START_DEADLINE_MS = 30_000;

const TYPES = {
  ".js": "text/javascript",
  ".json": "application/json",
  ".txt": "text/plain",
  ".html": "text/html",
  ".idl": "text/plain",
  ".css": "text/css",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".gif": "image/gif",
  ".svg": "image/svg+xml",
  ".wasm": "application/wasm",
};

/** Serves the checkout's files read-only on 127.0.0.1; resolves to its origin. */
export function staticServer(root) {
  const server = http.createServer((req, res) => {
    let file = null;
    try {
      file = join(root, normalize(decodeURIComponent(new URL(req.url, "http://x").pathname)));
    } catch {
      // a malformed escape: not a file we serve
    }
    if (file === null || !file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "access-control-allow-origin": "*",
    });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      server.unref();
      resolve(`http://127.0.0.1:${server.address().port}`);
    }),
  );
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Writes the Worker for `isolane dev --workers`; returns its argv. */
function isolaneCommand(bin, dir, script, port) {
  const workers = join(dir, "workers");
  mkdirSync(workers, { recursive: true });
  const worker = {
    apiVersion: "isolane.dev/v1alpha1",
    kind: "Worker",
    metadata: { name: "wpt" },
    // The largest limits a Worker may ask for: workerd run alone has none,
    // and a debug build on a shared 2-core machine is slow.
    spec: {
      routes: [{ host: HOST }],
      limits: { cpuMs: 30000, wallMs: 300000, memoryMiB: 1024, subrequests: 1000 },
      script,
    },
  };
  writeFileSync(join(workers, "wpt.yaml"), JSON.stringify(worker)); // JSON is YAML
  return [bin, ["dev", "--workers", workers, "--port", String(port), "--threads", "1"]];
}

/** Writes the workerd config: one service-worker Worker whose outbound network is loopback only. */
function workerdCommand(bin, dir, script, port) {
  writeFileSync(join(dir, "worker.js"), script);
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "wpt", worker = .wpt),
    (name = "net", network = (allow = ["local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "wpt")],
);
const wpt :Workerd.Worker = (
  serviceWorkerScript = embed "worker.js",
  compatibilityDate = "${COMPATIBILITY_DATE}",
  globalOutbound = "net",
);
`;
  writeFileSync(join(dir, "workerd.capnp"), config);
  return [bin, ["serve", join(dir, "workerd.capnp")]];
}

export const RUNTIMES = { isolane: isolaneCommand, workerd: workerdCommand };

/** With util-linux's setpriv, a runtime dies with this process (as in cli/tests/compat). */
const SETPRIV = spawnSync("setpriv", ["--version"]).status === 0;

/**
 * Serves `script` on runtime `name` in a fresh process, asks it once for the
 * results, and kills it. Resolves to { result } or { failure } — never
 * rejects, never outlives `deadlineMs` (plus the start deadline).
 */
export async function runOnce(name, bin, dir, script, deadlineMs) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const [program, args] = RUNTIMES[name](bin, dir, script, port);
  const log = openSync(join(dir, `${name}.log`), "w");
  const argv = SETPRIV ? ["setpriv", ["--pdeathsig", "KILL", "--", program, ...args]] : [program, args];
  const child = spawn(argv[0], argv[1], {
    stdio: ["ignore", log, log],
    env: { ...process.env, ISOLANE_LOG: "warn" },
  });
  closeSync(log);
  let exited = null;
  child.on("exit", (code, signal) => (exited = signal ?? `exit ${code}`));
  try {
    const started = Date.now();
    while (!(await accepts(port))) {
      if (exited !== null) return { failure: `${name} exited before listening (${exited})` };
      if (Date.now() - started > START_DEADLINE_MS) return { failure: `${name} did not listen in time` };
      await sleep(50);
    }
    const answer = await get(port, deadlineMs);
    if (answer.failure) return answer;
    if (answer.status !== 200) return { failure: `HTTP ${answer.status}: ${answer.body.slice(0, 200)}` };
    try {
      return { result: JSON.parse(answer.body) };
    } catch {
      return { failure: `not JSON: ${answer.body.slice(0, 200)}` };
    }
  } finally {
    child.kill("SIGKILL");
  }
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function get(port, deadlineMs) {
  return new Promise((resolve) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/", headers: { host: HOST } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (e) => resolve({ failure: `response: ${e.message}` }));
    });
    req.setTimeout(deadlineMs, () => {
      req.destroy();
      resolve({ failure: `no answer within ${deadlineMs} ms (hard deadline)` });
    });
    req.on("error", (e) => resolve({ failure: `request: ${e.message}` }));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
