// node:sqlite — importable only (workerd's stub, on from 2026-01-29); a
// Durable Object's `ctx.storage.sql` is the Workers way to SQLite. Runs as
// function (host, internal, require, module, exports).

const { stubClass, stubs } = require('node:internal/errors');

// SQLite's own codes (sqlite3.h), as Node's sqlite.constants gives them.
const AUTHORIZER = ['CREATE_INDEX', 'CREATE_TABLE', 'CREATE_TEMP_INDEX', 'CREATE_TEMP_TABLE', 'CREATE_TEMP_TRIGGER',
  'CREATE_TEMP_VIEW', 'CREATE_TRIGGER', 'CREATE_VIEW', 'DELETE', 'DROP_INDEX', 'DROP_TABLE', 'DROP_TEMP_INDEX',
  'DROP_TEMP_TABLE', 'DROP_TEMP_TRIGGER', 'DROP_TEMP_VIEW', 'DROP_TRIGGER', 'DROP_VIEW', 'INSERT', 'PRAGMA', 'READ',
  'SELECT', 'TRANSACTION', 'UPDATE', 'ATTACH', 'DETACH', 'ALTER_TABLE', 'REINDEX', 'ANALYZE', 'CREATE_VTABLE',
  'DROP_VTABLE', 'FUNCTION', 'SAVEPOINT'];
const constants = {
  SQLITE_CHANGESET_OMIT: 0, SQLITE_CHANGESET_REPLACE: 1, SQLITE_CHANGESET_ABORT: 2, SQLITE_CHANGESET_DATA: 1,
  SQLITE_CHANGESET_NOTFOUND: 2, SQLITE_CHANGESET_CONFLICT: 3, SQLITE_CHANGESET_CONSTRAINT: 4,
  SQLITE_CHANGESET_FOREIGN_KEY: 5, SQLITE_OK: 0, SQLITE_DENY: 1, SQLITE_IGNORE: 2,
};
AUTHORIZER.forEach((name, i) => { constants[`SQLITE_${name}`] = i + 1; });
constants.SQLITE_COPY = 0;
constants.SQLITE_RECURSIVE = 33;

module.exports = {
  DatabaseSync: stubClass('sqlite.DatabaseSync'),
  StatementSync: stubClass('sqlite.StatementSync'),
  constants,
  ...stubs('sqlite', ['backup']),
};
