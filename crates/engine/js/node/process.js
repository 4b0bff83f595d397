// node:process — the parts of Node's `process` workerd has: an
// EventEmitter with nextTick (a microtask), env (the Worker's text bindings
// under nodejs_compat_populate_process_env), version(s) (workerd's),
// platform, arch, cwd ('/bundle', as workerd), hrtime, emitWarning,
// memoryUsage, stdout/stderr (to the console) and an empty stdin; exit and
// the like throw "not implemented". The `process`
// global under nodejs_compat_v2 is this object. Runs as function (host,
// internal, require, module, exports).

const EventEmitter = require('node:events');

function notImplemented(name) {
  return () => {
    const error = new Error(`process.${name} is not implemented`);
    error.code = 'ERR_METHOD_NOT_IMPLEMENTED';
    throw error;
  };
}

const process = new EventEmitter();
const start = performance.now();

function hrtime(previous) {
  const now = performance.now();
  let seconds = Math.floor(now / 1000);
  let nanos = Math.floor((now % 1000) * 1e6);
  if (Array.isArray(previous)) {
    seconds -= previous[0];
    nanos -= previous[1];
    if (nanos < 0) { seconds -= 1; nanos += 1e9; }
  }
  return [seconds, nanos];
}
hrtime.bigint = () => BigInt(Math.floor(performance.now() * 1e6));

Object.assign(process, {
  version: 'v22.23.4',
  versions: { node: '22.23.4' },
  platform: 'linux',
  arch: 'x64',
  title: 'workerd',
  argv: ['workerd'],
  argv0: 'workerd',
  execArgv: [],
  pid: 1,
  ppid: 0,
  env: host.processEnv(),
  release: { name: 'node' },
  features: {},
  exitCode: undefined,
  cwd: () => '/bundle',
  chdir: notImplemented('chdir'),
  umask: () => 0o22,
  uptime: () => (performance.now() - start) / 1000,
  hrtime,
  memoryUsage: () => ({ rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 }),
  cpuUsage: () => ({ user: 0, system: 0 }),
  nextTick(callback, ...args) {
    if (typeof callback !== 'function') {
      const error = new TypeError('The "callback" argument must be of type function');
      error.code = 'ERR_INVALID_ARG_TYPE';
      throw error;
    }
    queueMicrotask(() => callback(...args));
  },
  emitWarning(warning, type) {
    const text = warning instanceof Error ? `${warning.name}: ${warning.message}` : `${type || 'Warning'}: ${warning}`;
    console.warn(text);
  },
  exit: notImplemented('exit'),
  abort: notImplemented('abort'),
  kill: notImplemented('kill'),
  // undefined for what is no built-in this Worker may load (Node's answer
  // for an unknown id): its module gates hold here too.
  getBuiltinModule: (name) => require.forWorker(String(name)),
});
process.memoryUsage.rss = () => 0;

// stdout and stderr: Writables whose text goes to console.log/console.error
// (a Worker's logs); stdin: an empty Readable; none is a TTY. Made (with
// node:stream) when first read.
function stdio(name, make) {
  let stream;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: true,
    get: () => (stream ??= make()),
  });
}
function writer(fd, log) {
  const { Writable } = require('node:stream');
  const stream = new Writable({
    write(chunk, encoding, done) {
      const text = typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk);
      log(text.endsWith('\n') ? text.slice(0, -1) : text);
      done();
    },
  });
  return Object.assign(stream, { fd, isTTY: false });
}
stdio('stdout', () => writer(1, (text) => console.log(text)));
stdio('stderr', () => writer(2, (text) => console.error(text)));
stdio('stdin', () => {
  const { Readable } = require('node:stream');
  return Object.assign(Readable.from([]), { fd: 0, isTTY: false });
});

module.exports = process;
