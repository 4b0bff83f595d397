// 36_d1.js — D1: the `D1Database` a Worker's D1 binding puts in its `env`
// (`internal.d1Binding(binding)`, called by the engine as it builds
// `env`), its prepared statements, batches, `exec` and sessions, over
// host.d1Open/d1Query/d1Flush (isolane-bindings' d1.rs). The host scopes
// every query to the database of the Worker's own namespace (JavaScript
// passes only the binding's name), runs it on this thread within the
// request's CPU time, and resolves once what it committed is durable.
// Result shapes, value conversions and messages follow workerd's D1 API
// as miniflare's local D1 answers it (docs/d1.md).
'use strict';

const kCreate = Symbol('create');

function d1Error(message, prefix = 'D1_ERROR') {
  return new Error(`${prefix}: ${message}`, { cause: new Error(message) });
}

// A bound value as D1 takes it: numbers, strings and null as they are,
// booleans as 1/0, byte arrays and buffers as BLOBs; nothing else.
function bindValue(value) {
  const type = typeof value;
  if (type === 'number' || type === 'string') return value;
  if (type === 'boolean') return value ? 1 : 0;
  if (type === 'object') {
    if (value === null) return null;
    if (Array.isArray(value) && value.every((b) => typeof b === 'number' && b >= 0 && b < 256)) return new Uint8Array(value);
    if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
    if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  }
  throw new Error(`D1_TYPE_ERROR: Type '${type}' not supported for value '${value}'`);
}

// A column's value as D1 answers it: BLOBs as arrays of bytes.
function resultValue(value) {
  return value instanceof ArrayBuffer ? Array.from(new Uint8Array(value)) : value;
}

// A query that is more than whitespace and `--` comment lines.
function hasSql(sql) {
  return sql.replace(/^\s*--.*/gm, '').trim().length > 0;
}

// Runs `queries` ([sql, values] pairs) as one transaction of database
// `binding`: the per-query answers of host.d1Query, once durable. On a
// cluster the database lives on its owner node (the ring's, as a Durable
// Object does): a call made on another node is sent there
// as a call of class D1_CLASS (no JavaScript class can be named so) whose
// id names the binding (internal.forwardToOwner, 28_durable_object.js) and
// runs in this Worker's isolate there (serve, registered for the class).
const D1_CLASS = '#d1';

async function send(binding, queries) {
  const work = queries.filter(([sql]) => hasSql(sql));
  if (work.length === 0) throw new Error('No SQL statements detected.');
  if (host.objectIsHome(D1_CLASS, binding)) return serve([binding, work]);
  const body = host.serialize([binding, work]);
  const response = await internal.forwardToOwner(D1_CLASS, binding, 'query', 'POST', 'http://d1/', [], body);
  if (response.status !== 200) {
    throw new Error(`the call ended on the database's owner node with status ${response.status} (a limit of the Worker's, or the node failed)`);
  }
  return host.deserialize(new Uint8Array(await response.arrayBuffer()));
}

async function serve([binding, work]) {
  await host.d1Open(binding);
  const answers = host.d1Query(binding, work);
  await host.d1Flush(binding);
  return answers;
}
(internal.bindingClasses ??= new Map()).set(D1_CLASS, serve);

function meta(answer) {
  const [, , duration, changes, lastRowId, changed, sizeAfter, rowsRead, rowsWritten] = answer;
  return {
    served_by: 'isolane.db',
    served_by_primary: true,
    total_attempts: 1,
    timings: { sql_duration_ms: duration },
    duration,
    changes,
    last_row_id: lastRowId,
    changed_db: changed,
    size_after: sizeAfter,
    rows_read: rowsRead,
    rows_written: rowsWritten,
  };
}

function rowsOf(answer) {
  return answer[1].map((row) => row.map(resultValue));
}

function objects(answer) {
  const columns = answer[0];
  return rowsOf(answer).map((row) => {
    const out = {};
    for (let i = 0; i < columns.length; i++) out[columns[i]] = row[i];
    return out;
  });
}

function result(answer) {
  return { success: true, meta: meta(answer), results: objects(answer) };
}

// Any failure of a query as D1 throws it.
async function asD1(work, prefix = 'D1_ERROR') {
  try {
    return await work();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (message.startsWith('D1_')) throw e;
    throw d1Error(message, prefix);
  }
}

class D1PreparedStatement {
  #binding;
  #session;
  #sql;
  #values;

