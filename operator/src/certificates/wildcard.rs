//! Wildcard mode (`--certificates-mode wildcard`): which hosts a `*.<domain>`
//! Certificate of a namespace may cover. A namespace *holds* a domain when
//! a reservation `*.<domain>=<namespace>` gives it every host under it and
//! no reservation for another namespace covers a host one label under it:
//! a wildcard valid for another tenant's host is never asked for, as
//! whoever reads its Secret could serve that host. The Certificate covers
//! the hosts one label under the domain and the wildcard route `*.<domain>`
//! itself (what one `*.<domain>` name matches); every other exact host gets
//! its own Certificate, and other wildcard routes get none.

use std::collections::{BTreeMap, BTreeSet};

use isolane_worker::{Reservation, normalize_host};

use super::{CertificateSettings, Mode, certificate_name};
use crate::routes::WorkerKey;

/// Whether `namespace` holds every host one label under `domain`.
pub fn holds(namespace: &str, domain: &str, reservations: &[Reservation]) -> bool {
    let wildcard = format!("*.{domain}");
    let given = reservations
        .iter()
        .any(|r| r.namespace == namespace && r.host == wildcard);
    // A host name no real label equals: it stands for any label under `domain`.
    let any_label = format!("-.{domain}");
    let taken = reservations.iter().any(|r| {
        r.namespace != namespace
            && match r.host.strip_prefix("*.") {
                Some(_) => r.covers(&any_label),
                None => r.host.split_once('.').map(|(_, parent)| parent) == Some(domain),
            }
    });
    given && !taken
}

/// The domains `namespace` holds (see [`holds`]).
pub fn held_domains(namespace: &str, reservations: &[Reservation]) -> Vec<String> {
    let mut domains: Vec<String> = reservations
        .iter()
        .filter(|r| r.namespace == namespace)
        .filter_map(|r| r.host.strip_prefix("*."))
        .filter(|domain| holds(namespace, domain, reservations))
        .map(str::to_owned)
        .collect();
    domains.sort();
    domains.dedup();
    domains
}

/// The domain whose `*.<domain>` Certificate covers `host` (a wildcard
/// route `*.<domain>`, or an exact host one label under it) in
/// `namespace`, when the namespace holds it.
pub fn covering_domain(
    host: &str,
    namespace: &str,
    reservations: &[Reservation],
) -> Option<String> {
    let host = normalize_host(host);
    let (label, domain) = host.split_once('.')?;
    (!label.is_empty() && holds(namespace, domain, reservations)).then(|| domain.to_owned())
}

/// One Worker's admitted hosts, by the Certificate that covers each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Exact hosts with a Certificate of their own.
    pub per_host: Vec<String>,
    /// Domain → the hosts its `*.<domain>` Certificate covers.
    pub wildcard: BTreeMap<String, Vec<String>>,
    /// Wildcard hosts no Certificate covers.
    pub uncovered: Vec<String>,
}

/// Splits `hosts`, admitted to a Worker of `namespace`, under `settings`.
pub fn split(hosts: &[String], namespace: &str, settings: &CertificateSettings) -> Split {
    let mut split = Split::default();
    for host in hosts {
        let domain = match settings.mode {
            Mode::PerHost => None,
            Mode::Wildcard => covering_domain(host, namespace, &settings.reservations),
        };
        match domain {
            Some(domain) => split.wildcard.entry(domain).or_default().push(host.clone()),
            None if host.starts_with("*.") => split.uncovered.push(host.clone()),
            None => split.per_host.push(host.clone()),
        }
    }
    split
}

/// The wildcard Certificates `namespace` should have: each domain it holds
/// under which one of `workers` (each with its admitted hosts) is
/// admitted to a host the Certificate covers, with those Workers (its
/// owners).
pub fn desired_wildcards<'a>(
    namespace: &str,
    reservations: &[Reservation],
    workers: impl IntoIterator<Item = (&'a WorkerKey, &'a [String])>,
) -> BTreeMap<String, BTreeSet<WorkerKey>> {
    let mut wanted: BTreeMap<String, BTreeSet<WorkerKey>> = BTreeMap::new();
    for (key, hosts) in workers {
        if key.namespace != namespace {
            continue;
        }
        for host in hosts {
            if let Some(domain) = covering_domain(host, namespace, reservations) {
                wanted.entry(domain).or_default().insert(key.clone());
            }
        }
    }
    wanted
}

/// The domains whose wildcard Certificate still serves an exact host of
/// `workers` (each with its admitted hosts) that has no Ready Certificate
/// of its own (`ready`: the names of the namespace's Ready ones), after a
/// switch to per-host mode. Wildcard routes are left out: they get no
/// Certificate of their own to wait for.
pub fn awaiting<'a>(
    namespace: &str,
    reservations: &[Reservation],
    workers: impl IntoIterator<Item = (&'a WorkerKey, &'a [String])>,
    ready: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut domains = BTreeSet::new();
    for (key, hosts) in workers {
        for host in hosts.iter().filter(|host| !host.starts_with("*.")) {
            if let Some(domain) = covering_domain(host, namespace, reservations)
                && !ready.contains(&certificate_name(&key.name, host))
            {
                domains.insert(domain);
            }
        }
    }
    domains
}

#[cfg(test)]
mod tests;
