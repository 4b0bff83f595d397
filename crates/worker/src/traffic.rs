//! Traffic between a Worker's revisions: `spec.traffic`'s entries
//! ([`TrafficTarget`]) resolved into shares ([`TrafficStatus`]; the operator
//! writes them to `status.traffic`), and which share a request lands on (the
//! router, and every router replica the same way), kept by an affinity key
//! ([`VersionAffinity`]). Pure functions, property-tested below.
//!
//! A request falls in one of [`BUCKETS`] buckets: the bucket of its affinity
//! key when the Worker names one (so the same key keeps its revision while
//! the split holds), a random one otherwise. Shares take consecutive
//! buckets in `status.traffic` order, the share that follows the latest
//! revision first: in a gradual rollout (the latest revision against one
//! pinned revision), raising the latest share only moves keys onto it, so
//! a key that reached the new revision stays there as the rollout goes on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// How many buckets the percentages divide: one per percent.
pub const BUCKETS: u32 = 100;

/// The header a request names its revision with (a revision, a tag of
/// `spec.traffic`, or [`LATEST`]) when the Worker allows overrides. The
/// router sets the same header on every response to say which revision
/// answered.
pub use crate::headers::REVISION as REVISION_HEADER;

/// The override value for the latest revision.
pub const LATEST: &str = "latest";

/// One share of the Worker's traffic.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.revision) != (has(self.latestRevision) && self.latestRevision)",
        "message": "each entry of spec.traffic sets exactly one of revision or latestRevision: true"
    }
]))]
pub struct TrafficTarget {
    /// A revision from `status.revisions` (its 16 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 16, max = 16), regex(pattern = r"^[0-9a-f]{16}$"))]
    pub revision: Option<String>,

    /// Follow the latest revision: each new revision takes this share once
    /// the nodes that serve it have compiled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_revision: Option<bool>,

    /// The share of requests, 0 to 100.
    #[schemars(range(min = 0, max = 100))]
    pub percent: i32,

    /// A name for this entry (`stable`, `canary`): shown in status, and
    /// accepted by `x-isolane-revision` when overrides are allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub tag: Option<String>,
}

impl TrafficTarget {
    /// Whether this entry follows the latest revision.
    pub fn follows_latest(&self) -> bool {
        self.latest_revision == Some(true)
    }
}

/// Where a request's affinity key is read from: exactly one of the two.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.header) != has(self.cookie)",
        "message": "exactly one of header or cookie must be set"
    }
]))]
pub struct VersionAffinity {
    /// A request header whose value is the key (e.g. `x-user-id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
    )]
    pub header: Option<String>,

    /// A cookie whose value is the key (e.g. `session`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
    )]
    pub cookie: Option<String>,
}

/// One share of the traffic, resolved.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrafficStatus {
    /// The revision taking this share.
    #[schemars(length(max = 16))]
    pub revision: String,
    /// The share of requests, 0 to 100.
    pub percent: i32,
    /// The entry's tag in `spec.traffic`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Whether this share follows the latest revision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latest: bool,
}

/// Why `spec.traffic` cannot be resolved now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrafficError {
    /// A pinned revision is not one the Worker keeps.
    #[error(
        "spec.traffic pins revision {0}, which this Worker does not have (see status.revisions)"
    )]
    UnknownRevision(String),
    /// An entry follows the latest revision, and there is none yet (the
    /// script never parsed).
    #[error("spec.traffic follows the latest revision, and no revision is ready yet")]
    NoLatest,
}

/// `spec.traffic` as shares of revisions: an empty split is 100 % for the
/// latest revision (none while there is no latest); `exists` says whether a
/// pinned revision is one the Worker keeps. The share following the latest
/// revision comes first, then the others in spec order.
pub fn resolve(
    spec: &[TrafficTarget],
    latest: Option<&str>,
    exists: impl Fn(&str) -> bool,
) -> Result<Vec<TrafficStatus>, TrafficError> {
    if spec.is_empty() {
        return Ok(latest
            .map(|latest| TrafficStatus {
                revision: latest.to_owned(),
                percent: 100,
                tag: None,
                latest: true,
            })
            .into_iter()
            .collect());
    }
    let mut shares = Vec::with_capacity(spec.len());
    for target in spec.iter().filter(|t| t.follows_latest()) {
        shares.push(TrafficStatus {
            revision: latest.ok_or(TrafficError::NoLatest)?.to_owned(),
            percent: target.percent,
            tag: target.tag.clone(),
            latest: true,
        });
    }
    for target in spec.iter().filter(|t| !t.follows_latest()) {
        let revision = target.revision.clone().unwrap_or_default();
        if !exists(&revision) {
            return Err(TrafficError::UnknownRevision(revision));
        }
        shares.push(TrafficStatus {
            revision,
            percent: target.percent,
            tag: target.tag.clone(),
            latest: false,
        });
    }
    Ok(shares)
}

