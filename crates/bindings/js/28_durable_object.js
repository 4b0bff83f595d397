// 28_durable_object.js — Durable Objects: the DurableObjectNamespace a
// Worker's Durable Object binding puts in its `env`
// (`internal.durableObjectNamespace(binding, className, env)`, called by the
// engine as it builds `env`), its ids and stubs, and each object's state and
// storage, over host.objectIdFromName/objectNewUniqueId/objectIdValid and
// host.objectGet/objectWrite/objectList and
// host.objectGetAlarm/objectSetAlarm; internal.deliverAlarm runs an alarm. Objects live in the isolate of
// the Worker that exports their class, on their home thread (one instance
// per id in the process: calls from other threads are forwarded there,
// host.objectIsHome/objectCall); their keys in the Worker's own
// Kubernetes namespace (the host scopes every operation).
//
// Gates, as workerd's (docs/durable-objects.md, "Gates"): the input gate
// keeps other events out while a read is in flight and until its turn's
// microtasks ran; the output gate holds a stub call's answer until every
// write so far is durable. Values are cached per object (serialized).
// Idle objects leave memory (sweep below; docs: "Memory"); hibernatable
// sockets stay on the host (isolane-web's src/websocket/hibernation.rs). A SQLite-backed class's
// `storage.sql` is isolane-bindings' (js/34_durable_sql.js,
// internal.openSqlDatabase / sqlStorageOf): its writes join the output gate
// through `storage.chainWrite`.
'use strict';

const kCreate = Symbol('create');

// ---- ids ----

class DurableObjectId {
  #id;
  #name;

  constructor(key = undefined, id = '', name = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#id = id;
    this.#name = name;
  }

  toString() { return this.#id; }

  equals(other) {
    return other instanceof DurableObjectId && other.#id === this.#id;
  }

  get name() { return this.#name; }

  static idOf(id) { return id.#id; }
}
internal.enumerableMembers(DurableObjectId, ['toString', 'equals', 'name'], 'DurableObjectId');

// ---- the input gate ----

class InputGate {
  #locks = 0;
  #waiters = [];

  lock() { this.#locks += 1; }

  // Released in a later turn, after this turn's microtasks, so the
  // continuation of an awaited read runs before another event.
  unlockLater() {
    host.objectNextTurn().then(() => this.unlock(), () => this.unlock());
  }

  // One waiting event at a time: it locks the gate as it starts.
  unlock() {
    this.#locks -= 1;
    if (this.#locks === 0 && this.#waiters.length > 0) this.#waiters.shift()();
  }

  idle() { return this.#locks === 0 && this.#waiters.length === 0; }

  // Resolves, with the gate locked for the caller, when no lock is held;
  // the caller unlocks (`unlockLater`).
  enter() {
    if (this.#locks === 0 && this.#waiters.length === 0) {
      this.#locks += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(() => {
      this.#locks += 1;
      resolve();
    }));
  }
}

// ---- storage ----

const checkKey = (key) => (typeof key === 'string' ? key : String(key));

function keyList(keys, what) {
  const list = [...keys].map(checkKey);
  if (list.length > 128) throw new RangeError(`Operations on more than 128 keys at once are not allowed (${what} of ${list.length}).`);
  return list;
}

const ABSENT = null;

class DurableObjectStorage {
  #object;
  // key → serialized bytes, or null when known absent.
  #cache = new Map();
  // Writes not yet handed to the store: key → bytes or null (delete).
  #pending = new Map();
  #pendingDeleteAll = false;
  // After deleteAll: keys not in the cache are known absent.
  #allKnown = false;
  // Settles when every write handed over so far is durable.
  #durable = Promise.resolve();
  #flushQueued = false;

  constructor(key = undefined, object = null) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#object = object;
  }

  // A read of `keys` missing from the cache, under the input gate.
  async #load(keys) {
    const o = this.#object;
    o.gate.lock();
    try {
      // Read only once this instance owns the object: a write of an
      // earlier owner is then either in the store or refused.
      await o.epoch;
      const values = await o.track(host.objectGet(o.className, o.id, keys));
      keys.forEach((key, i) => {
        if (!this.#cache.has(key)) this.#cache.set(key, values[i]);
      });
    } finally {
      o.gate.unlockLater();
    }
  }

  #cached(key) {
    if (this.#cache.has(key)) return this.#cache.get(key);
    return this.#allKnown ? ABSENT : undefined;
  }

  async get(keys, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'get' on 'DurableObjectStorage'");
    void options;
    const many = Array.isArray(keys);
    const list = many ? keyList(keys, 'get') : [checkKey(keys)];
    const missing = list.filter((key) => this.#cached(key) === undefined);
    if (missing.length > 0) await this.#load([...new Set(missing)]);
    const read = (key) => {
      const bytes = this.#cached(key);
      return bytes === undefined || bytes === ABSENT ? undefined : host.deserialize(bytes);
    };
    if (!many) return read(list[0]);
    const out = new Map();
    for (const key of [...list].sort()) {
      const value = read(key);
      if (value !== undefined) out.set(key, value);
    }
    return out;
  }

  // Records writes in the cache now and hands them to the store at the
  // end of the turn, all of them in one atomic write.
  #write(entries) {
    for (const [key, bytes] of entries) {
      this.#cache.set(key, bytes);
      this.#pending.set(key, bytes);
    }
    this.#queueFlush();
  }

  #queueFlush() {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    const o = this.#object;
    this.#durable = o.track(this.#durable.then(() => {
      this.#flushQueued = false;
      const entries = [...this.#pending];
      const deleteAll = this.#pendingDeleteAll;
      this.#pending = new Map();
      this.#pendingDeleteAll = false;
      if (entries.length === 0 && !deleteAll) return undefined;
      // Fenced by the instance's owner epoch: refused once another
      // instance has taken the object.
      return o.epoch.then((epoch) => host.objectWrite(o.className, o.id, entries, deleteAll, epoch));
    })).then(undefined, (e) => {
      // A failed write breaks the object: its cache no longer matches the
      // store, so the next event gets a new instance that reads again.
      o.broken(e);
      throw e;
    });
  }

