// 03_abort.js — AbortController and AbortSignal (DOM Standard).
'use strict';

const kCreate = Symbol('create');

class AbortSignal extends EventTarget {
  #aborted = false;
  #reason = undefined;
  #algorithms = new Set();
  #dependent = false;
  #sources = [];            // for AbortSignal.any: the signals this one follows (weakly)
  #dependents = [];         // signals made by AbortSignal.any that follow this one (weakly)

  constructor(key = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
    super();
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#aborted in self)) throw new TypeError('Illegal invocation');
  }

  get aborted() { AbortSignal.#check(this); return this.#aborted; }
  get reason() { AbortSignal.#check(this); return this.#reason; }

  throwIfAborted() {
    AbortSignal.#check(this);
    if (this.#aborted) throw this.#reason;
  }

  get onabort() { AbortSignal.#check(this); return internal.eventHandler(this, 'abort'); }
  set onabort(fn) {
    AbortSignal.#check(this);
    internal.setEventHandler(this, 'abort', fn);
  }

  static abort(reason = undefined) {
    const signal = new AbortSignal(kCreate);
    signal.#aborted = true;
    signal.#reason = reason === undefined ? defaultReason() : reason;
    return signal;
  }

  static timeout(milliseconds) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'timeout' on 'AbortSignal'");
    const ms = internal.toNumber(milliseconds);
    if (!Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) {
      throw new TypeError("Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.");
    }
    const signal = new AbortSignal(kCreate);
    internal.setTimer(() => {
      signal.#signalAbort(new internal.DOMException('The operation was aborted due to timeout', 'TimeoutError'));
    }, Math.trunc(ms));
    return signal;
  }

  static any(signals) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'any' on 'AbortSignal'");
    if (!internal.isObject(signals) || typeof signals[Symbol.iterator] !== 'function') {
      throw new TypeError("Failed to execute 'any' on 'AbortSignal': The provided value cannot be converted to a sequence.");
    }
    const list = [...signals];
    for (const s of list) {
      if (!internal.isAbortSignal(s)) {
        throw new TypeError("Failed to execute 'any' on 'AbortSignal': Failed to convert value to 'AbortSignal'.");
      }
    }
    const result = new AbortSignal(kCreate);
    for (const s of list) {
      if (s.#aborted) {
        result.#aborted = true;
        result.#reason = s.#reason;
        return result;
      }
    }
    result.#dependent = true;
    for (const s of list) {
      const sources = s.#dependent ? s.#sources.map((r) => r.deref()).filter(Boolean) : [s];
      for (const src of sources) {
        if (result.#sources.some((r) => r.deref() === src)) continue;
        result.#sources.push(new WeakRef(src));
        src.#dependents.push(new WeakRef(result));
      }
    }
    return result;
  }

  #signalAbort(reason) {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason === undefined ? defaultReason() : reason;
    const toRun = [];
    for (const ref of this.#dependents) {
      const dep = ref.deref();
      if (dep && !dep.#aborted) {
        dep.#aborted = true;
        dep.#reason = this.#reason;
        toRun.push(dep);
      }
    }
    this.#dependents = [];
    this.#runAbortSteps();
    for (const dep of toRun) dep.#runAbortSteps();
  }

  #runAbortSteps() {
    const algorithms = [...this.#algorithms];
    this.#algorithms.clear();
    for (const algorithm of algorithms) {
      try { algorithm(this.#reason); } catch (e) { internal.reportError(e); }
    }
    internal.dispatchTrusted(this, new Event('abort'));
  }

  static {
    internal.isAbortSignal = (v) => internal.isObject(v) && #aborted in v;
    internal.newAbortSignal = () => new AbortSignal(kCreate);
    internal.signalAbort = (signal, reason) => signal.#signalAbort(reason);
    // Abort algorithms: run once, in order, when the signal aborts. Returns
    // a function removing it.
    internal.abortSignalAdd = (signal, algorithm) => {
      if (signal.#aborted) return () => {};
      signal.#algorithms.add(algorithm);
      return () => signal.#algorithms.delete(algorithm);
    };
  }
}
internal.enumerableMembers(AbortSignal, ['aborted', 'reason', 'throwIfAborted', 'onabort']);
internal.setToStringTag(AbortSignal.prototype, 'AbortSignal');

function defaultReason() {
  return new internal.DOMException('This operation was aborted', 'AbortError');
}

class AbortController {
  #signal = new AbortSignal(kCreate);

  static #check(self) {
    if (!internal.isObject(self) || !(#signal in self)) throw new TypeError('Illegal invocation');
  }

  get signal() { AbortController.#check(this); return this.#signal; }

  abort(reason = undefined) {
    AbortController.#check(this);
    internal.signalAbort(this.#signal, reason);
  }
}
internal.enumerableMembers(AbortController, ['signal', 'abort']);
internal.setToStringTag(AbortController.prototype, 'AbortController');

internal.defineGlobal('AbortSignal', AbortSignal);
internal.defineGlobal('AbortController', AbortController);
