// 15_timers.js — setTimeout / setInterval / clearTimeout / clearInterval,
// queueMicrotask and scheduler.wait. Timers are armed with host.timerStart;
// the engine calls internal.timerFired(id) when one is due.
'use strict';

const timers = new Map(); // id -> { callback, args, delay, repeat }
let nextId = 1;

function toDelay(delay) {
  // Web IDL `long`: ToNumber, then ToInt32; negative means 0
  const n = internal.toNumber(delay) | 0;
  return n < 0 ? 0 : n;
}

function start(callback, delay, args, repeat) {
  if (typeof callback !== 'function') {
    throw new TypeError('The callback provided as parameter 1 is not a function (strings are not evaluated).');
  }
  const id = nextId++;
  const d = toDelay(delay);
  // node:async_hooks, once loaded, has the callback run in the
  // AsyncLocalStorage frame it was scheduled in.
  const frame = internal.asyncContext?.get();
  timers.set(id, { callback, args, delay: d, repeat, frame });
  host.timerStart(id, d);
  return id;
}

function setTimeout(callback, delay = 0, ...args) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'setTimeout'");
  return start(callback, delay, args, false);
}
function setInterval(callback, delay = 0, ...args) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'setInterval'");
  return start(callback, delay, args, true);
}
function clearTimeout(id = 0) {
  const key = typeof id === 'number' ? id : Number(id);
  if (timers.delete(key)) host.timerCancel(key);
}
function clearInterval(id = 0) {
  clearTimeout(id);
}

internal.timerFired = function timerFired(id) {
  const t = timers.get(id);
  if (t === undefined) return;
  if (!t.repeat) timers.delete(id);
  try {
    const asyncContext = internal.asyncContext;
    if (asyncContext === undefined) Reflect.apply(t.callback, globalThis, t.args);
    else asyncContext.run(t.frame, t.callback, globalThis, t.args);
  } catch (e) {
    internal.reportError(e);
  }
  // re-arm an interval unless it was cleared by its own callback
  if (t.repeat && timers.get(id) === t) host.timerStart(id, t.delay);
};

// The Web timers, for node:timers to build on when its own are the globals
// (enable_nodejs_global_timers).
internal.webTimers = { setTimeout, setInterval, clearTimeout, clearInterval };

// For the runtime's own use (AbortSignal.timeout, scheduler.wait).
internal.setTimer = (fn, ms) => start(fn, ms, [], false);
internal.clearTimer = (id) => clearTimeout(id);

function queueMicrotask(callback) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'queueMicrotask'");
  if (typeof callback !== 'function') {
    throw new TypeError("Failed to execute 'queueMicrotask': parameter 1 is not of type 'Function'.");
  }
  Promise.resolve().then(() => {
    try {
      callback();
    } catch (e) {
      internal.reportError(e);
    }
  });
}

// workerd's scheduler.wait(ms, { signal }): a promise-returning setTimeout.
class Scheduler {
  wait(delay = 0, options = undefined) {
    const opts = internal.toDictionary(options, 'WaitOptions');
    const signal = opts.signal;
    if (signal !== undefined && signal !== null && !internal.isAbortSignal(signal)) {
      return Promise.reject(new TypeError('scheduler.wait: signal is not an AbortSignal.'));
    }
    if (signal && signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let remove = () => {};
      const id = internal.setTimer(() => { remove(); resolve(); }, delay);
      if (signal) {
        remove = internal.abortSignalAdd(signal, (reason) => { clearTimeout(id); reject(reason); });
      }
    });
  }
}
internal.enumerableMembers(Scheduler, ['wait'], 'Scheduler');

internal.defineGlobal('setTimeout', setTimeout);
internal.defineGlobal('setInterval', setInterval);
internal.defineGlobal('clearTimeout', clearTimeout);
internal.defineGlobal('clearInterval', clearInterval);
internal.defineGlobal('queueMicrotask', queueMicrotask);
internal.defineGlobal('scheduler', new Scheduler());
