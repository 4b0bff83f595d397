//! Cloudflare's limits on a SQLite-backed Durable Object and the errors
//! its SQL API throws, with Cloudflare's words where it has them (SQLite's
//! own errors read `<message>: SQLITE_<CODE>`, as workerd words them).

/// The longest SQL statement, in bytes (`SQLITE_LIMIT_SQL_LENGTH`).
pub const MAX_STATEMENT_BYTES: i32 = 100_000;
/// The largest string, blob or row, in bytes (`SQLITE_LIMIT_LENGTH`).
pub const MAX_VALUE_BYTES: i32 = 2_000_000;
/// The most bound parameters of one statement.
pub const MAX_PARAMETERS: i32 = 100;
/// The most columns of a table.
pub const MAX_COLUMNS: i32 = 100;
/// What one object's database may hold when the store sets no object
/// limit: Cloudflare's 10 GB.
pub const DEFAULT_MAX_BYTES: u64 = 10 << 30;

/// What the SQL API refuses or fails with.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// SQLite's error: `<message>: SQLITE_<CODE>`.
    #[error("{0}")]
    Sqlite(String),
    /// A `BEGIN`, `COMMIT`, `ROLLBACK` or `SAVEPOINT` of the application's.
    #[error(
        "To execute a transaction, please use the state.storage.transaction() or state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT statements. The JavaScript API is safer because it will automatically roll back on exceptions, and because it interacts correctly with Durable Objects' automatic atomic write coalescing."
    )]
    Transaction,
    /// More or fewer values than the statement's parameters.
    #[error("Wrong number of parameter bindings for SQL query.")]
    Bindings,
    /// The database would grow past the object's limit.
    #[error(
        "Durable Object SQL write failed: this object's database would grow past its limit of {limit} bytes; delete rows first."
    )]
    Full { limit: u64 },
    /// The statement was stopped: its request's CPU time is spent, or its
    /// isolate is ending.
    #[error("interrupted: SQLITE_INTERRUPT")]
    Interrupted,
    #[error("the object's SQL database file failed: {0}")]
    File(#[from] std::io::Error),
    /// A D1 database whose last write did not reach the log: its copy in
    /// this process was dropped.
    #[error(
        "the database's last write could not be stored, so its copy on this node was reset; retry"
    )]
    Reset,
    /// A log record this build did not write.
    #[error("the object's SQL log holds a record this build cannot read")]
    Corrupt,
}

/// SQLite's primary result codes by number, as workerd names them.
const CODES: [&str; 27] = [
    "SQLITE_OK",
    "SQLITE_ERROR",
    "SQLITE_INTERNAL",
    "SQLITE_PERM",
    "SQLITE_ABORT",
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_NOMEM",
    "SQLITE_READONLY",
    "SQLITE_INTERRUPT",
    "SQLITE_IOERR",
    "SQLITE_CORRUPT",
    "SQLITE_NOTFOUND",
    "SQLITE_FULL",
    "SQLITE_CANTOPEN",
    "SQLITE_PROTOCOL",
    "SQLITE_EMPTY",
    "SQLITE_SCHEMA",
    "SQLITE_TOOBIG",
    "SQLITE_CONSTRAINT",
    "SQLITE_MISMATCH",
    "SQLITE_MISUSE",
    "SQLITE_NOLFS",
    "SQLITE_AUTH",
    "SQLITE_FORMAT",
    "SQLITE_RANGE",
    "SQLITE_NOTADB",
];

/// SQLite's primary result code of `error`, if it is SQLite's.
pub(super) fn code_of(error: &rusqlite::Error) -> Option<i32> {
    match error {
        rusqlite::Error::SqliteFailure(failure, _)
        | rusqlite::Error::SqlInputError { error: failure, .. } => {
            Some(failure.extended_code & 0xff)
        }
        _ => None,
    }
}

/// SQLite's extended result codes that say more than their primary one,
/// by number (the constraint kinds are what applications see most).
const EXTENDED: [(i32, &str); 12] = [
    (275, "SQLITE_CONSTRAINT_CHECK"),
    (531, "SQLITE_CONSTRAINT_COMMITHOOK"),
    (787, "SQLITE_CONSTRAINT_FOREIGNKEY"),
    (1043, "SQLITE_CONSTRAINT_FUNCTION"),
    (1299, "SQLITE_CONSTRAINT_NOTNULL"),
    (1555, "SQLITE_CONSTRAINT_PRIMARYKEY"),
    (1811, "SQLITE_CONSTRAINT_TRIGGER"),
    (2067, "SQLITE_CONSTRAINT_UNIQUE"),
    (2323, "SQLITE_CONSTRAINT_VTAB"),
    (2579, "SQLITE_CONSTRAINT_ROWID"),
    (2835, "SQLITE_CONSTRAINT_PINNED"),
    (3091, "SQLITE_CONSTRAINT_DATATYPE"),
];

/// `<message>: SQLITE_<CODE>`, and ` (extended: SQLITE_<CODE>_<KIND>)`
/// when the extended code says more, as workerd words it.
fn worded(failure: &rusqlite::ffi::Error, message: Option<&str>) -> SqlError {
    let code = usize::try_from(failure.extended_code & 0xff).unwrap_or(0);
    let name = CODES.get(code).copied().unwrap_or("SQLITE_ERROR");
    let message = message.map_or_else(|| failure.to_string(), str::to_owned);
    let extended = EXTENDED
        .iter()
        .find(|(number, _)| *number == failure.extended_code)
        .map_or(String::new(), |(_, kind)| format!(" (extended: {kind})"));
    SqlError::Sqlite(format!("{message}: {name}{extended}"))
}

impl From<rusqlite::Error> for SqlError {
    fn from(error: rusqlite::Error) -> Self {
        match &error {
            rusqlite::Error::SqliteFailure(failure, message) => worded(failure, message.as_deref()),
            // A statement that did not prepare: SQLite's message and where
            // (as workerd words it), not rusqlite's copy of the SQL.
            rusqlite::Error::SqlInputError {
                error, msg, offset, ..
            } => worded(error, Some(&format!("{msg} at offset {offset}"))),
            rusqlite::Error::InvalidParameterCount(..) => SqlError::Bindings,
            other => SqlError::Sqlite(format!("{other}: SQLITE_ERROR")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_errors_read_as_workerd_words_them() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let error = SqlError::from(db.execute("SELECT * FROM nowhere", []).unwrap_err());
        assert_eq!(error.to_string(), "no such table: nowhere: SQLITE_ERROR");
        let error = SqlError::from(db.execute("SELEC 1", []).unwrap_err());
        let syntax = "near \"SELEC\": syntax error at offset 0: SQLITE_ERROR";
        assert_eq!(error.to_string(), syntax);
        db.execute_batch("CREATE TABLE t (a NOT NULL)").unwrap();
        let error = SqlError::from(db.execute("INSERT INTO t VALUES (NULL)", []).unwrap_err());
        assert_eq!(
            error.to_string(),
            "NOT NULL constraint failed: t.a: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_NOTNULL)"
        );
    }
}