  constructor(key = undefined, binding = '', session = null, sql = '', values = []) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
    this.#session = session;
    this.#sql = sql;
    this.#values = values;
  }

  bind(...values) {
    return new D1PreparedStatement(kCreate, this.#binding, this.#session, this.#sql, values.map(bindValue));
  }

  // For batch(): the query, checked to be of the same database.
  [kCreate](binding) {
    if (binding !== this.#binding) throw new TypeError('D1 batch(): every statement must be prepared on the same database.');
    return [this.#sql, this.#values];
  }

  async #one() {
    const answers = await asD1(() => send(this.#binding, [[this.#sql, this.#values]]));
    this.#session?.[kCreate]();
    return answers[0];
  }

  async first(column = undefined) {
    const answer = await this.#one();
    const [row] = objects(answer);
    if (column === undefined) return row ?? null;
    if (row === undefined) return null;
    if (!Object.hasOwn(row, column)) {
      throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`, { cause: new Error('Column not found') });
    }
    return row[column];
  }

  async run() {
    return result(await this.#one());
  }

  async all() {
    return result(await this.#one());
  }

  async raw(options = undefined) {
    const answer = await this.#one();
    const rows = rowsOf(answer);
    if (options?.columnNames) rows.unshift([...answer[0]]);
    return rows;
  }
}
internal.enumerableMembers(D1PreparedStatement, ['bind', 'first', 'run', 'all', 'raw']);
internal.setToStringTag(D1PreparedStatement.prototype, 'D1PreparedStatement');

// What a database and its sessions share: prepare and batch.
function prepare(binding, session, query) {
  return new D1PreparedStatement(kCreate, binding, session, String(query), []);
}

async function batch(binding, session, statements) {
  const queries = Array.from(statements, (statement) => {
    if (!(statement instanceof D1PreparedStatement)) throw new TypeError('D1 batch() takes an array of prepared statements.');
    return statement[kCreate](binding);
  });
  const answers = await asD1(() => send(binding, queries));
  session?.[kCreate]();
  return answers.map(result);
}

class D1DatabaseSession {
  #binding;
  #bookmark;
  #reads = 0;

  constructor(key = undefined, binding = '', constraint = undefined) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
    const given = constraint === undefined || constraint === 'first-unconstrained' || constraint === 'first-primary';
    this.#bookmark = given ? null : String(constraint);
  }

  // After a query: the bookmark of what it saw (every query is served by
  // the one copy of the database, so any bookmark is already met).
  [kCreate]() {
    this.#reads++;
    this.#bookmark = `${(Date.now()).toString(16).padStart(16, '0')}-${this.#reads.toString(16).padStart(8, '0')}`;
  }

  prepare(query) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'prepare' on 'D1DatabaseSession'");
    return prepare(this.#binding, this, query);
  }

  batch(statements) {
    return batch(this.#binding, this, statements);
  }

  getBookmark() {
    return this.#bookmark;
  }
}
internal.enumerableMembers(D1DatabaseSession, ['prepare', 'batch', 'getBookmark']);
internal.setToStringTag(D1DatabaseSession.prototype, 'D1DatabaseSession');

class D1Database {
  #binding;

  constructor(key = undefined, binding = '') {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
  }

  prepare(query) {
    internal.requireArgs(arguments.length, 1, "Failed to execute 'prepare' on 'D1Database'");
    return prepare(this.#binding, null, query);
  }

  batch(statements) {
    return batch(this.#binding, null, statements);
  }

  // Each line of `query` one query, all in one transaction: how many
  // ran and how long they took. A failure names the first line, as
  // miniflare's local D1 does.
  async exec(query) {
    const lines = String(query).trim().split('\n');
    let answers;
    try {
      answers = await send(this.#binding, lines.map((line) => [line, []]));
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const detail = `Error in line 1: ${lines[0]}: ${message}`;
      throw new Error(`D1_EXEC_ERROR: ${detail}`, { cause: new Error(detail) });
    }
    return { count: answers.length, duration: answers.reduce((sum, answer) => sum + answer[2], 0) };
  }

  withSession(constraint = undefined) {
    return new D1DatabaseSession(kCreate, this.#binding, constraint);
  }
}
internal.enumerableMembers(D1Database, ['prepare', 'batch', 'exec', 'withSession']);
internal.setToStringTag(D1Database.prototype, 'D1Database');

internal.d1Binding = (binding) => new D1Database(kCreate, binding);
