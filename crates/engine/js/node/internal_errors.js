// node:internal/errors — Node's coded errors as the node modules share them
// (not importable by Workers: `modules/node.rs` hides `internal/`). Runs as
// function (host, internal, require, module, exports).

function codedError(Class, code, message) {
  const error = new Class(message);
  error.code = code;
  return error;
}

// How Node's ERR_INVALID_ARG_TYPE names the value it got: "undefined",
// "an instance of Uint16Array", "type string ('12')" (cut after 25
// characters when longer than 28).
function describe(value) {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'function') return `function ${value.name}`;
  if (typeof value === 'object') return value.constructor && value.constructor.name ? `an instance of ${value.constructor.name}` : 'an object';
  let shown = typeof value === 'string' ? `'${value}'` : typeof value === 'bigint' ? `${value}n` : String(value);
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `type ${typeof value} (${shown})`;
}

// `name` with a space is a phrase ('first argument'), else an argument's name.
function invalidArgType(name, expected, value) {
  const what = name.includes(' ') ? `The ${name}` : `The "${name}" argument`;
  return codedError(TypeError, 'ERR_INVALID_ARG_TYPE', `${what} must be ${expected}. Received ${describe(value)}`);
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

module.exports = { codedError, invalidArgType, notImplemented, stubs, stubClass };
