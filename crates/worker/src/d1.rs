//! D1 bindings (`{name, d1: {database}}`, wrangler's `[[d1_databases]]`):
//! a SQL database of the Worker's Kubernetes namespace, by name. Workers of
//! one namespace binding the same name share it; the same name in another
//! namespace is another database (docs/d1.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pattern of a D1 database's name: 1 to 63 letters, digits, `-` or
/// `_`, starting with a letter or digit.
pub const DATABASE_NAME_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$";

/// `d1` of a binding: the database `env.NAME` queries.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct D1Binding {
    /// The database, by name (1 to 63 letters, digits, `-` or `_`, starting
    /// with a letter or digit; wrangler's `database_name`). Its data
    /// belongs to the Worker's Kubernetes namespace.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
    )]
    pub database: String,
}

/// The class part of a D1 database's placement key: no JavaScript class
/// can be named so.
pub const RING_CLASS: &str = "#d1";

/// Database `database` of Kubernetes namespace `namespace` on the ring:
/// `<namespace>/#d1/<database>`, the key whose first node owns it (the
/// engine's calls, `isolane d1 migrations apply --remote` alike).
pub fn placement_key(namespace: &str, database: &str) -> String {
    format!("{namespace}/{RING_CLASS}/{database}")
}

/// Whether `name` matches [`DATABASE_NAME_PATTERN`].
pub fn is_database_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_follow_the_pattern() {
        for good in ["probe", "my-db_2", "A", &"d".repeat(63)] {
            assert!(is_database_name(good), "{good}");
        }
        for bad in ["", "-db", "_db", "a.b", "a/b", "ns/db", &"d".repeat(64)] {
            assert!(!is_database_name(bad), "{bad}");
        }
    }
}
