// 20_uninterruptible.js — builtins that make a string or an array of any
// size in one step V8 cannot interrupt, bounded before they make it.
//
// Asked for more than the worker's memory has room for, they end at
// `memory_limit` before they start (host.memoryCheck), instead of taking
// hundreds of MiB past the limit (the near-heap-limit grant, or none at all
// for a string built in one large-object allocation) and holding the thread
// for seconds. Where the size is known up front (repeat, padStart/padEnd,
// fill, split(''), the separators of join) it is checked first. Where it is
// not (a global replace: how many matches), the replacement runs through a
// function that counts what it has produced so far: V8 calls it once per
// match, from JavaScript, so the count is checked, and termination lands,
// before the result is built. That slower road is taken only when the
// result could pass HUGE; smaller work runs on the natives unchanged.
// The wrappers convert their arguments themselves and pass the natives
// primitives, so what was checked is what is made.
'use strict';

const HUGE = 1 << 20;
const nativeRepeat = String.prototype.repeat;
const nativePadStart = String.prototype.padStart;
const nativePadEnd = String.prototype.padEnd;
const nativeReplace = String.prototype.replace;
const nativeReplaceAll = String.prototype.replaceAll;
const nativeSplit = String.prototype.split;
const nativeFill = Array.prototype.fill;
const nativeJoin = Array.prototype.join;
const nativeSlice = String.prototype.slice;
const nativeIndexOf = String.prototype.indexOf;
const nativeCharCodeAt = String.prototype.charCodeAt;
const nativeExec = RegExp.prototype.exec;
const { apply } = Reflect;
const { isArray } = Array;
const { max, min, trunc } = Math;

function toIntegerOrInfinity(value) {
  const number = +value;
  return number !== number ? 0 : trunc(number);
}

function coercibleString(value, method) {
  if (value === null || value === undefined) {
    throw new TypeError(`String.prototype.${method} called on null or undefined`);
  }
  return `${value}`;
}

function redefine(target, name, method) {
  Object.defineProperty(target, name, { value: method, writable: true, enumerable: false, configurable: true });
}

// Bytes for `length` elements of an array: a tagged pointer or an unboxed
// double each (this V8 has no pointer compression).
function elementBytes(length) {
  return length * 8;
}

redefine(String.prototype, 'repeat', {
  repeat(count) {
    const string = coercibleString(this, 'repeat');
    const times = +count;
    const size = string.length * times;
    if (size > HUGE && size !== Infinity) host.memoryCheck(size);
    return apply(nativeRepeat, string, [times]);
  },
}.repeat);

for (const [name, native] of [['padStart', nativePadStart], ['padEnd', nativePadEnd]]) {
  redefine(String.prototype, name, {
    [name](maxLength, ...fill) {
      const string = coercibleString(this, name);
      const length = +maxLength;
      const filler = fill[0] === undefined ? undefined : `${fill[0]}`;
      if (length > HUGE && filler !== '') host.memoryCheck(length);
      return apply(native, string, filler === undefined ? [length] : [length, filler]);
    },
  }[name]);
}

redefine(Array.prototype, 'fill', {
  fill(value, ...range) {
    if (this === null || this === undefined) {
      throw new TypeError('Array.prototype.fill called on null or undefined');
    }
    const object = Object(this);
    const length = min(max(toIntegerOrInfinity(object.length), 0), Number.MAX_SAFE_INTEGER);
    const start = toIntegerOrInfinity(range[0]);
    const from = start < 0 ? max(length + start, 0) : min(start, length);
    const end = range[1] === undefined ? length : toIntegerOrInfinity(range[1]);
    const to = end < 0 ? max(length + end, 0) : min(end, length);
    const size = elementBytes(to - from);
    if (size > HUGE) host.memoryCheck(size);
    return apply(nativeFill, object, [value, from, to]);
  },
}.fill);

// A replacer that hands back what `produce` makes for each match and
// checks, each time the total grows by HUGE, that the result still fits
// beside what the turn holds now (the pieces made so far are on the heap;
// the result is made from them at the end). Checked at each doubling
// against the heap as last measured, a 256 MiB replace under 64 MiB took
// the process 164 MiB past where it started before it was stopped.
function counting(produce) {
  let total = 0;
  let next = HUGE;
  return function countedReplacement(...args) {
    const piece = `${apply(produce, undefined, args)}`;
    total += piece.length;
    if (total > next) {
      // The result to come, and as much again of V8's own while it
      // replaces (its list of pieces, the matches' arguments).
      host.memoryCheckNow(2 * total);
      next = total + HUGE;
    }
    return piece;
  };
}

