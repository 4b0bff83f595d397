// 02_event.js — Event and EventTarget (DOM Standard, without a tree: every
// dispatch is at the target).
'use strict';

const NONE = 0, CAPTURING_PHASE = 1, AT_TARGET = 2, BUBBLING_PHASE = 3;

class Event {
  #type;
  #bubbles;
  #cancelable;
  #composed;
  #target = null;
  #currentTarget = null;
  #phase = NONE;
  #canceled = false;
  #stopPropagation = false;
  #stopImmediate = false;
  #inPassiveListener = false;
  #dispatching = false;
  #trusted = false;
  #timeStamp;

  constructor(type, eventInitDict = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to construct 'Event'");
    this.#type = internal.toDOMString(type);
    const init = internal.toDictionary(eventInitDict, 'EventInit');
    this.#bubbles = !!init.bubbles;
    this.#cancelable = !!init.cancelable;
    this.#composed = !!init.composed;
    this.#timeStamp = internal.now ? internal.now() : 0;
  }

  static #check(self) {
    if (!internal.isObject(self) || !(#type in self)) throw new TypeError('Illegal invocation');
  }

  get type() { Event.#check(this); return this.#type; }
  get target() { Event.#check(this); return this.#target; }
  get srcElement() { Event.#check(this); return this.#target; }
  get currentTarget() { Event.#check(this); return this.#currentTarget; }
  get eventPhase() { Event.#check(this); return this.#phase; }
  get bubbles() { Event.#check(this); return this.#bubbles; }
  get cancelable() { Event.#check(this); return this.#cancelable; }
  get composed() { Event.#check(this); return this.#composed; }
  get defaultPrevented() { Event.#check(this); return this.#canceled; }
  get isTrusted() { Event.#check(this); return this.#trusted; }
  get timeStamp() { Event.#check(this); return this.#timeStamp; }
  get returnValue() { Event.#check(this); return !this.#canceled; }
  set returnValue(v) { Event.#check(this); if (!v) this.#cancel(); }
  get cancelBubble() { Event.#check(this); return this.#stopPropagation; }
  set cancelBubble(v) { Event.#check(this); if (v) this.#stopPropagation = true; }

  composedPath() {
    Event.#check(this);
    return this.#dispatching && this.#currentTarget !== null ? [this.#currentTarget] : [];
  }
  stopPropagation() { Event.#check(this); this.#stopPropagation = true; }
  stopImmediatePropagation() { Event.#check(this); this.#stopPropagation = true; this.#stopImmediate = true; }
  preventDefault() { Event.#check(this); this.#cancel(); }
  #cancel() {
    if (this.#cancelable && !this.#inPassiveListener) this.#canceled = true;
  }
  initEvent(type, bubbles = false, cancelable = false) {
    Event.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'initEvent' on 'Event'");
    if (this.#dispatching) return;
    this.#type = internal.toDOMString(type);
    this.#bubbles = !!bubbles;
    this.#cancelable = !!cancelable;
    this.#stopPropagation = this.#stopImmediate = this.#canceled = false;
    this.#target = null;
  }

  static {
    internal.isEvent = (v) => internal.isObject(v) && #type in v;
    internal.setEventTrusted = (e, v) => { e.#trusted = v; };
    // The dispatch algorithm for a target without parents.
    // `onError(e)` receives exceptions from listeners (default: report them).
    internal.eventDispatch = (target, event, listenersOf, onError) => {
      if (event.#dispatching) {
        throw new internal.DOMException('The event is already being dispatched.', 'InvalidStateError');
      }
      event.#dispatching = true;
      event.#target = target;
      event.#currentTarget = target;
      event.#phase = AT_TARGET;
      try {
        const list = listenersOf(event.#type);
        if (list) {
          for (const l of list.slice()) {
            if (l.removed) continue;
            if (event.#stopImmediate) break;
            if (l.once) l.remove();
            event.#inPassiveListener = l.passive;
            try {
              const cb = l.callback;
              if (typeof cb === 'function') {
                cb.call(target, event);
              } else {
                const handleEvent = cb.handleEvent;
                if (typeof handleEvent !== 'function') {
                  throw new TypeError("The listener's 'handleEvent' property is not a function.");
                }
                handleEvent.call(cb, event);
              }
            } catch (e) {
              (onError || internal.reportError)(e);
            } finally {
              event.#inPassiveListener = false;
            }
          }
        }
      } finally {
        event.#dispatching = false;
        event.#phase = NONE;
        event.#currentTarget = null;
        event.#stopPropagation = false;
        event.#stopImmediate = false;
      }
      return !event.#canceled;
    };
  }
}

for (const [k, v] of Object.entries({ NONE, CAPTURING_PHASE, AT_TARGET, BUBBLING_PHASE })) {
  const d = { value: v, writable: false, enumerable: true, configurable: false };
  Object.defineProperty(Event, k, d);
  Object.defineProperty(Event.prototype, k, d);
}
internal.enumerableMembers(Event, ['type', 'target', 'srcElement', 'currentTarget', 'eventPhase', 'bubbles',
  'cancelable', 'composed', 'defaultPrevented', 'isTrusted', 'timeStamp', 'returnValue', 'cancelBubble',
  'composedPath', 'stopPropagation', 'stopImmediatePropagation', 'preventDefault', 'initEvent']);
internal.setToStringTag(Event.prototype, 'Event');

function flattenOptions(options) {
  if (typeof options === 'boolean' || !internal.isObject(options)) return { capture: !!options };
  return { capture: !!options.capture };
}

class EventTarget {
  #listeners = new Map(); // type -> array of listener records

  constructor() {}

  static #check(self) {
    if (!internal.isObject(self) || !(#listeners in self)) throw new TypeError('Illegal invocation');
  }

  addEventListener(type, callback, options = undefined) {
    EventTarget.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'addEventListener' on 'EventTarget'");
    type = internal.toDOMString(type);
    if (callback !== null && !internal.isObject(callback)) {
      throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': parameter 2 is not of type 'EventListener'.");
    }
    let capture = false, once = false, passive = false, signal = undefined;
    if (typeof options === 'boolean' || !internal.isObject(options)) {
      capture = !!options;
    } else {
      capture = !!options.capture;
      once = !!options.once;
      passive = !!options.passive;
      signal = options.signal;
      if (signal !== undefined && !internal.isAbortSignal(signal)) {
        throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': member signal is not of type AbortSignal.");
      }
    }
    if (callback === null) return;
    if (signal !== undefined && signal.aborted) return;
    let list = this.#listeners.get(type);
    if (!list) { list = []; this.#listeners.set(type, list); }
    if (list.some((l) => l.callback === callback && l.capture === capture)) return;
    const record = {
      callback, capture, once, passive, removed: false,
      remove: () => {
        record.removed = true;
        const cur = this.#listeners.get(type);
        if (!cur) return;
        const i = cur.indexOf(record);
        if (i >= 0) cur.splice(i, 1);
        if (cur.length === 0) this.#listeners.delete(type);
      },
    };
    list.push(record);
    if (signal !== undefined) internal.abortSignalAdd(signal, record.remove);
  }

  removeEventListener(type, callback, options = undefined) {
    EventTarget.#check(this);
    internal.requireArgs(arguments.length, 2, "Failed to execute 'removeEventListener' on 'EventTarget'");
    type = internal.toDOMString(type);
    const { capture } = flattenOptions(options);
    const list = this.#listeners.get(type);
    if (!list) return;
    const record = list.find((l) => l.callback === callback && l.capture === capture);
    if (record) record.remove();
  }

  dispatchEvent(event) {
    EventTarget.#check(this);
    internal.requireArgs(arguments.length, 1, "Failed to execute 'dispatchEvent' on 'EventTarget'");
    if (!internal.isEvent(event)) {
      throw new TypeError("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
    }
    internal.setEventTrusted(event, false);
    return internal.eventDispatch(this, event, (type) => this.#listeners.get(type));
  }

  static {
    internal.isEventTarget = (v) => internal.isObject(v) && #listeners in v;
    internal.listenerCount = (target, type) => target.#listeners.get(type)?.length ?? 0;
    // Dispatch as the platform does (isTrusted true), with a custom error sink.
    internal.dispatchTrusted = (target, event, onError) => {
      internal.setEventTrusted(event, true);
      return internal.eventDispatch(target, event, (type) => target.#listeners.get(type), onError);
    };
  }
}
internal.enumerableMembers(EventTarget, ['addEventListener', 'removeEventListener', 'dispatchEvent']);
internal.setToStringTag(EventTarget.prototype, 'EventTarget');

// Event handler attributes (`onmessage`, ...: HTML's EventHandler, as the
// standards and workerd have them): one listener per target and type,
// added when a handler is first set, which calls whatever handler is set at
// the time (so replacing one keeps its place among the listeners); null,
// or anything not an object, removes it. A handler returning false cancels
// the event. The listener goes through EventTarget's own methods, whatever
// a subclass or a Worker did to them.
const handlers = new WeakMap(); // target -> Map(type -> { fn, listener })
internal.eventHandler = (target, type) => handlers.get(target)?.get(type)?.fn ?? null;
internal.setEventHandler = (target, type, fn) => {
  let byType = handlers.get(target);
  const set = byType?.get(type);
  if (!internal.isObject(fn)) {
    if (set !== undefined) {
      EventTarget.prototype.removeEventListener.call(target, type, set.listener);
      byType.delete(type);
    }
    return;
  }
  if (set !== undefined) {
    set.fn = fn;
    return;
  }
  if (byType === undefined) {
    byType = new Map();
    handlers.set(target, byType);
  }
  const entry = { fn, listener: null };
  entry.listener = (event) => {
    if (typeof entry.fn !== 'function') return;
    if (entry.fn.call(target, event) === false) event.preventDefault();
  };
  byType.set(type, entry);
  EventTarget.prototype.addEventListener.call(target, type, entry.listener);
};

// An Event interface `name` with an init dictionary: its read-only members are the dictionary's `fields`, each
// `{ member: convert }` (read in that order), as CustomEvent, ErrorEvent, MessageEvent and CloseEvent have them.
internal.eventClass = function eventClass(name, fields) {
  const own = new WeakMap();
  const cls = class extends Event {
    constructor(type, eventInitDict = undefined) {
      internal.requireArgs(arguments.length, 1, `Failed to construct '${name}'`);
      const init = internal.toDictionary(eventInitDict, `${name}Init`);
      super(type, init);
      const values = {};
      for (const [key, convert] of Object.entries(fields)) values[key] = convert(init[key]);
      own.set(this, values);
    }
  };
  for (const key of Object.keys(fields)) {
    const get = { [`get ${key}`]() {
      if (!own.has(this)) throw new TypeError('Illegal invocation');
      return own.get(this)[key];
    } }[`get ${key}`];
    Object.defineProperty(cls.prototype, key, { get, enumerable: true, configurable: true });
  }
  Object.defineProperty(cls, 'name', { value: name });
  internal.setToStringTag(cls.prototype, name);
  return cls;
};

const orNull = (v) => (v === undefined ? null : v);
const orEmpty = (convert) => (v) => (v === undefined ? '' : convert(v));
const unsigned = (v) => (v === undefined ? 0 : internal.toNumber(v) >>> 0);
// CustomEvent (DOM Standard): an Event carrying `detail`.
const CustomEvent = internal.eventClass('CustomEvent', { detail: orNull });
// ErrorEvent (HTML Standard): what `reportError` dispatches at the global.
const ErrorEvent = internal.eventClass('ErrorEvent', {
  message: orEmpty(internal.toDOMString),
  filename: orEmpty(internal.toUSVString),
  lineno: unsigned,
  colno: unsigned,
  error: (v) => v,
});

internal.defineGlobal('Event', Event);
internal.defineGlobal('EventTarget', EventTarget);
internal.defineGlobal('CustomEvent', CustomEvent);
internal.defineGlobal('ErrorEvent', ErrorEvent);
