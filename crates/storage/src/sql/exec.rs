//! One `sql.exec(query, ...bindings)`: each statement of `query` prepared
//! and run in turn (the next one prepared only once the one before ran, so
//! `CREATE TABLE t …; INSERT INTO t …` works), the rows of each handed to a
//! [`RowSink`] as they are stepped (the cursor is the last statement's).
//! The bindings go to the statement that has parameters, which must be the
//! last to take any, in number exactly.

use fallible_iterator::FallibleIterator as _;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Batch, Connection, StatementStatus};

use super::SqlError;

/// A value bound to a parameter, as workerd binds them: numbers as REAL.
#[derive(Clone, Debug, PartialEq)]
pub enum SqlParam {
    Null,
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A column of a row, borrowed from SQLite while the row is current.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SqlValue<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

/// Where a statement's rows go, as they are stepped.
pub trait RowSink {
    /// A statement of the query starts (rows of an earlier one are not
    /// the cursor's).
    fn statement(&mut self, columns: &[&str]);
    /// One row; `false` stops the query (the isolate is ending).
    fn row(&mut self, values: &[SqlValue<'_>]) -> bool;
}

/// What a query did: rows read (returned, and those full scans stepped
/// over) and rows written (inserted, updated, deleted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Executed {
    pub rows_read: u64,
    pub rows_written: u64,
}

impl From<&SqlParam> for Value {
    fn from(param: &SqlParam) -> Self {
        match param {
            SqlParam::Null => Value::Null,
            SqlParam::Real(n) => Value::Real(*n),
            SqlParam::Text(text) => Value::Text(text.clone()),
            SqlParam::Blob(bytes) => Value::Blob(bytes.clone()),
        }
    }
}

fn value(value: ValueRef<'_>) -> SqlValue<'_> {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(n) => SqlValue::Integer(n),
        ValueRef::Real(n) => SqlValue::Real(n),
        ValueRef::Text(text) => SqlValue::Text(text),
        ValueRef::Blob(bytes) => SqlValue::Blob(bytes),
    }
}

/// Runs every statement of `query` on `conn`, rows to `sink`; SQLite's
/// errors as `classify` words them.
pub(super) fn run(
    conn: &Connection,
    (query, params): (&str, &[SqlParam]),
    sink: &mut dyn RowSink,
    classify: &dyn Fn(rusqlite::Error) -> SqlError,
) -> Result<Executed, SqlError> {
    let before = conn.total_changes();
    let mut done = Executed::default();
    let mut bound = params.is_empty();
    let mut batch = Batch::new(conn, query);
    while let Some(mut statement) = batch.next().map_err(classify)? {
        let wanted = statement.parameter_count();
        if wanted > 0 {
            if bound || wanted != params.len() {
                return Err(SqlError::Bindings);
            }
            for (i, param) in params.iter().enumerate() {
                statement
                    .raw_bind_parameter(i + 1, Value::from(param))
                    .map_err(classify)?;
            }
            bound = true;
        }
        let names: Vec<String> = statement
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        sink.statement(&names);
        let count = statement.column_count();
        let mut rows = statement.raw_query();
        while let Some(row) = rows.next().map_err(classify)? {
            let mut values = Vec::with_capacity(count);
            for i in 0..count {
                values.push(value(row.get_ref(i).map_err(classify)?));
            }
            if !sink.row(&values) {
                return Err(SqlError::Interrupted);
            }
            done.rows_read += 1;
        }
        drop(rows);
        let scanned = statement.get_status(StatementStatus::FullscanStep);
        done.rows_read += u64::try_from(scanned).unwrap_or(0);
    }
    if !bound {
        return Err(SqlError::Bindings);
    }
    done.rows_written = conn.total_changes().saturating_sub(before);
    Ok(done)
}
