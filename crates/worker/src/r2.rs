//! R2 bindings (`{name, r2Bucket: {bucket}}`, wrangler's `[[r2_buckets]]`):
//! an object bucket of the Worker's Kubernetes namespace, by name. Workers
//! of one namespace binding the same name share it; the same name in
//! another namespace is another bucket (docs/r2.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pattern of a bucket's name (R2's): 3 to 63 lowercase letters,
/// digits and `-`, starting and ending with a letter or digit.
pub const BUCKET_NAME_PATTERN: &str = r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$";

/// Why a cluster without an S3-compatible store for R2 refuses R2
/// bindings (docs/r2.md, "On a cluster").
pub const NOT_ON_A_CLUSTER: &str = "R2 bindings need an S3-compatible store: this cluster has none configured (the chart's storage.r2; docs/r2.md)";

/// `r2Bucket` of a binding: the bucket `env.NAME` reads and writes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct R2Binding {
    /// The bucket, by name (3 to 63 lowercase letters, digits and `-`,
    /// starting and ending with a letter or digit; wrangler's
    /// `bucket_name`). Its objects belong to the Worker's Kubernetes
    /// namespace.
    #[schemars(
        length(min = 3, max = 63),
        regex(pattern = r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
    )]
    pub bucket: String,
}

/// Whether `name` matches [`BUCKET_NAME_PATTERN`].
pub fn is_bucket_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (3..=63).contains(&bytes.len())
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_follow_the_pattern() {
        for good in ["abc", "my-bucket-2", &"b".repeat(63)] {
            assert!(is_bucket_name(good), "{good}");
        }
        for bad in [
            "",
            "ab",
            "-abc",
            "abc-",
            "ABC",
            "a_b",
            "ns/abc",
            &"b".repeat(64),
        ] {
            assert!(!is_bucket_name(bad), "{bad}");
        }
    }
}
