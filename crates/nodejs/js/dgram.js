// node:dgram — importable only (workerd's stub, on from 2026-01-29): no UDP.
// Runs as function (host, internal, require, module, exports).

const { stubClass, stubs } = require('node:internal/errors');

module.exports = { Socket: stubClass('dgram.Socket'), ...stubs('dgram', ['createSocket']) };
