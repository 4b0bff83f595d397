use super::*;
use crate::sql::SqlValue;

/// Rows as text, the last statement's only.
#[derive(Default)]
struct Rows {
    columns: Vec<String>,
    rows: Vec<String>,
}

impl RowSink for Rows {
    fn statement(&mut self, columns: &[&str]) {
        self.columns = columns.iter().map(|c| (*c).to_owned()).collect();
        self.rows.clear();
    }

    fn row(&mut self, values: &[SqlValue<'_>]) -> bool {
        let cells: Vec<String> = values
            .iter()
            .map(|v| match v {
                SqlValue::Null => "null".to_owned(),
                SqlValue::Integer(n) => n.to_string(),
                SqlValue::Real(n) => format!("{n:?}"),
                SqlValue::Text(t) => String::from_utf8_lossy(t).into_owned(),
                SqlValue::Blob(b) => format!("{b:?}"),
            })
            .collect();
        self.rows.push(cells.join(","));
        true
    }
}

fn run(db: &mut ObjectDatabase, query: &str, params: &[SqlParam]) -> Result<Rows, SqlError> {
    let mut rows = Rows::default();
    db.exec((query, params), || false, &mut rows)?;
    Ok(rows)
}

#[test]
fn a_database_comes_back_from_its_log_schema_and_rows_without_a_key_included() {
    let mut db = ObjectDatabase::open(&[], None).unwrap();
    run(
        &mut db,
        "CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'one')",
        &[],
    )
    .unwrap();
    let mut log = vec![db.take().unwrap().unwrap()];
    assert!(db.take().unwrap().is_none(), "taken once");
    run(&mut db, "SELECT * FROM t", &[]).unwrap();
    assert!(db.take().unwrap().is_none(), "a read commits nothing");
    let two = [SqlParam::Real(2.0), SqlParam::Text("two".into())];
    run(&mut db, "INSERT INTO t VALUES (?, ?)", &two).unwrap();
    db.begin().unwrap();
    run(&mut db, "INSERT INTO t VALUES (3, 'three')", &[]).unwrap();
    db.end(false).unwrap();
    log.push(db.take().unwrap().unwrap());
    let records: Vec<Vec<u8>> = log.into_iter().map(|(r, _)| r).collect();
    let mut again = ObjectDatabase::open(&records, None).unwrap();
    let rows = run(&mut again, "SELECT a, b FROM t ORDER BY a", &[]).unwrap();
    assert_eq!(rows.columns, ["a", "b"]);
    assert_eq!(
        rows.rows,
        ["1,one", "2.0,two"],
        "the rolled-back row is not there"
    );
    assert!(again.size().unwrap() >= 4096);
}

#[test]
fn cloudflares_restrictions_are_refused_with_its_words() {
    let mut db = ObjectDatabase::open(&[], None).unwrap();
    for query in ["BEGIN", "SAVEPOINT x", "COMMIT"] {
        let error = run(&mut db, query, &[]).err().map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.starts_with("To execute a transaction")),
            "{query}: {error:?}"
        );
    }
    for query in [
        "ATTACH DATABASE '/tmp/x' AS x",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA writable_schema = ON",
        "CREATE TABLE _cf_mine (a)",
    ] {
        let error = run(&mut db, query, &[]).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("not authorized: SQLITE_AUTH"),
            "{query}"
        );
    }
    run(&mut db, "CREATE TABLE t (a INTEGER PRIMARY KEY)", &[]).unwrap();
    let rows = run(&mut db, "PRAGMA table_info(t)", &[]).unwrap();
    assert_eq!(rows.rows.len(), 1);
    let error = run(&mut db, "SELECT ?", &[]).err().map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("Wrong number of parameter bindings for SQL query.")
    );
    let long = format!("SELECT '{}'", "x".repeat(100_001));
    assert!(run(&mut db, &long, &[]).is_err(), "a statement over 100 KB");
    let big = SqlParam::Blob(vec![0; 2_000_001]);
    let error = run(&mut db, "SELECT ?", &[big])
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("string or blob too big: SQLITE_TOOBIG")
    );
}

#[test]
fn a_database_past_its_limit_refuses_the_write() {
    let mut db = ObjectDatabase::open(&[], Some(64 << 10)).unwrap();
    run(&mut db, "CREATE TABLE t (v)", &[]).unwrap();
    let row = [SqlParam::Blob(vec![7; 8 << 10])];
    let mut refused = None;
    for _ in 0..20 {
        if let Err(error) = run(&mut db, "INSERT INTO t VALUES (?)", &row) {
            refused = Some(error.to_string());
            break;
        }
    }
    assert_eq!(
        refused.as_deref(),
        Some(
            "Durable Object SQL write failed: this object's database would grow past its limit of 65536 bytes; delete rows first."
        )
    );
    run(&mut db, "DELETE FROM t", &[]).unwrap();
}

#[test]
fn a_statement_that_never_ends_stops_when_told() {
    let mut db = ObjectDatabase::open(&[], None).unwrap();
    let mut rows = Rows::default();
    let query =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    let mut steps = 0;
    let error = db
        .exec(
            (query, &[]),
            move || {
                steps += 1;
                steps > 50
            },
            &mut rows,
        )
        .unwrap_err();
    assert_eq!(error.to_string(), "interrupted: SQLITE_INTERRUPT");
}

#[test]
fn a_log_outgrowing_its_database_becomes_a_snapshot() {
    let mut db = ObjectDatabase::open(&[], None).unwrap();
    run(&mut db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v)", &[]).unwrap();
    let mut records = Vec::new();
    let mut snapshot_at = None;
    for i in 0..400 {
        let params = [
            SqlParam::Real(f64::from(i % 3)),
            SqlParam::Text("x".repeat(3000)),
        ];
        run(&mut db, "INSERT OR REPLACE INTO t VALUES (?, ?)", &params).unwrap();
        let (record, snapshot) = db.take().unwrap().unwrap();
        if snapshot {
            snapshot_at.get_or_insert(i);
            records.clear();
        }
        records.push(record);
    }
    assert!(
        snapshot_at.is_some(),
        "400 rewrites of 3 rows made a snapshot"
    );
    let mut again = ObjectDatabase::open(&records, None).unwrap();
    let rows = run(&mut again, "SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(rows.rows, ["3"]);
}
