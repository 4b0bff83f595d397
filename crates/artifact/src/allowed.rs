//! [`AllowedRegistries`]: the registries a cluster lets Workers' bundles
//! come from (`--bundle-registry` on the operator and the nodes).
//!
//! `spec.bundle` is written by a tenant, and the operator and every node
//! open connections to the registry it names, from inside the cluster. An
//! unchecked name would let any tenant make them reach addresses no tenant
//! may reach (the cloud metadata service, the kubelet, etcd, other
//! tenants' services) and read what comes back in its Worker's status. So
//! a bundle's registry must be one the cluster's admin listed; with no list
//! at all, no bundle is pulled. `isolane push` (the user's own machine)
//! reaches any registry.
//!
//! An entry is a registry as a reference names it: `host` (HTTPS on its
//! default port) or `host:port`, compared exactly (without case), or
//! `*.domain`, which matches every host under `domain` (not `domain`
//! itself) on its default port.

use crate::Error;

/// Which registries bundles may come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedRegistries {
    /// Any (what a user's own `isolane push` reaches).
    Any,
    /// Only these entries (none: no bundle at all).
    Listed(Vec<String>),
}

impl AllowedRegistries {
    /// The entries given on the command line; each must be `host`,
    /// `host:port` or `*.domain`.
    pub fn listed(entries: &[String]) -> Result<Self, Error> {
        let mut listed = Vec::with_capacity(entries.len());
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if !well_formed(entry) {
                return Err(Error::BadAllowedRegistry {
                    entry: entry.to_owned(),
                });
            }
            listed.push(entry.to_ascii_lowercase());
        }
        Ok(Self::Listed(listed))
    }

    /// Whether `registry` (`host` or `host:port`, as [`crate::BundleRef::registry`]
    /// gives it) may be reached.
    pub fn permits(&self, registry: &str) -> bool {
        let Self::Listed(entries) = self else {
            return true;
        };
        let registry = registry.to_ascii_lowercase();
        entries.iter().any(|entry| match entry.strip_prefix("*.") {
            Some(domain) => registry
                .strip_suffix(domain)
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains(':')),
            None => *entry == registry,
        })
    }

    /// The refusal of `registry` for the bundle `reference`, naming the list.
    pub fn refuse(&self, reference: &str, registry: &str) -> Error {
        let allowed = match self {
            Self::Any => String::new(),
            Self::Listed(entries) => entries.join(", "),
        };
        Error::RegistryNotAllowed {
            reference: reference.to_owned(),
            registry: registry.to_owned(),
            allowed,
        }
    }
}

/// `host`, `host:port` or `*.domain`: letters, digits, dots, hyphens (and
/// brackets and colons of an IPv6 literal), a port of digits.
fn well_formed(entry: &str) -> bool {
    let host = entry.strip_prefix("*.").unwrap_or(entry);
    let (host, port) = match host.rsplit_once(':') {
        // A bare IPv6 literal: its colons are not a port's.
        Some((name, _)) if !name.ends_with(']') && name.contains(':') => (host, None),
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'));
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.parse::<u16>().is_ok());
    host_ok && port_ok && !(entry.starts_with("*.") && port.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(entries: &[&str]) -> AllowedRegistries {
        let entries: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        AllowedRegistries::listed(&entries).unwrap()
    }

    #[test]
    fn entries_match_exactly_or_under_a_domain() {
        let allowed = listed(&["registry.example", "127.0.0.1:5000", "*.corp.example"]);
        for ok in [
            "registry.example",
            "REGISTRY.example",
            "127.0.0.1:5000",
            "a.corp.example",
            "a.b.corp.example",
        ] {
            assert!(allowed.permits(ok), "{ok} was refused");
        }
        for refused in [
            "registry.example:444",
            "evil-registry.example",
            "registry.example.evil",
            "127.0.0.1",
            "127.0.0.1:5001",
            "169.254.169.254",
            "corp.example",
            "a.corp.example:5000",
            "xcorp.example",
        ] {
            assert!(!allowed.permits(refused), "{refused} was allowed");
        }
    }

    #[test]
    fn no_list_reaches_nothing_and_any_reaches_all() {
        assert!(!listed(&[]).permits("registry.example"));
        assert!(AllowedRegistries::Any.permits("169.254.169.254"));
    }

    #[test]
    fn malformed_entries_are_refused() {
        for bad in [
            "https://registry.example",
            "registry.example/ns",
            "host:port",
            "*.example:5000",
            "a b",
            "*.",
        ] {
            let entries = vec![bad.to_owned()];
            assert!(
                AllowedRegistries::listed(&entries).is_err(),
                "{bad} was accepted"
            );
        }
        let entries = vec![
            "[::1]:5000".to_owned(),
            " registry.example ".to_owned(),
            String::new(),
        ];
        assert_eq!(
            AllowedRegistries::listed(&entries).unwrap(),
            AllowedRegistries::Listed(vec!["[::1]:5000".into(), "registry.example".into()])
        );
    }
}