/// The split at a glance, for `kubectl get wk`: `90% 1a2b3c4d (stable),
/// 10% 5e6f7a8b (latest)`; shares of 0 % are left out.
pub fn summary(traffic: &[TrafficStatus]) -> String {
    traffic
        .iter()
        .filter(|share| share.percent > 0)
        .map(|share| {
            let short: String = share.revision.chars().take(8).collect();
            let mut names: Vec<&str> = Vec::new();
            if let Some(tag) = &share.tag {
                names.push(tag);
            }
            if share.latest {
                names.push(LATEST);
            }
            if names.is_empty() {
                format!("{}% {short}", share.percent)
            } else {
                format!("{}% {short} ({})", share.percent, names.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bucket of an affinity key for `worker_id`: the same on every router.
pub fn affinity_bucket(worker_id: &str, key: &[u8]) -> u32 {
    let seed = xxh3_64_with_seed(worker_id.as_bytes(), AFFINITY_SEED);
    (xxh3_64_with_seed(key, seed) % u64::from(BUCKETS)) as u32
}

const AFFINITY_SEED: u64 = 0x6973_6f6c_616e_6576;

/// Which share (index into `percents`, in `status.traffic` order) a request
/// in `bucket` lands on; `None` when the percentages leave it uncovered
/// (they sum to less than 100, which the schema forbids).
pub fn share_for(percents: impl IntoIterator<Item = i32>, bucket: u32) -> Option<usize> {
    let mut upper: u32 = 0;
    for (index, percent) in percents.into_iter().enumerate() {
        upper = upper.saturating_add(u32::try_from(percent).unwrap_or(0));
        if bucket < upper {
            return Some(index);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pinned(revision: &str, percent: i32, tag: Option<&str>) -> TrafficTarget {
        TrafficTarget {
            revision: Some(revision.to_owned()),
            latest_revision: None,
            percent,
            tag: tag.map(str::to_owned),
        }
    }

    fn latest(percent: i32) -> TrafficTarget {
        TrafficTarget {
            revision: None,
            latest_revision: Some(true),
            percent,
            tag: None,
        }
    }

    #[test]
    fn an_empty_split_is_all_latest() {
        let shares = resolve(&[], Some("bbbb"), |_| false).unwrap();
        assert_eq!(shares.len(), 1);
        assert_eq!(shares[0].revision, "bbbb");
        assert_eq!(shares[0].percent, 100);
        assert!(shares[0].latest);
        assert!(resolve(&[], None, |_| true).unwrap().is_empty());
    }

    #[test]
    fn the_latest_share_comes_first_and_pins_must_exist() {
        let spec = [pinned("aaaa", 90, Some("stable")), latest(10)];
        let shares = resolve(&spec, Some("bbbb"), |r| r == "aaaa").unwrap();
        let order: Vec<(&str, i32, bool)> = shares
            .iter()
            .map(|s| (s.revision.as_str(), s.percent, s.latest))
            .collect();
        assert_eq!(order, [("bbbb", 10, true), ("aaaa", 90, false)]);
        assert_eq!(summary(&shares), "10% bbbb (latest), 90% aaaa (stable)");
        assert_eq!(
            resolve(&spec, Some("bbbb"), |_| false).unwrap_err(),
            TrafficError::UnknownRevision("aaaa".into())
        );
        assert_eq!(
            resolve(&spec, None, |_| true).unwrap_err(),
            TrafficError::NoLatest
        );
        // A rollback: everything pinned on the old revision.
        let back = resolve(&[pinned("aaaa", 100, None)], Some("bbbb"), |_| true).unwrap();
        assert_eq!(summary(&back), "100% aaaa");
    }

    #[test]
    fn buckets_are_covered_exactly_by_the_percentages() {
        let percents = [10, 0, 60, 30];
        let mut counts = [0; 4];
        for bucket in 0..BUCKETS {
            counts[share_for(percents, bucket).unwrap()] += 1;
        }
        assert_eq!(counts, [10, 0, 60, 30]);
        assert_eq!(share_for([50, 40], 95), None);
    }

    #[test]
    fn affinity_buckets_are_stable_and_spread() {
        assert_eq!(
            affinity_bucket("a/w", b"user-1"),
            affinity_bucket("a/w", b"user-1")
        );
        let mut counts = [0u32; BUCKETS as usize];
        for key in 0..100_000 {
            counts[affinity_bucket("a/w", format!("user-{key}").as_bytes()) as usize] += 1;
        }
        // 1000 expected per bucket.
        assert!(
            counts.iter().all(|&n| (850..1150).contains(&n)),
            "{counts:?}"
        );
    }

    proptest! {
        /// In a rollout (latest against one pinned revision), raising the
        /// latest share from `from` to `to` moves keys only onto it.
        #[test]
        fn a_growing_latest_share_only_takes_keys(
            from in 0i32..=100, grow in 0i32..=100, key in any::<Vec<u8>>()
        ) {
            let to = (from + grow).min(100);
            let bucket = affinity_bucket("a/w", &key);
            let before = share_for([from, 100 - from], bucket).unwrap();
            let after = share_for([to, 100 - to], bucket).unwrap();
            prop_assert!(before == after || after == 0, "{before} -> {after}");
        }

        /// Percentages that sum to 100 cover every bucket.
        #[test]
        fn every_bucket_has_a_share(a in 0i32..=100, b in 0i32..=100, bucket in 0..BUCKETS) {
            let b = b.min(100 - a);
            prop_assert!(share_for([a, b, 100 - a - b], bucket).is_some());
        }
    }
}
