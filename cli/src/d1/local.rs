//! `--local` (the default): the database of `isolane dev`'s state folder,
//! opened as `isolane dev` opens it (`Store::d1_open`), which fences a
//! running `isolane dev`'s copy (docs/d1.md, "Migrations").

use std::path::Path;

use isolane_storage::Store;
use isolane_storage::d1::MigrationError;

use super::files::{Failed, Folder};
use crate::deploy::ProjectArgs;

/// `isolane dev` serves a wrangler project in namespace `dev`; a Worker
/// YAML's database lives in its own namespace (`--namespace`).
fn namespace(project: &ProjectArgs) -> &str {
    if project.namespace == "default" {
        "dev"
    } else {
        project.namespace.as_str()
    }
}

/// Applies `folder`'s files not applied yet; the files applied.
pub async fn apply(
    state: &Path,
    project: &ProjectArgs,
    folder: &Folder,
) -> Result<Vec<String>, Failed> {
    let files = folder.files()?;
    let store = Store::sqlite(state);
    let at = (namespace(project), folder.name.as_str());
    store
        .d1_migrate(at, &folder.table, files)
        .await
        .map_err(|error: MigrationError| Failed {
            applied: error.applied().to_vec(),
            error: error.into(),
        })
}

/// The files of `folder` not applied yet.
pub async fn pending(
    state: &Path,
    project: &ProjectArgs,
    folder: &Folder,
) -> anyhow::Result<Vec<String>> {
    let names = folder.names()?;
    let store = Store::sqlite(state);
    let at = (namespace(project), folder.name.as_str());
    let (_, done) = store.d1_applied_migrations(at, &folder.table).await?;
    Ok(names.into_iter().filter(|n| !done.contains(n)).collect())
}
