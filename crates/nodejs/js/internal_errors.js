// node:internal/errors — Node's coded errors as the node modules share them
// (not importable by Workers: `modules/node.rs` hides `internal/`). Runs as
// function (host, internal, require, module, exports).

function codedError(Class, code, message) {
  const error = new Class(message);
  error.code = code;
  return error;
}

// What Node's ERR_INVALID_ARG_TYPE says it received: "undefined", "an
// instance of Uint16Array", "type string ('12')" (cut after 25 characters
// when longer than 28), an object without a constructor as inspect shows it.
function describe(value) {
  if (value == null) return `${value}`;
  if (typeof value === 'function') return `function ${value.name}`;
  const { inspect } = require('node:internal/util_inspect');
  if (typeof value === 'object') {
    if (value.constructor?.name) return `an instance of ${value.constructor.name}`;
    return inspect(value, { depth: -1 });
  }
  let shown = inspect(value, { colors: false });
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `type ${typeof value} (${shown})`;
}

// As Node names what was wrong: a phrase as it is (`The first argument`),
// `The "a.b" property`, `The "name" argument`.
function subject(name) {
  if (name.includes(' ')) return `The ${name}`;
  return `The "${name}" ${name.includes('.') ? 'property' : 'argument'}`;
}

function invalidArgType(name, expected, value) {
  return codedError(TypeError, 'ERR_INVALID_ARG_TYPE', `${subject(name)} must be ${expected}. Received ${describe(value)}`);
}

// A function that throws "<what> is not implemented": what workerd does for
// the parts of Node a Worker cannot have, so that code that only imports
// them loads.
function notImplemented(what) {
  return function () {
    throw codedError(Error, 'ERR_METHOD_NOT_IMPLEMENTED', `${what} is not implemented on Isolane`);
  };
}

// `{ name: notImplemented(`${prefix}.${name}`) }` for each name; with
// `promises`, functions that reject instead of throwing.
function stubs(prefix, names, promises = false) {
  const out = {};
  for (const name of names) {
    const fail = notImplemented(`${prefix}.${name}`);
    out[name] = promises ? async () => fail() : fail;
  }
  return out;
}

// A class that can be named and extended but not constructed.
function stubClass(what) {
  const fail = notImplemented(what);
  return class {
    constructor() { fail(); }
  };
}

// Node's AbortError (events.once, events.on): code ABORT_ERR, the signal's
// reason as its cause.
function abortError(signal) {
  const error = new Error('The operation was aborted');
  error.name = 'AbortError';
  error.code = 'ABORT_ERR';
  error.cause = signal?.reason;
  return error;
}

module.exports = { abortError, codedError, invalidArgType, notImplemented, stubs, stubClass };
