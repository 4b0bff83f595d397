//! wrangler's `[[d1_databases]]`: each a D1 binding (`{name, d1:
//! {database}}`) to the database named by `database_name` (else
//! `database_id`) in the Worker's Kubernetes namespace. `database_id` and
//! `preview_database_id` name Cloudflare's copy, which serving does not
//! use; `migrations_dir`, `migrations_pattern` and `migrations_table` are
//! `isolane d1 migrations apply`'s (`cli/src/d1.rs`); `remote`
//! (Cloudflare's database from local development) is a problem
//! (docs/d1.md).

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Problem;
use isolane_worker::Binding;

/// `d1_databases[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct D1Config {
    pub binding: String,
    pub database_name: Option<String>,
    pub database_id: Option<String>,
    #[serde(rename = "preview_database_id")]
    _preview_database_id: Option<IgnoredAny>,
    /// The folder of `isolane d1 migrations apply` (`migrations`).
    pub migrations_dir: Option<String>,
    /// The glob of its migrations (`<migrations_dir>/*.sql`).
    pub migrations_pattern: Option<String>,
    /// The table that records applied migrations (`d1_migrations`).
    pub migrations_table: Option<String>,
    #[serde(rename = "database_internal_env")]
    _internal_env: Option<IgnoredAny>,
    pub remote: Option<bool>,
    #[serde(rename = "experimental_remote")]
    _experimental_remote: Option<IgnoredAny>,
}

/// `d1_databases` as bindings.
pub fn bindings(config: &super::Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, d1) in config.d1_databases.iter().enumerate() {
        if d1.remote == Some(true) {
            problems.push(Problem {
                key: format!("d1_databases[{i}].remote"),
                reason: "a remote binding reaches Cloudflare's database; Isolane serves its own"
                    .into(),
            });
        }
        let database = d1.database_name.as_ref().or(d1.database_id.as_ref());
        let Some(database) = database else {
            problems.push(Problem {
                key: format!("d1_databases[{i}].database_name"),
                reason: "a D1 binding needs database_name (or database_id)".into(),
            });
            continue;
        };
        bindings.push(Binding::d1(&d1.binding, database));
    }
}
