// node:inspector and node:inspector/promises — importable only (workerd's
// stubs, on from 2026-01-29): no debugger session. `open`, `close`, `url`
// and `waitForDebugger` do nothing in node:inspector and throw in
// node:inspector/promises, as in workerd. Runs as function (host, internal,
// require, module, exports).

const { EventEmitter } = require('node:events');
const { stubs } = require('node:internal/errors');

class Session extends EventEmitter {}
Object.assign(Session.prototype, stubs('inspector.Session', ['connect', 'connectToMainThread', 'disconnect', 'post']));

const noop = () => {};
const console = Object.fromEntries(
  ['debug', 'error', 'info', 'log', 'warn', 'dir', 'dirxml', 'table', 'trace', 'group', 'groupCollapsed',
    'groupEnd', 'clear', 'count', 'countReset', 'assert', 'profile', 'profileEnd', 'time', 'timeLog', 'timeStamp'].map((n) => [n, noop]),
);
const Network = stubs('inspector.Network', ['requestWillBeSent', 'dataReceived', 'dataSent', 'responseReceived',
  'loadingFinished', 'loadingFailed', 'webSocketCreated', 'webSocketHandshakeResponseReceived', 'webSocketClosed']);
const debuggerControls = ['close', 'open', 'url', 'waitForDebugger'];

module.exports = {
  Session, console, Network,
  ...Object.fromEntries(debuggerControls.map((n) => [n, noop])),
};
// What node:inspector/promises exports (not one of node:inspector's own).
Object.defineProperty(module.exports, 'promises', {
  value: { Session, console, Network, ...stubs('inspector', debuggerControls) },
});
