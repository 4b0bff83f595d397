//! SQLite-backed Durable Objects (`ctx.storage.sql`, a class bound with
//! `durableObject.sqlite`): each object's own SQLite database
//! ([`ObjectDatabase`]), which the engine runs on the object's thread in a
//! private temporary file, and the log that makes it durable.
//!
//! Durability is SQLite's write-ahead log shipped to the store: after each
//! statement (or `transactionSync`) that committed, the WAL frames of that
//! commit — the pages it changed — are read back ([`pages`]), merged with
//! the other commits of the object's turn and appended as one record to
//! the object's log in the store (`Store::sql_append`, fenced by the
//! owner epoch as the key-value writes are). A new instance rebuilds the
//! file from the log, in order, before its first statement. Pages rather
//! than SQLite's session changesets: a changeset records neither schema
//! changes nor tables without a PRIMARY KEY, pages record everything.
//! When the log since its last snapshot outgrows twice the database (and
//! 1 MiB), the next record is a snapshot of the whole file and the store
//! drops the records before it.
//!
//! Cloudflare's rules hold ([`limits`], the authorizer in `authorize`):
//! no `ATTACH`, no `BEGIN`/`SAVEPOINT` of the application's own, only the
//! allowed `PRAGMA`s, no table named `_cf_…`; statements up to 100 KB,
//! strings, blobs and rows up to 2 MB, 100 bound parameters, 100 columns.

mod authorize;
mod database;
mod exec;
pub mod limits;
mod pages;

pub use database::ObjectDatabase;
pub use exec::{Executed, RowSink, SqlParam, SqlValue};
pub use limits::SqlError;
pub use pages::SqlRecord;
