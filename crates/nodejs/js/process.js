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

// The rest of Node's process as workerd answers it: no user, no IPC
// channel, no native addons, nothing to report; ids are 0 and changing
// them is EPERM.
function denied(syscall) {
  return () => {
    const error = new Error(`EPERM: operation not permitted, ${syscall}`);
    error.code = 'EPERM';
    throw error;
  };
}
const noop = () => {};
Object.assign(process, {
  _exiting: false,
  _preload_modules: [],
  allowedNodeEnvironmentFlags: new Set(),
  channel: null,
  config: { target_defaults: {}, variables: {} },
  connected: false,
  debugPort: 0,
  domain: null,
  execPath: '',
  finalization: {},
  moduleLoadList: [],
  noDeprecation: false,
  permission: {},
  sourceMapsEnabled: false,
  throwDeprecation: false,
  traceDeprecation: false,
  report: {},
  _debugEnd: noop,
  _debugProcess: noop,
  _fatalException: () => false,
  _getActiveHandles: () => [],
  _getActiveRequests: () => [],
  _rawDebug: noop,
  _startProfilerIdleNotifier: noop,
  _stopProfilerIdleNotifier: noop,
  _tickCallback: noop,
  availableMemory: () => 0,
  constrainedMemory: () => 0,
  getuid: () => 0,
  geteuid: () => 0,
  getgid: () => 0,
  getegid: () => 0,
  getgroups: () => [0],
  getSourceMapsSupport: () => ({ enabled: false, nodeModules: false, generatedCode: false }),
  setSourceMapsEnabled: noop,
  resourceUsage: () => ({
    userCPUTime: 0, systemCPUTime: 0, maxRSS: 0, sharedMemorySize: 0, unsharedDataSize: 0, unsharedStackSize: 0,
    minorPageFault: 0, majorPageFault: 0, swappedOut: 0, fsRead: 0, fsWrite: 0, ipcSent: 0, ipcReceived: 0,
    signalsCount: 0, voluntaryContextSwitches: 0, involuntaryContextSwitches: 0,
  }),
  send: () => false,
  ref: noop,
  unref: noop,
  setuid: denied('setuid'),
  seteuid: denied('seteuid'),
  setgid: denied('setgid'),
  setegid: denied('setegid'),
  setgroups: denied('setgroups'),
  initgroups: denied('initgroups'),
  binding: notImplemented('binding'),
  _linkedBinding: notImplemented('_linkedBinding'),
  dlopen: notImplemented('dlopen'),
  reallyExit: notImplemented('reallyExit'),
  _kill: notImplemented('_kill'),
  execve: notImplemented('execve'),
  getActiveResourcesInfo: notImplemented('getActiveResourcesInfo'),
  hasUncaughtExceptionCaptureCallback: notImplemented('hasUncaughtExceptionCaptureCallback'),
  setUncaughtExceptionCaptureCallback: notImplemented('setUncaughtExceptionCaptureCallback'),
  threadCpuUsage: notImplemented('threadCpuUsage'),
  loadEnvFile: notImplemented('loadEnvFile'),
  openStdin: () => process.stdin,
});

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
