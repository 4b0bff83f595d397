//! A Worker's revisions: every change of what it runs (script, env, limits,
//! egress) is a revision, kept immutable in its own bundle Secret in the
//! operator namespace (`Bundle::revision_secret_name`). This module decides,
//! without I/O, which Secrets stay and what `status.revisions` says.
//!
//! # What is kept
//! - the latest revision;
//! - every revision that takes traffic now, that `spec.traffic` pins, or
//!   that took traffic before this reconcile (a router may still send it
//!   requests while it prewarms the new split);
//! - the newest `spec.revisionHistoryLimit` others (default 10).
//!
//! Everything else is deleted, oldest first, by the reconcile that finds it
//! beyond the limit. A Secret from an operator before per-revision Secrets
//! (`Bundle::secret_name`) is deleted once the latest revision has its own.

use std::collections::BTreeSet;

use isolane_crds::RevisionStatus;
use isolane_worker::{
    Bundle, REVISION_ANNOTATION, TrafficStatus, TrafficTarget, WORKER_ID_ANNOTATION,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::PartialObjectMeta;

use crate::routes::WorkerKey;

/// One bundle Secret of a Worker, as the operator's store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// The Secret's name.
    pub secret: String,
    /// The revision it holds.
    pub revision: String,
    /// When the Secret was created.
    pub created: Option<Timestamp>,
}

/// The Worker's bundle Secrets among `secrets` (the store's), newest first.
pub fn stored<'a>(
    key: &WorkerKey,
    secrets: impl IntoIterator<Item = &'a PartialObjectMeta<Secret>>,
) -> Vec<Stored> {
    let id = key.to_string();
    let mut stored: Vec<Stored> = secrets
        .into_iter()
        .filter_map(|secret| {
            let metadata = &secret.metadata;
            let annotations = metadata.annotations.as_ref()?;
            if annotations.get(WORKER_ID_ANNOTATION) != Some(&id) {
                return None;
            }
            Some(Stored {
                secret: metadata.name.clone()?,
                revision: annotations.get(REVISION_ANNOTATION)?.clone(),
                created: metadata.creation_timestamp.as_ref().map(|t| t.0),
            })
        })
        .collect();
    newest_first(&mut stored);
    stored
}

/// Orders `stored` newest first; revisions created in the same second by
/// Secret name.
fn newest_first(stored: &mut [Stored]) {
    stored.sort_by(|a, b| {
        b.created
            .cmp(&a.created)
            .then_with(|| a.secret.cmp(&b.secret))
    });
}

/// What the reconcile does with a Worker's revisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Secrets to delete.
    pub delete: Vec<String>,
    /// `status.revisions`, newest first.
    pub statuses: Vec<RevisionStatus>,
}

/// Decides which of the Worker's `stored` Secrets stay (module docs) and
/// the status lines. `latest` is the latest revision, written already when
/// `latest_written`; `traffic` the split now, `previous` the split the
/// status showed before; `limit` is `spec.revisionHistoryLimit`.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    key: &WorkerKey,
    stored: &[Stored],
    latest: Option<&str>,
    latest_written: bool,
    traffic: &[TrafficStatus],
    pinned: &[TrafficTarget],
    previous: &[TrafficStatus],
    limit: i32,
    now: Timestamp,
) -> Plan {
    let pinned: BTreeSet<&str> = pinned
        .iter()
        .filter_map(|t| t.revision.as_deref())
        .collect();
    let needed: BTreeSet<&str> = latest
        .into_iter()
        .chain(traffic.iter().map(|t| t.revision.as_str()))
        .chain(previous.iter().map(|t| t.revision.as_str()))
        .chain(pinned.iter().copied())
        .collect();
    let legacy = Bundle::secret_name(&key.namespace, &key.name);
    let (kept, delete) = keep(stored, &needed, &legacy, latest_written, limit);
    let statuses = statuses(kept, latest, latest_written, &pinned, traffic, now);
    Plan { delete, statuses }
}

