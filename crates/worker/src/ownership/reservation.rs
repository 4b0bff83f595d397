//! Hosts the platform admin reserves for one namespace (`--reserved-host`).

use std::str::FromStr;

use crate::route::normalize_name;

/// A host or domain the platform admin reserves for one namespace:
/// `example.com` reserves that host; `*.example.com` reserves every host
/// under `example.com`, at any depth, and every wildcard among them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reservation {
    pub host: String,
    pub namespace: String,
}

impl Reservation {
    /// Whether this reservation covers the (normalised) host pattern `host`.
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
        let (host, namespace) = (normalize_name(host.trim()), namespace.trim());
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

#[cfg(test)]
mod tests {
    use super::*;

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
            "example.com:80=ns",
        ] {
            assert!(bad.parse::<Reservation>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_domain_reservation_covers_every_host_under_it() {
        let r: Reservation = "*.corp.example=a".parse().unwrap();
        assert!(r.covers("x.corp.example"));
        assert!(r.covers("*.x.corp.example"));
        assert!(r.covers("a.b.corp.example"));
        assert!(!r.covers("corp.example"));
        assert!(!r.covers("xcorp.example"));
    }
}