// ECMAScript GetSubstitution: `template` ($$, $&, $`, $', $n, $nn, $<name>)
// for one match, as the natives apply a replacement string.
function substitute(template, matched, position, string, captures, groups) {
  let out = '';
  let i = 0;
  for (;;) {
    const dollar = apply(nativeIndexOf, template, ['$', i]);
    if (dollar === -1 || dollar === template.length - 1) break;
    out += apply(nativeSlice, template, [i, dollar]);
    const c = template[dollar + 1];
    i = dollar + 2;
    if (c === '$') out += '$';
    else if (c === '&') out += matched;
    else if (c === '`') out += apply(nativeSlice, string, [0, position]);
    else if (c === "'") out += apply(nativeSlice, string, [min(position + matched.length, string.length)]);
    else if (c >= '0' && c <= '9') {
      const second = apply(nativeCharCodeAt, template, [i]) - 48;
      let index = c.charCodeAt(0) - 48;
      if (second >= 0 && second <= 9 && index * 10 + second >= 1 && index * 10 + second <= captures.length) {
        index = index * 10 + second;
        i += 1;
      }
      if (index >= 1 && index <= captures.length) out += captures[index - 1] ?? '';
      else out += `$${c}`;
    } else if (c === '<' && groups !== undefined) {
      const close = apply(nativeIndexOf, template, ['>', i]);
      if (close === -1) {
        out += '$<';
      } else {
        const capture = groups[apply(nativeSlice, template, [i, close])];
        out += capture === undefined ? '' : `${capture}`;
        i = close + 1;
      }
    } else {
      out += `$${c}`;
    }
  }
  return out + apply(nativeSlice, template, [i]);
}

// What replacing with the string `template` makes for one match, called
// as a replacer is: (matched, ...captures, position, string[, groups]).
function templated(template) {
  if (apply(nativeIndexOf, template, ['$']) === -1) return () => template;
  return (...args) => {
    const named = typeof args[args.length - 1] !== 'string';
    const groups = named ? args[args.length - 1] : undefined;
    const end = named ? args.length - 3 : args.length - 2;
    return substitute(template, args[0], args[end], args[end + 1], args.slice(1, end), groups);
  };
}

// The most that replacing in a string of `length` with `template` can
// add: at most one match a position and one at the end, each adding the
// template; a `$n`, `$&` or `$<name>` adds a part of its match (matches do
// not overlap: their parts add up to at most `length` a reference), and a
// $` or $' up to `length` a match.
function mostMade(length, template) {
  let references = 0;
  for (let i = apply(nativeIndexOf, template, ['$']); i !== -1; i = apply(nativeIndexOf, template, ['$', i + 1])) {
    const c = template[i + 1];
    if (c === '`' || c === "'") return (length + 1) * (template.length + length);
    references += 1;
  }
  return (length + 1) * template.length + references * length;
}

// The replacement to hand the native: counted when what it makes could be
// huge (a function's results always could be).
function bounded(string, replaceValue) {
  if (typeof replaceValue === 'function') return counting(replaceValue);
  const template = `${replaceValue}`;
  return mostMade(string.length, template) > HUGE ? counting(templated(template)) : template;
}

// V8 replaces a global RegExp by first collecting every match (some 40
// bytes each) and only then making the replacements: in a long string
// that list alone passes the limit before any counting can stop it (16 M
// matches took the process 656 MiB past a 64 MiB limit). So where the list
// could take a quarter of the limit, a plain global RegExp (its `exec` and
// `@@replace` the natives) is replaced here, match by match, the pieces
// joined in chunks: what is held is the result so far, which the counting
// replacement checks as it grows. One departure: a replacer function is
// called after each match rather than after all of them (only a function
// that reads the RegExp's `lastIndex` could tell).
const MATCH_BYTES = 40;
const CHUNK = 4096;
const nativeSymbolReplace = RegExp.prototype[Symbol.replace];
const { getPrototypeOf } = Object;

function plainGlobal(regexp) {
  return regexp instanceof RegExp && getPrototypeOf(regexp) === RegExp.prototype &&
    regexp.exec === nativeExec && regexp[Symbol.replace] === nativeSymbolReplace && regexp.global;
}

// The index after `index` in `string`: a code point further in unicode mode.
function advance(string, index, unicode) {
  if (!unicode || index + 1 >= string.length) return index + 1;
  const first = apply(nativeCharCodeAt, string, [index]);
  if (first < 0xd800 || first > 0xdbff) return index + 1;
  const second = apply(nativeCharCodeAt, string, [index + 1]);
  return second >= 0xdc00 && second <= 0xdfff ? index + 2 : index + 1;
}

// `produce`'s arguments for `match`: (matched, ...captures, position,
// string[, groups]), as the native passes a replacer function.
function replacerArgs(match, string) {
  const args = [`${match[0]}`];
  const count = max(toIntegerOrInfinity(match.length) - 1, 0);
  for (let n = 1; n <= count; n++) {
    const capture = match[n];
    args[n] = capture === undefined ? undefined : `${capture}`;
  }
  args[args.length] = max(min(toIntegerOrInfinity(match.index), string.length), 0);
  args[args.length] = string;
  const { groups } = match;
  if (groups !== undefined) args[args.length] = groups;
  return args;
}

