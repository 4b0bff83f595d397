//! Host ownership: a host — every path under it, and any wildcard that
//! covers it — is served by Workers of at most one namespace.
//!
//! [`decide`] is the one rule, a pure function used alike by the operator's
//! admission webhook (refuse a claim), its status (`RoutesAdmitted`) and the
//! router's route table (serve only admitted claims), so the three can never
//! disagree. It knows nothing of Kubernetes.
//!
//! Hosts are exact (`api.example.com`) or one-label wildcards
//! (`*.example.com`, which matches `api.example.com` but neither
//! `example.com` nor `a.b.example.com`). Two host patterns *overlap* when some
//! request host matches both: equal patterns, or a wildcard and an exact host
//! one label under it. Claims are taken oldest first (the age of a namespace's
//! claim on a host is that of its oldest Worker claiming it; ties by
//! namespace, then host); a claim is admitted unless it overlaps a claim of
//! another namespace admitted before it, or a host the platform admin
//! reserved for another namespace ([`Reservation`]). Within one namespace
//! nothing here applies: the per-route rules (oldest Worker keeps a host +
//! path prefix) decide.
//!
//! [`RouteIndex`] is the other half: which route answers a request's host
//! and path, for the router and `isolane dev` alike.

mod routes;

pub use routes::{ANY_HOST, RouteIndex, normalize_host, prefix_matches};

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

/// One namespace's claim on a host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub namespace: String,
    /// An exact host or a one-label wildcard, as in a Worker's routes.
    pub host: String,
    /// When the oldest Worker making this claim was created (any unit that
    /// orders; `None`: unknown, sorts last).
    pub since: Option<i128>,
    /// That Worker's name, to name it in messages.
    pub worker: String,
}

/// A host or domain the platform admin reserves for one namespace:
/// `example.com` reserves that host; `*.example.com` reserves every host
/// under `example.com`, at any depth, and every wildcard among them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reservation {
    pub host: String,
    pub namespace: String,
}

/// Who holds what a refused claim wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// Another namespace's Worker, whose claim was admitted first.
    Worker {
        namespace: String,
        worker: String,
        host: String,
    },
    /// A reservation for another namespace.
    Reserved { namespace: String, host: String },
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Worker {
                namespace,
                worker,
                host,
            } => write!(
                f,
                "host {host} belongs to namespace {namespace} (Worker {namespace}/{worker})"
            ),
            Owner::Reserved { namespace, host } => {
                write!(f, "host {host} is reserved for namespace {namespace}")
            }
        }
    }
}

/// The decision over every claim.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Owners {
    /// (namespace, host) → `None` if admitted, else who holds it.
    decisions: BTreeMap<(String, String), Option<Owner>>,
}

impl Owners {
    /// Whether `namespace` may serve `host`: `Ok` for claims that were
    /// admitted (and for hosts nobody claimed), else who holds it.
    pub fn check(&self, namespace: &str, host: &str) -> Result<(), &Owner> {
        match self.decisions.get(&(namespace.to_owned(), normalize(host))) {
            Some(Some(owner)) => Err(owner),
            _ => Ok(()),
        }
    }

    /// Every decision: ((namespace, host), refusal).
    pub fn decisions(&self) -> impl Iterator<Item = (&(String, String), &Option<Owner>)> {
        self.decisions.iter()
    }
}

/// Lower case, without a trailing dot.
pub fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether some request host matches both patterns.
pub fn overlap(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let under = |wildcard: &str, exact: &str| {
        wildcard.strip_prefix("*.").is_some_and(|suffix| {
            !exact.starts_with("*.")
                && exact
                    .split_once('.')
                    .is_some_and(|(label, rest)| !label.is_empty() && rest == suffix)
        })
    };
    under(a, b) || under(b, a)
}

impl Reservation {
    /// Whether this reservation covers the host pattern `host`.
    pub fn covers(&self, host: &str) -> bool {
        match self.host.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
            None => host == self.host,
        }
    }
}

/// A reservation written as `host=namespace` is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid host reservation {0:?}: expected host=namespace, e.g. *.example.com=team-a")]
pub struct ParseReservationError(String);

impl FromStr for Reservation {
    type Err = ParseReservationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || ParseReservationError(s.to_owned());
        let (host, namespace) = s.split_once('=').ok_or_else(invalid)?;
        let (host, namespace) = (normalize(host.trim()), namespace.trim());
        let labels_ok = host
            .trim_start_matches("*.")
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        if !labels_ok || namespace.is_empty() || host.matches('*').count() > 1 {
            return Err(invalid());
        }
        Ok(Self {
            host,
            namespace: namespace.to_owned(),
        })
    }
}

/// Decides every claim: see the crate documentation.
pub fn decide(claims: impl IntoIterator<Item = Claim>, reservations: &[Reservation]) -> Owners {
    // One claim per (namespace, host): the oldest Worker's.
    let mut merged: HashMap<(String, String), Claim> = HashMap::new();
    for mut claim in claims {
        claim.host = normalize(&claim.host);
        let key = (claim.namespace.clone(), claim.host.clone());
        match merged.get(&key) {
            Some(existing) if order(existing) <= order(&claim) => {}
            _ => {
                merged.insert(key, claim);
            }
        }
    }
    let mut claims: Vec<Claim> = merged.into_values().collect();
    claims.sort_by(|a, b| order(a).cmp(&order(b)));

    let mut admitted = Admitted::default();
    let mut decisions = BTreeMap::new();
    for claim in claims {
        let refusal = reservations
            .iter()
            .find(|r| r.namespace != claim.namespace && r.covers(&claim.host))
            .map(|r| Owner::Reserved {
                namespace: r.namespace.clone(),
                host: r.host.clone(),
            })
            .or_else(|| admitted.blocking(&claim));
        if refusal.is_none() {
            admitted.add(&claim);
        }
        decisions.insert((claim.namespace, claim.host), refusal);
    }
    Owners { decisions }
}