  put(keyOrEntries, value = undefined, options = undefined) {
    try {
      internal.requireArgs(arguments.length, 1, "Failed to execute 'put' on 'DurableObjectStorage'");
      let entries;
      if (typeof keyOrEntries === 'string' || arguments.length >= 2 && !internal.isObject(keyOrEntries)) {
        if (arguments.length < 2) throw new TypeError('put() needs a value.');
        entries = [[checkKey(keyOrEntries), value]];
        void options;
      } else if (internal.isObject(keyOrEntries)) {
        entries = Object.entries(keyOrEntries);
        keyList(entries.map(([k]) => k), 'put');
      } else {
        throw new TypeError('put() takes a key and a value, or an object of entries.');
      }
      const serialized = entries.map(([key, v]) => {
        if (v === undefined) throw new TypeError('Cannot store undefined in a Durable Object.');
        const bytes = host.serialize(v);
        if (bytes.byteLength > 131072) {
          throw new RangeError(`Values cannot be larger than 131072 bytes; this one is ${bytes.byteLength} bytes once serialized.`);
        }
        return [key, bytes];
      });
      this.#write(serialized);
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  async delete(keys, options = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'delete' on 'DurableObjectStorage'");
    void options;
    const many = Array.isArray(keys);
    const list = many ? keyList(keys, 'delete') : [checkKey(keys)];
    // Whether each existed, as workerd answers: read what is not cached.
    const missing = list.filter((key) => this.#cached(key) === undefined);
    if (missing.length > 0) await this.#load([...new Set(missing)]);
    let count = 0;
    for (const key of new Set(list)) {
      const bytes = this.#cached(key);
      if (bytes !== undefined && bytes !== ABSENT) count += 1;
    }
    this.#write(list.map((key) => [key, ABSENT]));
    return many ? count : count > 0;
  }

  async deleteAll(options = undefined) {
    void options;
    this.#cache.clear();
    this.#pending.clear();
    this.#pendingDeleteAll = true;
    this.#allKnown = true;
    this.#queueFlush();
    await this.#durable;
  }

  async list(options = undefined) {
    const o = internal.toDictionary(options, 'list() options');
    const text = (v) => (v === undefined || v === null ? null : String(v));
    if (o.limit !== undefined && !(Number(o.limit) >= 1)) throw new RangeError('list() limit must be a positive number.');
    const object = this.#object;
    object.gate.lock();
    try {
      // Writes made so far go first, so the store answers for them too
      // (and the instance owns the object before it reads).
      await object.epoch;
      await this.sync();
      const rows = await object.track(host.objectList(object.className, object.id, text(o.start), text(o.end),
        text(o.prefix), o.limit, Boolean(o.reverse)));
      const out = new Map();
      for (const [key, bytes] of rows) {
        if (!this.#cache.has(key)) this.#cache.set(key, bytes);
        out.set(key, host.deserialize(bytes));
      }
      return out;
    } finally {
      object.gate.unlockLater();
    }
  }

  // Runs `closure(txn)`: its writes land together, or none if it throws
  // or calls `txn.rollback()`.
  async transaction(closure) {
    if (typeof closure !== 'function') throw new TypeError('transaction() needs a function.');
    const txn = new DurableObjectTransaction(kCreate, this);
    const result = await closure(txn);
    txn.commit();
    return result;
  }

  // Resolves when every write made so far is durable.
  sync() { return this.#durable.then(() => undefined); }

  // The SQL API of a SQLite-backed class (Cloudflare's error otherwise).
  get sql() { return internal.sqlStorageOf(this.#object); }

  transactionSync(closure) { return internal.sqlTransactionSync(this.#object, closure); }

  // Runs `write()` (a promise) after the writes before it; the output gate
  // waits for it as for them, and its failure breaks the object.
  chainWrite(write) {
    const o = this.#object;
    this.#durable = o.track(this.#durable.then(write)).then(undefined, (e) => {
      o.broken(e);
      throw e;
    });
  }

  // What a transaction commits: serialized entries, as one write.
  commitEntries(entries) { this.#write(entries); }

  // The object's alarm (ms since the epoch) or null, after every write
  // made so far (a setAlarm included) is durable. As workerd's: from the
  // start of an alarm() delivery the alarm that fires looks deleted
  // (null), unless the object sets or deletes its alarm again.
  async getAlarm(options = undefined) {
    void options;
    const o = this.#object;
    await this.sync();
    if (o.alarmFiring) return null;
    return o.track(host.objectGetAlarm(o.className, o.id));
  }

  // One alarm per object: a later setAlarm replaces it. A time in the past
  // fires as soon as it can.
  setAlarm(scheduledTime, options = undefined) {
    try {
      internal.requireArgs(arguments.length, 1, "Failed to execute 'setAlarm' on 'DurableObjectStorage'");
      void options;
      const time = scheduledTime instanceof Date ? scheduledTime.getTime() : Number(scheduledTime);
      if (!Number.isFinite(time)) throw new TypeError('setAlarm() needs a Date or a number of milliseconds since the epoch.');
      if (!this.#object.hasAlarmHandler()) {
        throw new TypeError('Your Durable Object class must have an alarm() handler in order to call setAlarm().');
      }
      return this.#alarmWrite(Math.trunc(time));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  deleteAlarm(options = undefined) {
    void options;
    return this.#alarmWrite(null);
  }

  // An alarm write, in order with the object's other writes (the output
  // gate waits for it as for them).
  #alarmWrite(time) {
    const o = this.#object;
    o.alarmFiring = false;
    // Fenced as the object's other writes: a stale instance cannot set
    // or delete the alarm.
    this.chainWrite(() => o.epoch.then((epoch) => host.objectSetAlarm(o.className, o.id, time, epoch)));
    return this.sync();
  }
}
internal.enumerableMembers(DurableObjectStorage, ['get', 'put', 'delete', 'deleteAll', 'list', 'transaction', 'sync', 'getAlarm', 'setAlarm', 'deleteAlarm',
  'sql', 'transactionSync']);
internal.setToStringTag(DurableObjectStorage.prototype, 'DurableObjectStorage');

// A transaction's view: reads see its own writes first; its writes are
// kept aside until it commits.
class DurableObjectTransaction {
  #storage;
  #writes = new Map();
  #done = false;

  constructor(key = undefined, storage = null) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#storage = storage;
  }

  #open() {
    if (this.#done) throw new Error('This transaction has already ended.');
  }

  async get(keys) {
    this.#open();
    const many = Array.isArray(keys);
    const list = many ? keyList(keys, 'get') : [checkKey(keys)];
    const stored = await this.#storage.get(list);
    const read = (key) => {
      if (this.#writes.has(key)) {
        const bytes = this.#writes.get(key);
        return bytes === ABSENT ? undefined : host.deserialize(bytes);
      }
      return stored.get(key);
    };
    if (!many) return read(list[0]);
    const out = new Map();
    for (const key of [...list].sort()) {
      const value = read(key);
      if (value !== undefined) out.set(key, value);
    }
    return out;
  }

  async put(keyOrEntries, value = undefined) {
    this.#open();
    const entries = typeof keyOrEntries === 'string' ? [[keyOrEntries, value]] : Object.entries(keyOrEntries);
    for (const [key, v] of entries) {
      if (v === undefined) throw new TypeError('Cannot store undefined in a Durable Object.');
      this.#writes.set(checkKey(key), host.serialize(v));
    }
  }

  async delete(keys) {
    this.#open();
    const many = Array.isArray(keys);
    const list = many ? keyList(keys, 'delete') : [checkKey(keys)];
    const before = await this.get(list);
    for (const key of list) this.#writes.set(key, ABSENT);
    return many ? before.size : before.size > 0;
  }

  rollback() {
    this.#open();
    this.#writes.clear();
    this.#done = true;
  }

  commit() {
    if (this.#done) return;
    this.#done = true;
    if (this.#writes.size > 0) this.#storage.commitEntries([...this.#writes]);
  }
}
internal.enumerableMembers(DurableObjectTransaction, ['get', 'put', 'delete', 'rollback']);

// ---- state and live objects ----

class DurableObjectState {
  #object;

  constructor(key = undefined, object = null) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#object = object;
    this.id = object.idObject;
    this.storage = object.storage;
  }

  // Runs `callback` with no other event delivered to the object until it
  // settles.
  async blockConcurrencyWhile(callback) {
    const gate = this.#object.gate;
    gate.lock();
    try {
      return await callback();
    } finally {
      gate.unlockLater();
    }
  }

  waitUntil(promise) { Promise.resolve(promise).then(undefined, (e) => internal.reportError(e)); }

  // ---- hibernatable WebSockets, as workerd's ----

  // Accepts `ws` (the server end of a pair whose client end the object
  // returns in its 101) as a hibernatable socket of this object, with up
  // to 10 distinct tags of at most 256 characters each.
  acceptWebSocket(ws, tags = undefined) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'acceptWebSocket' on 'DurableObjectState'");
    const o = this.#object;
    const list = [];
    if (tags !== undefined && tags !== null) {
      for (const tag of tags) {
        const text = String(tag);
        if (list.includes(text)) continue;
        if (list.length >= 10) throw new Error('a Hibernatable WebSocket cannot have more than 10 tags');
        if (text.length > 256) throw new Error(`"${text}" is longer than the max tag length (256 characters).`);
        list.push(text);
      }
    }
    host.objectWebSocketCheck(o.className, o.id, o.pending);
    internal.webSocketHibernate(ws, { className: o.className, id: o.id, tags: list, opened: (hostId, server) => o.opened(hostId, server) });
    o.pending += 1;
    o.accepting.add(ws);
  }

  // The object's open hibernatable sockets (those with `tag`, if given),
  // then one in its webSocketClose, then those it accepted whose 101 has
  // not gone out yet (as workerd, a socket accepted earlier in the same
  // event is listed, and a closing one in its handler).
  getWebSockets(tag = undefined) {
    const o = this.#object;
    const wanted = tag === undefined || tag === null ? null : String(tag);
    const rows = host.objectWebSockets(o.className, o.id, wanted);
    const sockets = rows.map(([hostId, tags, attachment]) => o.socket(hostId, tags, attachment));
    for (const ws of [...o.closing, ...o.accepting]) {
      if (wanted === null || internal.webSocketTags(ws).includes(wanted)) sockets.push(ws);
    }
    return sockets;
  }

  getTags(ws) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getTags' on 'DurableObjectState'");
    return internal.webSocketTags(ws);
  }

  // A text message equal to `pair.request` is answered with
  // `pair.response` by the host, without waking the object; undefined or
  // null unsets it.
  setWebSocketAutoResponse(pair = undefined) {
    const o = this.#object;
    if (pair === undefined || pair === null) {
      host.objectSetAutoResponse(o.className, o.id, null, null);
      return;
    }
    if (!(pair instanceof WebSocketRequestResponsePair)) {
      throw new TypeError("Failed to execute 'setWebSocketAutoResponse' on 'DurableObjectState': parameter 1 is not of type 'WebSocketRequestResponsePair'.");
    }
    for (const [what, text] of [['Request', pair.request], ['Response', pair.response]]) {
      const size = host.utf8Encode(text).byteLength;
      if (size > 2048) throw new RangeError(`${what} cannot be larger than 2048 bytes. A ${what.toLowerCase()} of size ${size} was provided.`);
    }
    host.objectSetAutoResponse(o.className, o.id, pair.request, pair.response);
  }

  getWebSocketAutoResponse() {
    const o = this.#object;
    const pair = host.objectAutoResponse(o.className, o.id);
    return pair === null ? null : new WebSocketRequestResponsePair(pair[0], pair[1]);
  }

  getWebSocketAutoResponseTimestamp(ws) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'getWebSocketAutoResponseTimestamp' on 'DurableObjectState'");
    const at = host.webSocketAutoResponseTime(internal.webSocketHostId(ws));
    return at === null ? null : new Date(at);
  }
}
internal.enumerableMembers(DurableObjectState, ['blockConcurrencyWhile', 'waitUntil', 'acceptWebSocket', 'getWebSockets', 'getTags',
  'setWebSocketAutoResponse', 'getWebSocketAutoResponse', 'getWebSocketAutoResponseTimestamp']);
internal.setToStringTag(DurableObjectState.prototype, 'DurableObjectState');

// Live objects of this isolate, by class and id.
const live = new Map();

// The sweep that evicts idle objects: one timer at a time while any object
// is live. An object untouched since the last sweep and idle now goes.
let sweeping = false;

function scheduleSweep() {
  if (sweeping || live.size === 0) return;
  sweeping = true;
  host.objectIdleTimer().then(sweep, () => { sweeping = false; });
}

function sweep() {
  sweeping = false;
  for (const object of [...live.values()]) {
    if (object.touched) object.touched = false;
    else if (object.idle()) object.evict();
  }
  scheduleSweep();
}

class LiveObject {
  constructor(namespace, id) {
    this.className = namespace.className;
    this.id = DurableObjectId.idOf(id);
    this.idObject = id;
    this.key = `${this.className}:${this.id}`;
    this.gate = new InputGate();
    // Idleness: events under way, storage operations in flight, accepted
    // (non-hibernatable) WebSockets, anything since the last sweep.
    // `pending`: hibernatable sockets accepted and not yet answered, for
    // the cap only (the next instance finds one answered after an eviction).
    this.active = 0;
    this.io = 0;
    this.pins = 0;
    this.pending = 0;
    // The sockets of `pending` (accepted, their 101 not yet out), listed
    // by getWebSockets() until they open; and those in webSocketClose.
    this.accepting = new Set();
    this.closing = new Set();
    this.touched = true;
    // Wrappers of its hibernatable sockets, by host id.
    this.sockets = new Map();
    // The owner epoch this instance takes before it reads or writes, which
    // its writes carry: once a later instance takes a higher one, this
    // one's writes are refused (it breaks and is dropped).
    this.epoch = this.track(host.objectTake(this.className, this.id)).then(undefined, (e) => {
      this.broken(e);
      throw e;
    });
    this.epoch.then(undefined, () => {});
    this.storage = new DurableObjectStorage(kCreate, this);
    this.state = new DurableObjectState(kCreate, this);
    const Class = namespace.classValue();
    this.Class = Class;
    this.env = namespace.env;
    // A SQLite-backed class's database is rebuilt first: its constructor
    // may run SQL (the instance is made then, under the input gate).
    this.database = namespace.sqlite ? internal.openSqlDatabase(this) : null;
    if (this.database === null) this.instance = new Class(this.state, namespace.env);
    // An alarm() is being delivered (or was, successfully: the loop then
    // deletes the alarm) and no alarm write came since: getAlarm() is null.
    this.alarmFiring = false;
  }

  hasAlarmHandler() { return typeof this.Class?.prototype?.alarm === 'function'; }

  // Counts a storage operation in flight until `promise` settles.
  track(promise) {
    this.io += 1;
    const done = () => {
      this.io -= 1;
      this.touched = true;
    };
    promise.then(done, done);
    return promise;
  }

  idle() {
    return this.active === 0 && this.io === 0 && this.pins === 0 && this.gate.idle();
  }

  // Drops the instance: the next event makes a new one, which reads its
  // state back. Its hibernatable sockets stay open on the host.
  evict() {
    if (live.get(this.key) === this) live.delete(this.key);
    this.database?.close();
    this.sockets.clear();
    if (host.objectWebSockets(this.className, this.id, null).length === 0) {
      host.objectSetAutoResponse(this.className, this.id, null, null);
    }
  }

  // A socket this object accepted went out in a 101 as host socket `hostId`.
  opened(hostId, ws) {
    this.pending = Math.max(0, this.pending - 1);
    this.accepting.delete(ws);
    this.touched = true;
    if (live.get(this.key) === this) this.sockets.set(hostId, ws);
  }

  // The wrapper of hibernatable socket `hostId` (made again after an
  // eviction, with the tags and attachment the host kept).
  socket(hostId, tags, attachment) {
    let ws = this.sockets.get(hostId);
    if (ws === undefined) {
      const hibernation = { className: this.className, id: this.id, tags, opened() {} };
      ws = internal.hibernatedWebSocket(hostId, hibernation, attachment);
      this.sockets.set(hostId, ws);
    }
    return ws;
  }

  // An accepted (non-hibernatable) WebSocket keeps the object in memory
  // until it closes.
  pin(server) {
    this.pins += 1;
    server.addEventListener('close', () => {
      this.pins -= 1;
      this.touched = true;
    });
  }

  broken(error) {
    if (live.get(this.key) === this) live.delete(this.key);
    this.database?.close();
    void error;
  }

  // Runs `call(instance)` once the input gate lets a new event in; its
  // answer waits for the writes it made (the output gate).
  async deliver(call) {
    this.active += 1;
    this.touched = true;
    try {
      await this.gate.enter();
      let pending;
      try {
        // `failure`: a SQLite-backed instance that could not be made.
        pending = this.failure === undefined ? call(this.instance) : Promise.reject(this.failure);
      } finally {
        this.gate.unlockLater();
      }
      const result = await pending;
      await this.storage.sync();
      return result;
    } finally {
      this.active -= 1;
      this.touched = true;
      scheduleSweep();
    }
  }
}

function liveObject(namespace, id) {
  const key = `${namespace.className}:${DurableObjectId.idOf(id)}`;
  let object = live.get(key);
  if (object === undefined) {
    object = new LiveObject(namespace, id);
    live.set(key, object);
  }
  return object;
}

// ---- stubs ----

// Methods a stub must not forward (and `then`: a stub is not a thenable).
const NOT_RPC = new Set(['then', 'constructor', 'fetch', 'alarm', 'webSocketMessage', 'webSocketClose', 'webSocketError']);

function rpcMethod(instance, name) {
  if (typeof name !== 'string' || NOT_RPC.has(name) || name.startsWith('__')) return undefined;
  let proto = Object.getPrototypeOf(instance);
  while (proto !== null && proto !== Object.prototype && proto !== internal.DurableObjectBase?.prototype) {
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (desc !== undefined) return typeof desc.value === 'function' ? desc.value : undefined;
    proto = Object.getPrototypeOf(proto);
  }
  return undefined;
}

// `stub.fetch(request)` on a live object of this isolate.
function callFetch(object, request) {
  return object.deliver((instance) => {
    if (typeof instance.fetch !== 'function') {
      throw new TypeError('Handler does not export a fetch() function.');
    }
    return instance.fetch(request);
  }).then((response) => {
    if (!(response instanceof Response)) {
      throw new TypeError('Incorrect type for Promise: the Promise did not resolve to \'Response\'.');
    }
    // A WebSocket the object accepted itself keeps it in memory.
    const server = response.webSocket === null ? null : internal.webSocketServerOf(response.webSocket);
    if (server !== null) object.pin(server);
    return response;
  });
}

// An RPC call of method `name` with (already copied) `args` on a live
// object of this isolate; the result not yet copied.
function callRpc(object, name, args) {
  return object.deliver((instance) => {
    const method = rpcMethod(instance, name);
    if (method === undefined) {
      throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
    }
    return method.apply(instance, args);
  });
}

// ---- calls to an object homed on another engine thread ----
// An object lives on one thread of the process (its home, the placement
// of its key); a stub call made on another thread goes there through
// host.objectCall and comes back as a response. A thrown error comes back
// as a 500 marked by THREW whose body is the serialized [name, message].

const THREW = 'isolane-object-threw';
const ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };

// A call whose instance lost the object to a newer one (its storage write
// was fenced: its node lost the object after a ring change) wrote nothing
// in that turn; it is sent again, to the owner the ring names now, a few
// times before its error stands.
const FENCED = 'is no longer its owner';
const FENCED_ATTEMPTS = 3;

async function forwarded(className, id, rpc, method, url, headers, bytes) {
  for (let attempt = 1; ; attempt++) {
    const res = await host.objectCall(className, id, rpc, method, url, headers, bytes);
    // A 101's socket, served by the object's thread: passed on as it is.
    if (res.webSocket) res.passedWebSocket = internal.passedWebSocket(res.webSocket);
    const response = internal.responseFromHost(res);
    if (response.status !== 500 || !response.headers.has(THREW)) return response;
    const [name, message] = host.deserialize(new Uint8Array(await response.arrayBuffer()));
    if (attempt < FENCED_ATTEMPTS && String(message).includes(FENCED)) continue;
    const error = new (ERRORS[name] ?? Error)(message);
    if (error.name !== name) error.name = name;
    throw error;
  }
}

// A request's body read whole, for a call that carries it to another
// isolate (a forwarded stub.fetch; a service binding's call,
// isolane-bindings' 30_service.js): its bytes, or null without one.
internal.bodyBytes = async (body) => {
  if (body === null) return null;
  const box = { bytes: null, shared: false };
  await body.consume(box);
  return box.bytes;
};

async function forwardFetch(className, id, request) {
  const { method, url, headers, body } = internal.requestParts(request);
  const bytes = await internal.bodyBytes(body);
  return forwarded(className, id, null, method, url, internal.headersList(headers), bytes);
}

async function forwardRpc(className, id, name, args) {
  const response = await forwarded(className, id, name, 'POST', 'http://durable-object/', [], host.serialize(args));
  if (response.status !== 200) {
    throw new Error(`Durable Object call failed: the object's thread answered ${response.status}.`);
  }
  return host.deserialize(new Uint8Array(await response.arrayBuffer()));
}

// A binding's own class on the ring (D1's, isolane-bindings' 36_d1.js):
// its calls are sent to the owner node as an object's, and answered there
// by the function the binding registered in internal.bindingClasses.
internal.bindingClasses ??= new Map();
internal.forwardToOwner = forwarded;

// The handler of a call forwarded to this thread (the engine's ObjectCall):
// runs it on the live object here and answers as forwarded() reads.
internal.objectCallHandler = (className, id, rpc) => ({
  async fetch(request) {
    try {
      const serve = internal.bindingClasses.get(className);
      if (serve !== undefined) {
        return new Response(host.serialize(await serve(host.deserialize(new Uint8Array(await request.arrayBuffer())))));
      }
      const namespace = namespaces.get(className);
      if (namespace === undefined) {
        throw new TypeError(`A call came for the Durable Object class ${className}, which no binding of this Worker names.`);
      }
      const object = liveObject(namespace, new DurableObjectId(kCreate, id, undefined));
      if (rpc === null) return await callFetch(object, request);
      const args = host.deserialize(new Uint8Array(await request.arrayBuffer()));
      return new Response(host.serialize(await callRpc(object, rpc, args)));
    } catch (e) {
      const name = String(e?.name ?? 'Error');
      const message = String(e?.message ?? e);
      return new Response(host.serialize([name, message]), { status: 500, headers: { [THREW]: '1' } });
    }
  },
});

function makeStub(namespace, id) {
  // A class another Worker hosts is called as `<worker>/<class>`, always
  // out of this isolate (into the host's).
  const className = namespace.target;
  const idString = DurableObjectId.idOf(id);
  // Asked at each call: the object's owner node changes with the ring
  // (a stub may outlive a ring change). A class another Worker hosts is
  // never this isolate's.
  const home = () => !namespace.hosted && host.objectIsHome(className, idString);
  const target = {
    id,
    name: id.name,
    // Async: a refused call (its request's subrequests spent) rejects.
    async fetch(input, init = undefined) {
      const request = new Request(input, init);
      if (!home()) return forwardFetch(className, idString, request);
      return callFetch(liveObject(namespace, id), request);
    },
  };
  return internal.proxy(target, {
    get(t, name) {
      if (name === 'id' || name === 'name' || name === 'fetch') return t[name];
      if (NOT_RPC.has(name) || typeof name !== 'string') return undefined;
      return async (...args) => {
        if (!home()) return forwardRpc(className, idString, name, args);
        const copied = structuredClone(args);
        return callRpc(liveObject(namespace, id), name, copied).then((result) => structuredClone(result));
      };
    },
    has(t, name) { return name in t; },
    set() { return false; },
  });
}

// ---- the namespace ----

class DurableObjectNamespace {
  #binding;
  #className;
  #env;
  #module;
  #worker;
  #sqlite;

  constructor(key = undefined, binding = '', className = '', env = undefined, module = undefined, worker = undefined, sqlite = false) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#sqlite = sqlite;
    this.#binding = binding;
    this.#className = className;
    this.#env = env;
    this.#module = module;
    this.#worker = worker;
  }

  get className() { return this.#className; }
  // Hosted by another Worker (`durableObject.worker`).
  get hosted() { return this.#worker !== undefined; }
  // SQLite-backed (`durableObject.sqlite`): its objects have `storage.sql`.
  get sqlite() { return this.#sqlite; }
  // What calls name the class by.
  get target() { return this.#worker === undefined ? this.#className : `${this.#worker}/${this.#className}`; }
  get env() { return this.#env; }
  classValue() { return this.#module[this.#className]; }

  idFromName(name) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'idFromName' on 'DurableObjectNamespace'");
    name = String(name);
    return new DurableObjectId(kCreate, host.objectIdFromName(this.#binding, name), name);
  }

  newUniqueId(options = undefined) {
    void options;
    return new DurableObjectId(kCreate, host.objectNewUniqueId(this.#binding), undefined);
  }

  idFromString(id) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'idFromString' on 'DurableObjectNamespace'");
    id = String(id);
    if (!host.objectIdValid(this.#binding, id)) {
      throw new TypeError('Invalid Durable Object ID: must be 64 hex digits, made by this namespace.');
    }
    return new DurableObjectId(kCreate, id, undefined);
  }

  get(id, options = undefined) {
    void options;
    if (!(id instanceof DurableObjectId)) {
      throw new TypeError("Failed to execute 'get' on 'DurableObjectNamespace': parameter 1 is not of type 'DurableObjectId'.");
    }
    if (!host.objectIdValid(this.#binding, DurableObjectId.idOf(id))) {
      throw new TypeError('This Durable Object ID belongs to another namespace.');
    }
    return makeStub(this, id);
  }

  getByName(name, options = undefined) {
    return this.get(this.idFromName(name), options);
  }

  jurisdiction() { return this; }
}
internal.enumerableMembers(DurableObjectNamespace, ['idFromName', 'newUniqueId', 'idFromString', 'get', 'getByName', 'jurisdiction'], 'DurableObjectNamespace');

// The namespace of each bound class, for alarms (which come with no stub).
const namespaces = new Map();

internal.durableObjectNamespace = (binding, className, env, sqlite) => {
  const module = internal.moduleNamespace;
  if (module === undefined || typeof module[className] !== 'function') {
    throw new TypeError(`The binding ${binding} names the Durable Object class ${className}, which the Worker's main module does not export (export class ${className} { … }).`);
  }
  const namespace = new DurableObjectNamespace(kCreate, binding, className, env, module, undefined, sqlite === true);
  namespaces.set(className, namespace);
  return namespace;
};

// A binding to class `className` hosted by Worker `worker` of this
// namespace: its ids are the host's, its stubs call into the host.
internal.hostedDurableObjectNamespace = (binding, className, worker) =>
  new DurableObjectNamespace(kCreate, binding, className, undefined, undefined, worker);

// An alarm of object `id` of `className` (the engine's AlarmEvent): the
// object's alarm({retryCount, isRetry}) as one more event through its
// input gate; settles once the handler and its writes are done.
internal.deliverAlarm = (className, id, retryCount) => {
  const namespace = namespaces.get(className);
  if (namespace === undefined) {
    throw new TypeError(`An alarm came for the Durable Object class ${className}, which no binding of this Worker names.`);
  }
  const object = liveObject(namespace, new DurableObjectId(kCreate, id, undefined));
  return object.deliver((instance) => {
    if (typeof instance.alarm !== 'function') {
      throw new TypeError(`The Durable Object class ${className} has no alarm() handler.`);
    }
    object.alarmFiring = true;
    return instance.alarm({ retryCount, isRetry: retryCount > 0 });
  }).then(undefined, (e) => {
    // Failed: the alarm stays for its retry, and getAlarm() says so.
    object.alarmFiring = false;
    throw e;
  });
};

// A message (kind 0 text, 1 binary) or the close (kind 2) of hibernatable
// socket `socketId` of object `id` of `className` (the engine's
// ObjectSocketEvent): the object (made again if it was evicted) gets
// webSocketMessage(ws, data), webSocketClose(ws, code, reason, wasClean),
// or, for a socket that went away without a close (1006),
// webSocketError(ws, error), as one more event through its input gate.
internal.deliverWebSocketEvent = (className, id, socketId, kind, data, code, reason, tags, attachment) => {
  const namespace = namespaces.get(className);
  if (namespace === undefined) {
    throw new TypeError(`A WebSocket message came for the Durable Object class ${className}, which no binding of this Worker names.`);
  }
  const object = liveObject(namespace, new DurableObjectId(kCreate, id, undefined));
  const ws = object.socket(socketId, tags, attachment);
  return object.deliver((instance) => {
    const value = internal.webSocketReceived(ws, kind, data);
    if (kind !== 2) {
      if (typeof instance.webSocketMessage !== 'function') {
        throw new TypeError(`The Durable Object class ${className} has no webSocketMessage() handler.`);
      }
      return instance.webSocketMessage(ws, value);
    }
    // Listed by getWebSockets() until its handler settles (not its writes).
    object.closing.add(ws);
    const [name, args] = code === 1006 ? ['webSocketError', [ws, new Error(reason)]] : ['webSocketClose', [ws, code, reason, true]];
    const handled = new Promise((resolve) => resolve(typeof instance[name] === 'function' ? instance[name](...args) : undefined));
    return handled.finally(() => { object.sockets.delete(socketId); object.closing.delete(ws); });
  });
};
