// node:console — the runtime's console (the same object, as in workerd),
// with Node's Console class on it: a console that writes util.format's
// lines to the streams it is given (anything with write(text)). Runs as
// function (host, internal, require, module, exports).

const { format, inspect } = require('node:util');
const { codedError } = require('node:internal/errors');

class Console {
  #stdout;
  #stderr;
  #ignoreErrors;
  #indent = '';
  #counts = new Map();
  #times = new Map();

  constructor(stdout, stderr, ignoreErrors) {
    const options = stdout && typeof stdout.write !== 'function' ? stdout : { stdout, stderr, ignoreErrors };
    for (const name of ['stdout', 'stderr']) {
      const stream = options[name];
      if (stream !== undefined && typeof stream?.write !== 'function') {
        throw codedError(TypeError, 'ERR_CONSOLE_WRITABLE_STREAM', `Console expects a writable stream instance for ${name}`);
      }
    }
    if (options.stdout === undefined) {
      throw codedError(TypeError, 'ERR_CONSOLE_WRITABLE_STREAM', 'Console expects a writable stream instance for stdout');
    }
    this.#stdout = options.stdout;
    this.#stderr = options.stderr ?? options.stdout;
    this.#ignoreErrors = options.ignoreErrors ?? true;
    // Node's console methods work unbound (`const { log } = new Console(...)`).
    for (const name of Object.getOwnPropertyNames(Console.prototype)) {
      if (name !== 'constructor') this[name] = this[name].bind(this);
    }
  }

  #write(toError, text) {
    const lines = this.#indent === '' ? text : text.split('\n').map((line) => this.#indent + line).join('\n');
    try {
      (toError ? this.#stderr : this.#stdout).write(`${lines}\n`);
    } catch (error) {
      if (!this.#ignoreErrors) throw error;
    }
  }

  log(...args) { this.#write(false, format(...args)); }
  info(...args) { this.log(...args); }
  debug(...args) { this.log(...args); }
  dirxml(...args) { this.log(...args); }
  table(...args) { this.log(...args); }
  warn(...args) { this.#write(true, format(...args)); }
  error(...args) { this.warn(...args); }
  dir(value, options) { this.#write(false, inspect(value, { customInspect: false, ...options })); }
  trace(...args) {
    const holder = {};
    Error.captureStackTrace(holder, this.trace);
    const stack = String(holder.stack ?? '').split('\n').slice(1).join('\n');
    this.#write(true, `Trace${args.length ? `: ${format(...args)}` : ''}\n${stack}`);
  }
  assert(condition, ...args) {
    if (!condition) this.warn(...(args.length ? [`Assertion failed: ${format(...args)}`] : ['Assertion failed']));
  }
  count(label = 'default') {
    const n = (this.#counts.get(`${label}`) ?? 0) + 1;
    this.#counts.set(`${label}`, n);
    this.log(`${label}: ${n}`);
  }
  countReset(label = 'default') { this.#counts.delete(`${label}`); }
  group(...args) {
    if (args.length) this.log(...args);
    this.#indent += '  ';
  }
  groupCollapsed(...args) { this.group(...args); }
  groupEnd() { this.#indent = this.#indent.slice(0, -2); }
  time(label = 'default') { this.#times.set(`${label}`, performance.now()); }
  timeLog(label = 'default', ...data) {
    const start = this.#times.get(`${label}`);
    if (start === undefined) return this.warn(`Warning: No such label '${label}' for console.timeLog()`);
    this.log(`${label}: ${(performance.now() - start).toFixed(3)}ms`, ...data);
  }
  timeEnd(label = 'default') {
    this.timeLog(label);
    this.#times.delete(`${label}`);
  }
  clear() {}
  profile() {}
  profileEnd() {}
  timeStamp() {}
}

const console = globalThis.console;
if (!Object.hasOwn(console, 'Console')) {
  Object.defineProperty(console, 'Console', { value: Console, writable: true, configurable: true, enumerable: true });
}
module.exports = console;
