// =========================================================================
// Queuing strategies
// =========================================================================

// The two strategies differ only in their name and their `size` function.
function queuingStrategy(name, size) {
  const strategy = { [name]: class {
    #hwm;
    constructor(init) {
      internal.requireArgs(arguments.length, 1, `Failed to construct '${name}'`);
      if (!internal.isObject(init) || init.highWaterMark === undefined) {
        throw new TypeError(`Failed to construct '${name}': required member highWaterMark is undefined.`);
      }
      this.#hwm = internal.toNumber(init.highWaterMark);
    }
    get highWaterMark() {
      if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
      return this.#hwm;
    }
    get size() {
      if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
      return size;
    }
  } }[name];
  internal.enumerableMembers(strategy, ['highWaterMark', 'size']);
  internal.setToStringTag(strategy.prototype, name);
  return strategy;
}
const ByteLengthQueuingStrategy = queuingStrategy('ByteLengthQueuingStrategy', function size(chunk) { return chunk.byteLength; });
const CountQueuingStrategy = queuingStrategy('CountQueuingStrategy', function size() { return 1; });
