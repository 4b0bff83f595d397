// node:readline and node:readline/promises — importable only (workerd's
// stubs, on from 2026-03-17): a Worker has no terminal. An Interface is an
// EventEmitter that reads nothing; the cursor helpers do nothing. Runs as
// function (host, internal, require, module, exports).

const { EventEmitter } = require('node:events');
const { stubs } = require('node:internal/errors');

class Interface extends EventEmitter {
  constructor(input, output) {
    super();
    this.input = input?.input ?? input;
    this.output = input?.output ?? output;
    this.line = '';
    this.terminal = false;
  }
  close() { this.emit('close'); }
  pause() { return this; }
  resume() { return this; }
  setPrompt() {}
  getPrompt() { return ''; }
  prompt() {}
  write() {}
  getCursorPos() { return { rows: 0, cols: 0 }; }
}
Object.assign(Interface.prototype, stubs('readline.Interface', ['question']));

class Readline {
  constructor(stream) { this.stream = stream; }
  clearLine() { return this; }
  clearScreenDown() { return this; }
  cursorTo() { return this; }
  moveCursor() { return this; }
  async commit() {}
  rollback() { return this; }
}

const done = (...args) => {
  const callback = args.find((a) => typeof a === 'function');
  if (callback) queueMicrotask(callback);
  return true;
};
const createInterface = (input, output) => new Interface(input, output);

module.exports = {
  Interface,
  createInterface,
  clearLine: done,
  clearScreenDown: done,
  cursorTo: done,
  moveCursor: done,
  emitKeypressEvents() {},
  promises: { Interface, Readline, createInterface },
};
