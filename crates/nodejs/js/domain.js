// node:domain — importable (workerd's stub, on from 2025-12-04): a Domain
// is an EventEmitter that runs and binds functions as they are, catching
// nothing (domains are deprecated in Node too). Runs as function (host,
// internal, require, module, exports).

const { EventEmitter } = require('node:events');

class Domain extends EventEmitter {
  members = [];
  add(emitter) { this.members.push(emitter); }
  remove(emitter) { this.members = this.members.filter((m) => m !== emitter); }
  run(fn, ...args) { return fn.apply(this, args); }
  bind(fn) { return fn; }
  intercept(fn) { return (error, ...rest) => (error ? this.emit('error', error) : fn(...rest)); }
  enter() {}
  exit() {}
  dispose() {}
}

const create = () => new Domain();
module.exports = { Domain, active: null, create, createDomain: create };
