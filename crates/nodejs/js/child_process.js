// node:child_process — importable only (workerd's stub, on from 2026-03-17):
// a Worker starts no processes, so every function throws "not implemented".
// Runs as function (host, internal, require, module, exports).

const { EventEmitter } = require('node:events');
const { stubs } = require('node:internal/errors');

class ChildProcess extends EventEmitter {}

module.exports = {
  ChildProcess,
  ...stubs('child_process', ['_forkChild', 'exec', 'execFile', 'execFileSync', 'execSync', 'fork', 'spawn', 'spawnSync']),
};
