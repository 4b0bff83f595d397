// node:worker_threads — importable only (workerd's stub, on from
// 2026-03-17): the isolate is the main thread and starts no threads. The
// runtime's MessageChannel/MessagePort where it has them. Runs as function
// (host, internal, require, module, exports).

const { stubClass, stubs } = require('node:internal/errors');

const environment = new Map();

module.exports = {
  isMainThread: true,
  isInternalThread: false,
  parentPort: null,
  threadId: 0,
  workerData: null,
  resourceLimits: {},
  SHARE_ENV: Symbol.for('nodejs.worker_threads.SHARE_ENV'),
  Worker: stubClass('worker_threads.Worker'),
  BroadcastChannel: globalThis.BroadcastChannel ?? stubClass('worker_threads.BroadcastChannel'),
  MessageChannel: globalThis.MessageChannel ?? stubClass('worker_threads.MessageChannel'),
  MessagePort: globalThis.MessagePort ?? stubClass('worker_threads.MessagePort'),
  getEnvironmentData: (key) => environment.get(key),
  setEnvironmentData(key, value) {
    if (value === undefined) environment.delete(key);
    else environment.set(key, value);
  },
  isMarkedAsUntransferable: () => false,
  markAsUncloneable() {},
  markAsUntransferable() {},
  receiveMessageOnPort: () => undefined,
  ...stubs('worker_threads', ['moveMessagePortToContext', 'postMessageToThread']),
};
