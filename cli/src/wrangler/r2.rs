//! wrangler's `[[r2_buckets]]`: each an R2 binding (`{name, r2Bucket:
//! {bucket}}`) to the bucket named by `bucket_name` in the Worker's
//! Kubernetes namespace. `preview_bucket_name` names Cloudflare's bucket
//! for `wrangler dev --remote`, which serving does not use; `jurisdiction`
//! (where Cloudflare keeps the data) and `remote` (Cloudflare's bucket from
//! local development) are problems (docs/r2.md).

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Problem;
use isolane_worker::Binding;

/// `r2_buckets[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct R2Config {
    pub binding: String,
    pub bucket_name: Option<String>,
    #[serde(rename = "preview_bucket_name")]
    _preview_bucket_name: Option<IgnoredAny>,
    pub jurisdiction: Option<String>,
    pub remote: Option<bool>,
    #[serde(rename = "experimental_remote")]
    _experimental_remote: Option<IgnoredAny>,
}

/// `r2_buckets` as bindings.
pub fn bindings(config: &super::Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, r2) in config.r2_buckets.iter().enumerate() {
        if r2.remote == Some(true) {
            problems.push(Problem {
                key: format!("r2_buckets[{i}].remote"),
                reason: "a remote binding reaches Cloudflare's bucket; Isolane serves its own"
                    .into(),
            });
        }
        if r2.jurisdiction.is_some() {
            problems.push(Problem {
                key: format!("r2_buckets[{i}].jurisdiction"),
                reason: "a jurisdiction is where Cloudflare keeps a bucket; Isolane keeps it where it runs".into(),
            });
        }
        let Some(bucket) = &r2.bucket_name else {
            problems.push(Problem {
                key: format!("r2_buckets[{i}].bucket_name"),
                reason: "an R2 binding needs bucket_name".into(),
            });
            continue;
        };
        bindings.push(Binding::r2(&r2.binding, bucket));
    }
}
