// node:trace_events — importable only (workerd's stub, on from 2025-12-04).
// Runs as function (host, internal, require, module, exports).

const { stubs } = require('node:internal/errors');

module.exports = { getEnabledCategories: () => undefined, ...stubs('trace_events', ['createTracing']) };