/// `status.revisions`: the latest (when just written and not stored yet),
/// the kept Secrets, and pinned revisions whose Secret is gone (not ready),
/// each with its share of `traffic`.
fn statuses(
    kept: Vec<&Stored>,
    latest: Option<&str>,
    latest_written: bool,
    pinned: &BTreeSet<&str>,
    traffic: &[TrafficStatus],
    now: Timestamp,
) -> Vec<RevisionStatus> {
    let share = |revision: &str| -> i32 {
        traffic
            .iter()
            .filter(|t| t.revision == revision)
            .map(|t| t.percent)
            .sum()
    };
    let mut statuses: Vec<RevisionStatus> = Vec::new();
    // The latest, just written, may not be in the store yet.
    if let Some(latest) = latest
        && latest_written
        && !kept.iter().any(|k| k.revision == latest)
    {
        statuses.push(RevisionStatus {
            revision: latest.to_owned(),
            created: Some(now.to_string()),
            percent: share(latest),
            ready: true,
        });
    }
    // The latest leads even when stored: creation times are whole seconds,
    // so two revisions written within one second tie in `stored`'s order.
    let (first, rest): (Vec<&Stored>, Vec<&Stored>) = kept
        .into_iter()
        .partition(|k| latest.is_some_and(|latest| k.revision == latest));
    for secret in first.into_iter().chain(rest) {
        statuses.push(RevisionStatus {
            revision: secret.revision.clone(),
            created: secret.created.map(|t| t.to_string()),
            percent: share(&secret.revision),
            ready: true,
        });
    }
    // A pinned revision without a Secret (deleted by someone) is listed as
    // not ready, so the split that names it stays valid and visible.
    for revision in pinned.iter().copied() {
        if !statuses.iter().any(|s| s.revision == revision) {
            statuses.push(RevisionStatus {
                revision: revision.to_owned(),
                created: None,
                percent: share(revision),
                ready: false,
            });
        }
    }
    statuses
}

