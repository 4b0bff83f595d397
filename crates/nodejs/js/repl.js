// node:repl — importable only (workerd's stub, on from 2026-03-17). Runs as
// function (host, internal, require, module, exports).

const { stubClass, stubs } = require('node:internal/errors');
const { builtinModules } = require('node:module');

class Recoverable extends SyntaxError {
  constructor(err) {
    super();
    this.err = err;
  }
}

module.exports = {
  REPLServer: stubClass('repl.REPLServer'),
  REPL_MODE_SLOPPY: Symbol('repl-sloppy'),
  REPL_MODE_STRICT: Symbol('repl-strict'),
  Recoverable,
  _builtinLibs: builtinModules,
  builtinModules,
  ...stubs('repl', ['start', 'writer']),
};
