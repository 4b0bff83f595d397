// 34_durable_sql.js — `ctx.storage.sql` of a SQLite-backed Durable Object
// class (`durableObject.sqlite`): its SqlStorage, cursors and
// `storage.transactionSync`, over host.sqlOpen/sqlExec/sqlTransaction/
// sqlSize/sqlFlush/sqlClose (isolane-bindings' sql.rs). The core's
// 28_durable_object.js asks for them through internal.openSqlDatabase (as
// a SQLite-backed instance is made: the database is rebuilt from its log
// first, the class's constructor runs after, under the input gate) and
// internal.sqlStorageOf (`storage.sql`). Statements run synchronously on
// the object's thread; what they commit is handed to the store at the end
// of the turn (`storage.chainWrite`), so the object's output gate waits
// for it as for its key-value writes. Shapes and messages are workerd's.
'use strict';

const kCreate = Symbol('create');

const NOT_SQLITE = 'This Durable Object is not backed by SQLite storage, so the SQL API is not available. ' +
  'SQL can be enabled on a new Durable Object class by using the `new_sqlite_classes` instead of `new_classes` ' +
  'under `[[migrations]]` in your wrangler.toml, but an already-deployed class cannot be converted to SQLite ' +
  '(except by deleting the existing data).';

// A row as an object of its columns (a later column of the same name wins).
function rowObject(columns, row) {
  const out = {};
  for (let i = 0; i < columns.length; i++) out[columns[i]] = row[i];
  return out;
}

class SqlStorageCursor {
  #columns;
  #rows;
  #next = 0;
  #read;
  #written;

  constructor(key = undefined, columns = [], rows = [], read = 0, written = 0) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#columns = columns;
    this.#rows = rows;
    this.#read = read;
    this.#written = written;
  }

  // The next row as its values, or undefined when none is left.
  #take() {
    return this.#next < this.#rows.length ? this.#rows[this.#next++] : undefined;
  }

  next() {
    const row = this.#take();
    return row === undefined ? { done: true, value: undefined } : { done: false, value: rowObject(this.#columns, row) };
  }

  toArray() {
    const out = [];
    for (let row = this.#take(); row !== undefined; row = this.#take()) out.push(rowObject(this.#columns, row));
    return out;
  }

  one() {
    const row = this.#take();
    if (row === undefined) throw new Error('Expected exactly one result from SQL query, but got no results.');
    if (this.#next < this.#rows.length) {
      this.#next = this.#rows.length;
      throw new Error('Expected exactly one result from SQL query, but got multiple results.');
    }
    return rowObject(this.#columns, row);
  }

  // The rows as arrays of values, from the same position.
  raw() {
    const take = () => this.#take();
    const iterator = {
      next() {
        const row = take();
        return row === undefined ? { done: true, value: undefined } : { done: false, value: [...row] };
      },
      toArray() {
        const out = [];
        for (let row = take(); row !== undefined; row = take()) out.push([...row]);
        return out;
      },
      [Symbol.iterator]() { return iterator; },
    };
    return iterator;
  }

  [Symbol.iterator]() { return this; }

  get columnNames() { return [...this.#columns]; }
  get rowsRead() { return this.#read; }
  get rowsWritten() { return this.#written; }
}
internal.enumerableMembers(SqlStorageCursor, ['next', 'toArray', 'one', 'raw', 'columnNames', 'rowsRead', 'rowsWritten']);
internal.setToStringTag(SqlStorageCursor.prototype, 'SqlStorageCursor');

class SqlStorage {
  #db;

  constructor(key = undefined, db = null) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#db = db;
  }

  exec(query, ...bindings) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'exec' on 'SqlStorage'");
    const db = this.#db;
    let answer;
    try {
      answer = host.sqlExec(db.handle, String(query), bindings);
    } catch (e) {
      // A statement of a query that failed later may have committed.
      db.wrote(host.sqlTransaction(db.handle, 3));
      throw e;
    }
    const [columns, rows, read, written, pending] = answer;
    db.wrote(pending);
    return new SqlStorageCursor(kCreate, columns, rows, read, written);
  }

  get databaseSize() { return host.sqlSize(this.#db.handle); }
}
internal.enumerableMembers(SqlStorage, ['exec', 'databaseSize']);
internal.setToStringTag(SqlStorage.prototype, 'SqlStorage');

// One instance's database: its handle (0 until open, and once closed).
class SqlDatabase {
  constructor(object) {
    this.object = object;
    this.handle = 0;
    this.closed = false;
    this.flushQueued = false;
    this.storage = new SqlStorage(kCreate, this);
  }

  // After a statement: a commit waiting goes to the store at the end of
  // the turn, after the object's writes before it (one flush at a time).
  wrote(pending) {
    if (!pending || this.flushQueued) return;
    this.flushQueued = true;
    const o = this.object;
    o.storage.chainWrite(() => {
      this.flushQueued = false;
      return o.epoch.then((epoch) => host.sqlFlush(o.className, o.id, this.handle, epoch));
    });
  }

  transactionSync(closure) {
    if (typeof closure !== 'function') throw new TypeError('transactionSync() needs a function.');
    host.sqlTransaction(this.handle, 0);
    let result;
    try {
      result = closure();
    } catch (e) {
      try {
        this.wrote(host.sqlTransaction(this.handle, 2));
      } catch (rollback) {
        internal.reportError(rollback);
      }
      throw e;
    }
    this.wrote(host.sqlTransaction(this.handle, 1));
    return result;
  }

  close() {
    this.closed = true;
    if (this.handle !== 0) host.sqlClose(this.handle);
    this.handle = 0;
  }
}

// The database of a SQLite-backed `object` (28_durable_object.js's
// LiveObject), opened from its log once the instance owns the object; the
// class's constructor runs then. Until it has, the input gate holds the
// object's events; a failure is the instance's (`object.failure`).
internal.openSqlDatabase = (object) => {
  const db = new SqlDatabase(object);
  object.gate.lock();
  object.epoch
    .then(() => object.track(host.sqlOpen(object.className, object.id)))
    .then((handle) => {
      if (db.closed) {
        host.sqlClose(handle);
        return;
      }
      db.handle = handle;
      object.instance = new object.Class(object.state, object.env);
    })
    .then(undefined, (e) => {
      object.failure = e;
      object.broken(e);
    })
    .finally(() => object.gate.unlock());
  return db;
};

// `storage.sql` (and `storage.transactionSync`'s receiver): Cloudflare's
// error for a class that is not SQLite-backed.
internal.sqlStorageOf = (object) => {
  if (object.database === null || object.database === undefined) throw new Error(NOT_SQLITE);
  return object.database.storage;
};

internal.sqlTransactionSync = (object, closure) => {
  internal.sqlStorageOf(object);
  return object.database.transactionSync(closure);
};