/// Splits `stored` into the Secrets kept, in order, and the names to
/// delete: duplicates of a revision go, the pre-revision `legacy` Secret
/// goes once the latest is written, the `needed` revisions stay, and up to
/// `limit` (at least one) others stay besides.
fn keep<'a>(
    stored: &'a [Stored],
    needed: &BTreeSet<&str>,
    legacy: &str,
    latest_written: bool,
    limit: i32,
) -> (Vec<&'a Stored>, Vec<String>) {
    let mut others = usize::try_from(limit.max(1)).unwrap_or(1);
    let mut kept: Vec<&Stored> = Vec::new();
    let mut delete = Vec::new();
    for secret in stored {
        let duplicate = kept.iter().any(|k| k.revision == secret.revision);
        if secret.secret == legacy && (latest_written || duplicate) {
            delete.push(secret.secret.clone());
            continue;
        }
        if duplicate {
            delete.push(secret.secret.clone());
        } else if needed.contains(secret.revision.as_str()) {
            kept.push(secret);
        } else if others > 0 {
            others -= 1;
            kept.push(secret);
        } else {
            delete.push(secret.secret.clone());
        }
    }
    (kept, delete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn key() -> WorkerKey {
        WorkerKey::new("ns", "w")
    }

    /// Revisions r0 (oldest) … r{n-1} (newest), newest first.
    fn history(n: usize) -> Vec<Stored> {
        (0..n)
            .rev()
            .map(|i| Stored {
                secret: Bundle::revision_secret_name("ns", "w", &format!("{i:016x}")),
                revision: format!("{i:016x}"),
                created: Some(at(i as i64 * 10)),
            })
            .collect()
    }

    fn share(revision: &str, percent: i32, latest: bool) -> TrafficStatus {
        TrafficStatus {
            revision: revision.to_owned(),
            percent,
            tag: None,
            latest,
        }
    }

    fn rev(i: usize) -> String {
        format!("{i:016x}")
    }

    #[test]
    fn keeps_the_latest_the_split_and_the_newest_others() {
        let stored = history(8);
        let latest = rev(7);
        let old = rev(1);
        let traffic = [share(&latest, 90, true), share(&old, 10, false)];
        let pinned = [TrafficTarget {
            revision: Some(old.clone()),
            latest_revision: None,
            percent: 10,
            tag: None,
        }];
        let plan = plan(
            &key(),
            &stored,
            Some(&latest),
            true,
            &traffic,
            &pinned,
            &[],
            2,
            at(100),
        );
        let kept: Vec<&str> = plan.statuses.iter().map(|s| s.revision.as_str()).collect();
        // r7 (latest), then the two newest others (r6, r5), and r1 (pinned).
        assert_eq!(kept, [rev(7), rev(6), rev(5), rev(1)]);
        let deleted: Vec<String> = [4, 3, 2, 0]
            .iter()
            .map(|i| Bundle::revision_secret_name("ns", "w", &rev(*i)))
            .collect();
        assert_eq!(plan.delete, deleted);
        let percents: Vec<i32> = plan.statuses.iter().map(|s| s.percent).collect();
        assert_eq!(percents, [90, 0, 0, 10]);
        assert!(plan.statuses.iter().all(|s| s.ready));
    }

    #[test]
    fn the_split_before_this_reconcile_is_kept_for_routers_still_on_it() {
        let stored = history(4);
        let plan = plan(
            &key(),
            &stored,
            Some(&rev(3)),
            true,
            &[share(&rev(3), 100, true)],
            &[],
            &[share(&rev(0), 100, false)],
            1,
            at(100),
        );
        let kept: Vec<&str> = plan.statuses.iter().map(|s| s.revision.as_str()).collect();
        assert_eq!(kept, [rev(3), rev(2), rev(0)]);
    }

    #[test]
    fn a_new_latest_not_in_the_store_yet_is_listed_and_the_legacy_secret_goes() {
        let legacy = Stored {
            secret: Bundle::secret_name("ns", "w"),
            revision: rev(0),
            created: Some(at(0)),
        };
        let plan = plan(
            &key(),
            &[legacy],
            Some(&rev(1)),
            true,
            &[share(&rev(1), 100, true)],
            &[],
            &[],
            10,
            at(100),
        );
        assert_eq!(plan.delete, [Bundle::secret_name("ns", "w")]);
        assert_eq!(plan.statuses.len(), 1);
        assert_eq!(plan.statuses[0].revision, rev(1));
        assert_eq!(
            plan.statuses[0].created.as_deref(),
            Some("1970-01-01T00:01:40Z")
        );
    }

    #[test]
    fn a_pinned_revision_without_a_secret_is_listed_not_ready() {
        let pinned = [TrafficTarget {
            revision: Some(rev(9)),
            latest_revision: None,
            percent: 100,
            tag: None,
        }];
        let plan = plan(
            &key(),
            &history(1),
            Some(&rev(0)),
            true,
            &[],
            &pinned,
            &[],
            10,
            at(100),
        );
        let missing = plan.statuses.iter().find(|s| s.revision == rev(9)).unwrap();
        assert!(!missing.ready);
        assert!(plan.delete.is_empty());
    }

    #[test]
    fn the_latest_leads_when_two_revisions_share_a_second() {
        // Both written in second 5; by name the older sorts first.
        let older = rev(0x1);
        let latest = rev(0xa);
        let stored_at = |revision: &str| Stored {
            secret: Bundle::revision_secret_name("ns", "w", revision),
            revision: revision.to_owned(),
            created: Some(at(5)),
        };
        let mut stored = vec![stored_at(&older), stored_at(&latest)];
        newest_first(&mut stored);
        let traffic = [share(&latest, 10, true), share(&older, 90, false)];
        let plan = plan(
            &key(),
            &stored,
            Some(&latest),
            true,
            &traffic,
            &[],
            &[],
            10,
            at(6),
        );
        let order: Vec<(&str, i32)> = plan
            .statuses
            .iter()
            .map(|s| (s.revision.as_str(), s.percent))
            .collect();
        assert_eq!(order, [(latest.as_str(), 10), (older.as_str(), 90)]);
    }
}
