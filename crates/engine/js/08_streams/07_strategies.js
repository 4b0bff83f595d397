// =========================================================================
// Queuing strategies
// =========================================================================

const byteLengthSize = function size(chunk) { return chunk.byteLength; };
const countSize = function size() { return 1; };

class ByteLengthQueuingStrategy {
  #hwm;
  constructor(init) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'ByteLengthQueuingStrategy'");
    if (!internal.isObject(init) || init.highWaterMark === undefined) {
      throw new TypeError("Failed to construct 'ByteLengthQueuingStrategy': required member highWaterMark is undefined.");
    }
    this.#hwm = internal.toNumber(init.highWaterMark);
  }
  get highWaterMark() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return this.#hwm;
  }
  get size() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return byteLengthSize;
  }
}
internal.enumerableMembers(ByteLengthQueuingStrategy, ['highWaterMark', 'size']);
internal.setToStringTag(ByteLengthQueuingStrategy.prototype, 'ByteLengthQueuingStrategy');

class CountQueuingStrategy {
  #hwm;
  constructor(init) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'CountQueuingStrategy'");
    if (!internal.isObject(init) || init.highWaterMark === undefined) {
      throw new TypeError("Failed to construct 'CountQueuingStrategy': required member highWaterMark is undefined.");
    }
    this.#hwm = internal.toNumber(init.highWaterMark);
  }
  get highWaterMark() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return this.#hwm;
  }
  get size() {
    if (!internal.isObject(this) || !(#hwm in this)) throw new TypeError('Illegal invocation');
    return countSize;
  }
}
internal.enumerableMembers(CountQueuingStrategy, ['highWaterMark', 'size']);
internal.setToStringTag(CountQueuingStrategy.prototype, 'CountQueuingStrategy');

