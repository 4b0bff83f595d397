// node:wasi — importable only (workerd's stub, on from 2025-12-04). Runs as
// function (host, internal, require, module, exports).

const { stubClass } = require('node:internal/errors');

module.exports = { WASI: stubClass('wasi.WASI') };
