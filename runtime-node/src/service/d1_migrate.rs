//! `D1Migrate`: wrangler's D1 migrations applied to a database this node
//! owns on the ring (`isolane d1 migrations apply --remote`, through the
//! router, which checked the caller's rights; docs/d1.md). The files run
//! on the node's one copy of the database, the copy Worker calls use, so a
//! migration is a write like theirs: one transaction per file, appended to
//! the log fenced by the owner epoch before the next file starts.

use isolane_engine::Engine;
use isolane_proto::runtime::v1::{D1MigrateRequest, D1MigrateResponse};
use isolane_storage::d1::{Migration, MigrationError, is_table_name, migration_order};
use tonic::Status;

use crate::admission::Admission;

/// Runs `request` on this node (`node`) if it owns the database.
pub(super) async fn migrate(
    engine: &Engine,
    admission: &Admission,
    node: &str,
    request: D1MigrateRequest,
) -> Result<D1MigrateResponse, Status> {
    let D1MigrateRequest {
        namespace,
        database,
        table,
        files,
        list_only,
    } = request;
    if !isolane_telemetry::is_dns_label(&namespace)
        || !isolane_worker::d1::is_database_name(&database)
        || !is_table_name(&table)
    {
        return Err(Status::invalid_argument(
            "a D1 migration names a namespace, a database name and a table name",
        ));
    }
    let store = owned(engine, admission, node, &namespace, &database)?;
    let files: Vec<Migration> = files
        .into_iter()
        .map(|f| Migration {
            name: f.name,
            sql: f.sql,
        })
        .collect();
    let at = (namespace.as_str(), database.as_str());
    if list_only {
        let (_, done) = store
            .d1_applied_migrations(at, &table)
            .await
            .map_err(refusal)?;
        let mut pending: Vec<String> = files
            .into_iter()
            .map(|f| f.name)
            .filter(|name| !done.contains(name))
            .collect();
        pending.sort_by(|a, b| migration_order(a, b));
        return Ok(D1MigrateResponse {
            files: pending,
            applied: done,
            ..D1MigrateResponse::default()
        });
    }
    let result = store.d1_migrate(at, &table, files).await;
    answer(&namespace, &database, result)
}

/// The node's store, when this node owns `namespace`'s `database` on the
/// ring and is not draining.
fn owned<'e>(
    engine: &'e Engine,
    admission: &Admission,
    node: &str,
    namespace: &str,
    database: &str,
) -> Result<&'e isolane_storage::Store, Status> {
    let store = engine
        .config()
        .store
        .as_ref()
        .ok_or_else(|| Status::failed_precondition("this node has no store"))?;
    let key = isolane_worker::d1::placement_key(namespace, database);
    let owner = engine.config().objects.as_ref().and_then(|p| p.owner(&key));
    if admission.is_draining() || owner.is_some() {
        let owner = owner.unwrap_or_else(|| "another node".to_owned());
        return Err(Status::failed_precondition(format!(
            "node {node} does not own D1 database {namespace}/{database}: {owner} does"
        )));
    }
    Ok(store)
}

/// The answer to an apply: the files applied, or those and the one that
/// failed with why.
fn answer(
    namespace: &str,
    database: &str,
    result: Result<Vec<String>, MigrationError>,
) -> Result<D1MigrateResponse, Status> {
    match result {
        Ok(applied) => {
            tracing::info!(%namespace, %database, applied = applied.len(), "D1 migrations applied");
            Ok(D1MigrateResponse {
                files: applied,
                ..D1MigrateResponse::default()
            })
        }
        Err(MigrationError::Failed {
            file,
            applied,
            source,
        }) => {
            tracing::info!(%namespace, %database, %file, error = %source, "a D1 migration failed");
            Ok(D1MigrateResponse {
                files: applied,
                failed_file: file,
                error: source.to_string(),
                ..D1MigrateResponse::default()
            })
        }
        Err(error) => Err(refusal(error)),
    }
}

/// A migration that did not run to its end for a reason of the node's or
/// the input's: the store's failures (a fenced write: another node took
/// the database) are worth another try; bad names are not.
fn refusal(error: MigrationError) -> Status {
    match error {
        MigrationError::Store { .. } => Status::unavailable(error.to_string()),
        _ => Status::invalid_argument(error.to_string()),
    }
}
