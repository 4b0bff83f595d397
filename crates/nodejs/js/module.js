// node:module — createRequire gives a require for Node's built-ins (the
// Worker's own modules are imported, not required from a path, here);
// builtinModules and isBuiltin list what this runtime has. Runs as
// function (host, internal, require, module, exports).

const { codedError, notImplemented } = require('node:internal/errors');

// Node's built-ins a Worker may require (the ones this runtime has).
const builtinModules = Object.freeze([
  '_http_agent', '_http_client', '_http_common', '_http_incoming', '_http_outgoing', '_http_server',
  '_stream_duplex', '_stream_passthrough', '_stream_readable', '_stream_transform', '_stream_wrap',
  '_stream_writable', '_tls_common', '_tls_wrap', 'assert', 'assert/strict', 'async_hooks', 'buffer',
  'child_process', 'cluster', 'console', 'constants', 'crypto', 'dgram', 'diagnostics_channel', 'dns',
  'dns/promises', 'domain', 'events', 'fs', 'fs/promises', 'http', 'http2', 'https', 'inspector',
  'inspector/promises', 'module', 'net', 'os', 'path', 'path/posix', 'path/win32', 'perf_hooks', 'process',
  'punycode', 'querystring', 'readline', 'readline/promises', 'repl', 'stream', 'stream/consumers',
  'stream/promises', 'stream/web', 'string_decoder', 'sys', 'timers', 'timers/promises', 'tls',
  'trace_events', 'tty', 'url', 'util', 'util/types', 'v8', 'vm', 'wasi', 'worker_threads', 'zlib',
]);

// A name in the list, whether or not this Worker's settings open it
// (createRequire's require says which flag a closed one needs).
function isBuiltin(name) {
  return typeof name === 'string' && builtinModules.includes(name.startsWith('node:') ? name.slice(5) : name);
}

function createRequire(filename) {
  if (typeof filename !== 'string' && !(filename instanceof URL)) {
    throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', "The argument 'filename' must be a file URL object, file URL string, or absolute path string.");
  }
  const required = (id) => {
    if (!isBuiltin(id)) {
      throw codedError(Error, 'MODULE_NOT_FOUND', `Cannot find module '${id}': createRequire here reaches Node's built-ins only`);
    }
    return require.forWorker(id, true);
  };
  required.resolve = (id) => {
    if (!isBuiltin(id)) throw codedError(Error, 'MODULE_NOT_FOUND', `Cannot find module '${id}'`);
    return id.startsWith('node:') ? id : `node:${id}`;
  };
  required.cache = Object.create(null);
  return required;
}

class Module {
  static createRequire = createRequire;
  static builtinModules = builtinModules;
  static isBuiltin = isBuiltin;
  static register = notImplemented('module.register');
  static syncBuiltinESMExports() {}
  static findSourceMap() { return undefined; }
  // Node's loader internals and compile cache, as workerd answers them:
  // empty caches and paths, no compile cache, the rest "not implemented".
  static _cache = Object.create(null);
  static _pathCache = Object.create(null);
  static _extensions = Object.create(null);
  static globalPaths = [];
  static constants = { compileCacheStatus: { FAILED: 0, ENABLED: 1, ALREADY_ENABLED: 2, DISABLED: 3 } };
  static enableCompileCache() {}
  static flushCompileCache() {}
  static getCompileCacheDir() { return undefined; }
  static getSourceMapsSupport() { return { enabled: false, nodeModules: false, generatedCode: false }; }
}
for (const name of ['SourceMap', '_debug', '_findPath', '_initPaths', '_load', '_nodeModulePaths', '_preloadModules',
  '_resolveFilename', '_resolveLookupPaths', 'findPackageJSON', 'registerHooks', 'runMain', 'setSourceMapsSupport',
  'stripTypeScriptTypes', 'wrap']) {
  Module[name] = notImplemented(`module.${name}`);
}
Module.Module = Module;

module.exports = Module;
