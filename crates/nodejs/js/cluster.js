// node:cluster — importable only (workerd's stub, on from 2025-12-04): the
// isolate is always the primary and never forks. Runs as function (host,
// internal, require, module, exports).

const { EventEmitter } = require('node:events');
const { notImplemented } = require('node:internal/errors');

class Worker extends EventEmitter {}

class Cluster extends EventEmitter {
  disconnect = notImplemented('cluster.disconnect');
  fork = notImplemented('cluster.fork');
  setupMaster = notImplemented('cluster.setupMaster');
  setupPrimary = notImplemented('cluster.setupPrimary');
  isWorker = false;
  isMaster = true;
  isPrimary = true;
  Worker = Worker;
  workers = {};
  settings = {};
  SCHED_NONE = 1;
  SCHED_RR = 2;
  schedulingPolicy = 2;
}

const cluster = new Cluster();
cluster.Cluster = Cluster;
module.exports = cluster;