/// The sort key: oldest first, unknown ages last, then namespace, host.
fn order(claim: &Claim) -> (bool, Option<i128>, &str, &str, &str) {
    (
        claim.since.is_none(),
        claim.since,
        &claim.namespace,
        &claim.host,
        &claim.worker,
    )
}

/// Admitted claims, indexed for the overlap test.
#[derive(Default)]
struct Admitted {
    /// Every admitted pattern → its claim.
    by_host: HashMap<String, Vec<Claim>>,
    /// Admitted exact hosts by their parent domain (`a.example.com` under
    /// `example.com`), for wildcards.
    by_parent: HashMap<String, Vec<Claim>>,
}

impl Admitted {
    fn add(&mut self, claim: &Claim) {
        self.by_host
            .entry(claim.host.clone())
            .or_default()
            .push(claim.clone());
        if !claim.host.starts_with("*.")
            && let Some((_, parent)) = claim.host.split_once('.')
        {
            self.by_parent
                .entry(parent.to_owned())
                .or_default()
                .push(claim.clone());
        }
    }

    /// An admitted claim of another namespace that overlaps `claim`.
    fn blocking(&self, claim: &Claim) -> Option<Owner> {
        let other = |c: &&Claim| c.namespace != claim.namespace;
        let mut candidates: Vec<&Claim> = Vec::new();
        candidates.extend(
            self.by_host
                .get(&claim.host)
                .into_iter()
                .flatten()
                .filter(other),
        );
        match claim.host.strip_prefix("*.") {
            Some(suffix) => {
                candidates.extend(
                    self.by_parent
                        .get(suffix)
                        .into_iter()
                        .flatten()
                        .filter(other),
                );
            }
            None => {
                if let Some((_, parent)) = claim.host.split_once('.') {
                    let wildcard = format!("*.{parent}");
                    candidates.extend(
                        self.by_host
                            .get(&wildcard)
                            .into_iter()
                            .flatten()
                            .filter(other),
                    );
                }
            }
        }
        candidates
            .into_iter()
            .min_by(|a, b| order(a).cmp(&order(b)))
            .map(|c| Owner::Worker {
                namespace: c.namespace.clone(),
                worker: c.worker.clone(),
                host: c.host.clone(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(namespace: &str, host: &str, since: i128) -> Claim {
        Claim {
            namespace: namespace.into(),
            host: host.into(),
            since: Some(since),
            worker: format!("w-{host}"),
        }
    }

    #[test]
    fn patterns_overlap_when_a_host_matches_both() {
        assert!(overlap("a.example.com", "a.example.com"));
        assert!(overlap("*.example.com", "a.example.com"));
        assert!(overlap("a.example.com", "*.example.com"));
        assert!(!overlap("*.example.com", "example.com"));
        assert!(!overlap("*.example.com", "a.b.example.com"));
        assert!(!overlap("*.example.com", "*.b.example.com"));
        assert!(!overlap("a.example.com", "b.example.com"));
    }

    #[test]
    fn the_older_namespace_keeps_a_host_and_every_wildcard_over_it() {
        let owners = decide(
            [
                claim("b", "victim.example", 1),
                claim("a", "victim.example", 2),
                claim("a", "*.example", 3),
                claim("c", "other.example", 4),
                claim("b", "login.victim.example", 5),
            ],
            &[],
        );
        assert_eq!(owners.check("b", "victim.example"), Ok(()));
        assert_eq!(
            owners.check("a", "victim.example").unwrap_err().to_string(),
            "host victim.example belongs to namespace b (Worker b/w-victim.example)"
        );
        // `*.example` covers victim.example, held by b.
        assert!(owners.check("a", "*.example").is_err());
        assert_eq!(owners.check("c", "other.example"), Ok(()));
        assert_eq!(owners.check("b", "login.victim.example"), Ok(()));
    }

    #[test]
    fn reservations_keep_other_namespaces_out() {
        let reservations: Vec<Reservation> = ["*.corp.example=team-a", "corp.example=team-a"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        let owners = decide(
            [
                claim("team-b", "x.corp.example", 1),
                claim("team-b", "*.a.corp.example", 2),
                claim("team-b", "corp.example", 3),
                claim("team-a", "y.corp.example", 4),
                claim("team-b", "corpexample.com", 5),
            ],
            &reservations,
        );
        assert!(owners.check("team-b", "x.corp.example").is_err());
        assert!(owners.check("team-b", "*.a.corp.example").is_err());
        assert_eq!(
            owners
                .check("team-b", "corp.example")
                .unwrap_err()
                .to_string(),
            "host corp.example is reserved for namespace team-a"
        );
        assert_eq!(owners.check("team-a", "y.corp.example"), Ok(()));
        assert_eq!(owners.check("team-b", "corpexample.com"), Ok(()));
    }

    #[test]
    fn reservations_parse_and_refuse_nonsense() {
        let r: Reservation = "*.Example.COM.=team-a".parse().unwrap();
        assert_eq!(r.host, "*.example.com");
        for bad in [
            "example.com",
            "=ns",
            "*.=ns",
            "a..b=ns",
            "a.*.b=ns",
            "x.example.com=",
        ] {
            assert!(bad.parse::<Reservation>().is_err(), "{bad}");
        }
    }
}
