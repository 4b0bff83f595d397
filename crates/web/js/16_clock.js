// 16_clock.js — Date and performance built on host.now(), the engine's coarse
// clock (it advances only at I/O boundaries). As in workerd, performance.timeOrigin
// is 0, so performance.now() equals Date.now().
'use strict';

const OriginalDate = globalThis.Date;
const now = () => host.now();
internal.now = now;

const IsolaneDate = function Date(...args) {
  if (new.target === undefined) return new OriginalDate(now()).toString();
  if (args.length === 0) return Reflect.construct(OriginalDate, [now()], new.target);
  return Reflect.construct(OriginalDate, args, new.target);
};
Object.defineProperty(IsolaneDate, 'length', { value: 7, configurable: true });
Object.defineProperty(IsolaneDate, 'prototype', { value: OriginalDate.prototype, writable: false, enumerable: false, configurable: false });
Object.defineProperty(OriginalDate.prototype, 'constructor', { value: IsolaneDate, writable: true, enumerable: false, configurable: true });
for (const key of ['parse', 'UTC']) {
  Object.defineProperty(IsolaneDate, key, { value: OriginalDate[key], writable: true, enumerable: false, configurable: true });
}
Object.defineProperty(IsolaneDate, 'now', {
  value: function now() { return host.now(); }, writable: true, enumerable: false, configurable: true,
});
internal.defineGlobal('Date', IsolaneDate);

const kCreate = Symbol('create');
class Performance extends EventTarget {
  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
    super();
  }
  get timeOrigin() { return 0; }
  now() { return host.now(); }
  toJSON() { return { timeOrigin: 0 }; }
}
internal.enumerableMembers(Performance, ['timeOrigin', 'now', 'toJSON'], 'Performance');

internal.defineGlobal('Performance', Performance);
internal.defineGlobal('performance', new Performance(kCreate));