function replaceEachMatch(string, regexp, produce) {
  const unicode = regexp.unicode || regexp.unicodeSets;
  regexp.lastIndex = 0;
  const chunks = [];
  let pieces = [];
  let position = 0;
  for (;;) {
    const match = apply(nativeExec, regexp, [string]);
    if (match === null) break;
    const args = replacerArgs(match, string);
    const matched = args[0];
    if (matched === '') regexp.lastIndex = advance(string, toIntegerOrInfinity(regexp.lastIndex), unicode);
    const at = args[args.length - (match.groups === undefined ? 2 : 3)];
    const replacement = `${apply(produce, undefined, args)}`;
    if (at >= position) {
      pieces[pieces.length] = apply(nativeSlice, string, [position, at]);
      pieces[pieces.length] = replacement;
      position = at + matched.length;
    }
    if (pieces.length >= CHUNK) {
      chunks[chunks.length] = apply(nativeJoin, pieces, ['']);
      pieces = [];
    }
  }
  pieces[pieces.length] = apply(nativeSlice, string, [position]);
  chunks[chunks.length] = apply(nativeJoin, pieces, ['']);
  return apply(nativeJoin, chunks, ['']);
}

for (const [name, native] of [['replace', nativeReplace], ['replaceAll', nativeReplaceAll]]) {
  redefine(String.prototype, name, {
    [name](searchValue, replaceValue) {
      if (typeof this !== 'string' || (typeof replaceValue !== 'string' && typeof replaceValue !== 'function')) {
        return apply(native, this, [searchValue, replaceValue]);
      }
      const replacement = bounded(this, replaceValue);
      if ((this.length + 1) * MATCH_BYTES * 4 > HUGE && plainGlobal(searchValue) &&
          (this.length + 1) * MATCH_BYTES * 4 > host.memoryLimit()) {
        const produce = typeof replacement === 'function' ? replacement : templated(replacement);
        return replaceEachMatch(this, searchValue, produce);
      }
      return apply(native, this, [searchValue, replacement]);
    },
  }[name]);
}

redefine(String.prototype, 'split', {
  split(separator, limit) {
    if (separator === '' && typeof this === 'string') {
      // A limit that is not a number is converted by the native alone.
      const most = typeof limit === 'number' ? limit >>> 0 : 2 ** 32 - 1;
      const pieces = limit === undefined || typeof limit === 'number' ? min(this.length, most) : 0;
      if (elementBytes(pieces) > HUGE) host.memoryCheck(elementBytes(pieces));
    }
    return apply(nativeSplit, this, [separator, limit]);
  },
}.split);

redefine(Array.prototype, 'join', {
  join(separator) {
    if (this === null || this === undefined) {
      throw new TypeError('Array.prototype.join called on null or undefined');
    }
    const object = Object(this);
    const length = min(max(toIntegerOrInfinity(object.length), 0), Number.MAX_SAFE_INTEGER);
    const sep = separator === undefined ? ',' : `${separator}`;
    let size = (length - 1) * sep.length;
    if (length > 1 && Array.isArray(object)) {
      // The elements' own strings, those already strings (counting them
      // converts nothing, so no worker code runs twice). A few large
      // strings (or ropes, which cost nothing until joined) make a huge
      // result as surely as many small ones: 260 of 1 MiB took the process
      // 261 MiB past a 64 MiB limit before the join was stopped.
      for (let i = 0; i < length; i++) {
        const element = object[i];
        if (typeof element === 'string') size += element.length;
      }
    }
    if (size > HUGE) host.memoryCheckNow(size);
    return apply(nativeJoin, object, [sep]);
  },
}.join);

// Arrays made from other arrays in one native step (`concat`, `flat`):
// their length is counted first from the arrays' own lengths (reading a
// length converts nothing), and the result checked before it is made.
// 64 references to one array of 2^20 numbers, flattened, took the process
// 520 MiB past a 64 MiB limit.
const nativeConcat = Array.prototype.concat;
const nativeFlat = Array.prototype.flat;

// Elements `flat` makes of `array` down to `depth` (arrays only, as the
// native flattens only arrays), stopping once past `most`.
function flatLength(array, depth, most) {
  let count = 0;
  const length = min(max(toIntegerOrInfinity(array.length), 0), Number.MAX_SAFE_INTEGER);
  for (let i = 0; i < length && count <= most; i++) {
    const element = array[i];
    count += depth >= 1 && isArray(element) ? flatLength(element, depth - 1, most - count) : 1;
  }
  return count;
}

// (`arguments`, not rest parameters: the methods keep the natives'
// lengths, and the natives get exactly the arguments given.)
redefine(Array.prototype, 'flat', {
  flat() {
    if (isArray(this)) {
      const depth = arguments[0] === undefined ? 1 : toIntegerOrInfinity(arguments[0]);
      const size = elementBytes(flatLength(this, depth, 2 ** 32));
      if (size > HUGE) host.memoryCheckNow(size);
    }
    return apply(nativeFlat, this, arguments);
  },
}.flat);

redefine(Array.prototype, 'concat', {
  concat(_item) {
    let length = isArray(this) ? this.length : 1;
    for (let i = 0; i < arguments.length; i++) {
      const item = arguments[i];
      length += isArray(item) ? item.length : 1;
    }
    const size = elementBytes(length);
    if (size > HUGE) host.memoryCheckNow(size);
    return apply(nativeConcat, this, arguments);
  },
}.concat);
