// node:internal/util_args — util.parseArgs as Node documents it: long and
// short options, short groups (`-abc`), inline values (`--a=1`, `-a1`),
// `--`, `multiple`, `default`, `strict`, `allowPositionals`,
// `allowNegative` and `tokens`. One pass over the arguments (each looked at
// a bounded number of times, no regular expression). Runs as function
// (host, internal, require, module, exports).

const { codedError, invalidArgType } = require('node:internal/errors');
const { inspect } = require('node:internal/util_inspect');

const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
const setting = (options, name, key) => (own(options, name) ? options[name][key] : undefined);

const invalidValue = (message) => codedError(TypeError, 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', message);

function unknownOption(rawName, allowPositionals) {
  const hint = allowPositionals
    ? `. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- ${JSON.stringify(rawName)}`
    : '';
  return codedError(TypeError, 'ERR_PARSE_ARGS_UNKNOWN_OPTION', `Unknown option '${rawName}'${hint}`);
}

function checkBoolean(value, name) {
  if (typeof value !== 'boolean') throw invalidArgType(name, 'of type boolean', value);
}

function checkDefault(config, name) {
  const value = config.default;
  if (value === undefined) return;
  const type = config.type === 'string' ? 'string' : 'boolean';
  const path = `options.${name}.default`;
  if (config.multiple) {
    if (!Array.isArray(value)) throw invalidArgType(path, `an instance of Array`, value);
    value.forEach((v, i) => {
      if (typeof v !== type) throw invalidArgType(`${path}[${i}]`, `of type ${type}`, v);
    });
  } else if (typeof value !== type) {
    throw invalidArgType(path, `of type ${type}`, value);
  }
}

function checkOption(name, config) {
  const path = `options.${name}`;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw invalidArgType(path, 'of type object', config);
  if (config.type !== 'string' && config.type !== 'boolean') {
    throw invalidArgType(`${path}.type`, "('string|boolean')", config.type);
  }
  if (own(config, 'short')) {
    if (typeof config.short !== 'string') throw invalidArgType(`${path}.short`, 'of type string', config.short);
    if (config.short.length !== 1) {
      throw codedError(TypeError, 'ERR_INVALID_ARG_VALUE', `The property '${path}.short' must be a single character. Received ${inspect(config.short)}`);
    }
  }
  if (own(config, 'multiple')) checkBoolean(config.multiple, `${path}.multiple`);
  checkDefault(config, name);
}

function readConfig(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) throw invalidArgType('config', 'of type object', config);
  const args = config.args ?? [];
  if (!Array.isArray(args)) throw invalidArgType('args', 'an instance of Array', args);
  const options = config.options ?? {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalidArgType('options', 'of type object', options);
  const strict = config.strict ?? true;
  const allowPositionals = config.allowPositionals ?? !strict;
  const allowNegative = config.allowNegative ?? false;
  const tokens = config.tokens ?? false;
  checkBoolean(strict, 'strict');
  checkBoolean(allowPositionals, 'allowPositionals');
  checkBoolean(allowNegative, 'allowNegative');
  checkBoolean(tokens, 'tokens');
  for (const name of Object.keys(options)) checkOption(name, options[name]);
  const shorts = new Map();
  for (const name of Object.keys(options)) {
    const short = options[name].short;
    if (short !== undefined && !shorts.has(short)) shorts.set(short, name);
  }
  return { args: [...args], options, strict, allowPositionals, allowNegative, tokens, shorts };
}

const longFor = (config, short) => config.shorts.get(short) ?? short;
const isString = (config, name) => setting(config.options, name, 'type') === 'string';

// The tokens of one argument at `index`; `next` is the argument after it
// (taken as a value when an option wants one): [tokens, arguments used].
function tokenize(config, arg, next, index) {
  const startsDash = arg.charCodeAt(0) === 45;
  const long = startsDash && arg.charCodeAt(1) === 45;
  if (!startsDash || arg.length === 1) return [[{ kind: 'positional', index, value: arg }], 1];
  if (long && arg.length === 2) return [[{ kind: 'option-terminator', index }], 1];
  if (long) {
    const eq = arg.indexOf('=');
    if (eq > 2) {
      const name = arg.slice(2, eq);
      return [[{ kind: 'option', name, rawName: `--${name}`, index, value: arg.slice(eq + 1), inlineValue: true }], 1];
    }
    return optionWithNext(config, arg.slice(2), arg, next, index);
  }
  const name = longFor(config, arg[1]);
  if (arg.length === 2) return optionWithNext(config, name, arg, next, index);
  if (isString(config, name)) {
    return [[{ kind: 'option', name, rawName: arg.slice(0, 2), index, value: arg.slice(2), inlineValue: true }], 1];
  }
  return shortGroup(config, arg, next, index);
}

function optionWithNext(config, name, rawName, next, index) {
  if (isString(config, name) && next !== undefined) {
    return [[{ kind: 'option', name, rawName, index, value: next, inlineValue: false }], 2];
  }
  return [[{ kind: 'option', name, rawName, index, value: undefined, inlineValue: undefined }], 1];
}

// `-abc`: each letter a flag until one that takes a value, which takes the
// rest of the argument (or, as the last letter, the next argument).
function shortGroup(config, arg, next, index) {
  const out = [];
  for (let i = 1; i < arg.length; i++) {
    const name = longFor(config, arg[i]);
    if (isString(config, name) && i < arg.length - 1) {
      out.push({ kind: 'option', name, rawName: `-${arg[i]}`, index, value: arg.slice(i + 1), inlineValue: true });
      break;
    }
    if (i === arg.length - 1) {
      const [[last], used] = optionWithNext(config, name, `-${arg[i]}`, next, index);
      out.push(last);
      return [out, used];
    }
    out.push({ kind: 'option', name, rawName: `-${arg[i]}`, index, value: undefined, inlineValue: undefined });
  }
  return [out, 1];
}

function allTokens(config) {
  const out = [];
  const { args } = config;
  for (let index = 0; index < args.length;) {
    const arg = args[index];
    if (typeof arg !== 'string') {
      out.push({ kind: 'positional', index, value: arg });
      index++;
      continue;
    }
    if (arg === '--') {
      out.push({ kind: 'option-terminator', index });
      for (let i = index + 1; i < args.length; i++) out.push({ kind: 'positional', index: i, value: `${args[i]}` });
      break;
    }
    const [tokens, used] = tokenize(config, arg, args[index + 1], index);
    for (const token of tokens) out.push(token);
    index += used;
  }
  return out;
}

// `--no-name` (no value) when negatives are allowed: the token names
// `name`, which is set to false.
const isNegation = (config, token) => config.allowNegative && token.rawName.startsWith('--no-') && token.value === undefined;

// In strict mode, a negation needs a boolean option of its name.
function checkNegation(config, token) {
  if (setting(config.options, token.name, 'type') !== 'boolean') throw unknownOption(token.rawName, config.allowPositionals);
}

function checkUsage(config, token) {
  const { options } = config;
  let name = token.name;
  if (!own(options, name)) {
    const base = config.allowNegative && name.startsWith('no-') ? name.slice(3) : undefined;
    if (base === undefined || setting(options, base, 'type') !== 'boolean') throw unknownOption(token.rawName, config.allowPositionals);
    name = base;
  }
  const short = setting(options, name, 'short');
  const both = `${short ? `-${short}, ` : ''}--${name}`;
  const type = setting(options, name, 'type');
  if (type === 'string' && typeof token.value !== 'string') throw invalidValue(`Option '${both} <value>' argument missing`);
  if (type === 'boolean' && token.value != null) throw invalidValue(`Option '${both}' does not take an argument`);
  const value = token.value;
  if (!token.inlineValue && value != null && value.length > 1 && value[0] === '-') {
    const example = token.rawName.startsWith('--') ? `'${token.rawName}=-XYZ'` : `'--${token.name}=-XYZ' or '${token.rawName}-XYZ'`;
    throw invalidValue(`Option '${token.rawName}' argument is ambiguous.\nDid you forget to specify the option argument for '${token.rawName}'?\nTo specify an option argument starting with a dash use ${example}.`);
  }
}

function store(config, values, name, value) {
  if (setting(config.options, name, 'multiple')) {
    if (values[name] === undefined) values[name] = [];
    values[name].push(value);
  } else {
    values[name] = value;
  }
}

function parseArgs(input = {}) {
  const config = readConfig(input);
  const tokens = allTokens(config);
  const values = { __proto__: null };
  const positionals = [];
  for (const token of tokens) {
    if (token.kind === 'option') {
      if (isNegation(config, token)) {
        token.name = token.name.slice(3);
        if (config.strict) checkNegation(config, token);
        store(config, values, token.name, false);
        continue;
      }
      if (config.strict) checkUsage(config, token);
      if (token.name !== '__proto__') store(config, values, token.name, token.value ?? true);
    } else if (token.kind === 'positional') {
      if (!config.allowPositionals) {
        throw codedError(TypeError, 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL', `Unexpected argument '${token.value}'. This command does not take positional arguments`);
      }
      positionals.push(token.value);
    }
  }
  for (const name of Object.keys(config.options)) {
    const fallback = config.options[name].default;
    if (fallback !== undefined && values[name] === undefined) values[name] = fallback;
  }
  return config.tokens ? { values, positionals, tokens } : { values, positionals };
}

module.exports = { parseArgs };
