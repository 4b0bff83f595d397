// node:tty — importable only (workerd's stub, on from 2026-03-17): nothing is
// a terminal. Runs as function (host, internal, require, module, exports).

const { stubClass } = require('node:internal/errors');

module.exports = {
  isatty: () => false,
  ReadStream: stubClass('tty.ReadStream'),
  WriteStream: stubClass('tty.WriteStream'),
};
