// node:vm — importable only: a Worker cannot compile code at run time, so
// every function throws "not implemented". Runs as function (host,
// internal, require, module, exports).

const { stubs, stubClass } = require('node:internal/errors');

module.exports = {
  ...stubs('vm', ['createContext', 'runInContext', 'runInNewContext', 'runInThisContext', 'compileFunction', 'measureMemory', 'createScript']),
  isContext: () => false,
  Script: stubClass('vm.Script'),
  constants: Object.freeze({}),
};
