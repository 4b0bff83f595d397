//! How a recorded host owner (`isolane_worker::HostOwner`) is kept in the
//! cluster: one ConfigMap per host pattern in the operator's namespace,
//! labelled [`HOST_OWNER_LABEL`]`=true`. The operator (leader) is their only
//! writer; the operator's webhook and the router read them, the same way,
//! through this module. An admin releases a host by deleting its
//! ConfigMap (docs/operator.md).
//!
//! A ConfigMap rather than a cluster-scoped resource: it needs no new API,
//! and only the operator's namespace, where tenants have no access, while
//! the runtime nodes (which run tenants' code) cannot write ConfigMaps.

use std::collections::BTreeMap;

use isolane_worker::{HostOwner, normalize_host};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;
use sha2::{Digest, Sha256};

/// The label on every host-owner ConfigMap (value `true`).
pub const HOST_OWNER_LABEL: &str = "isolane.dev/host-owner";
/// The label naming the owning namespace, to list or release a
/// namespace's hosts with a label selector.
pub const OWNER_NAMESPACE_LABEL: &str = "isolane.dev/owner-namespace";

const HOST: &str = "host";
const NAMESPACE: &str = "namespace";
const SINCE: &str = "since";
const RELEASED: &str = "released";

/// A host-owner ConfigMap that does not say what it must.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostOwnerError {
    /// A key is missing or empty.
    #[error("host-owner ConfigMap {name} has no {key}")]
    Missing { name: String, key: &'static str },
    /// A time is not RFC 3339.
    #[error("host-owner ConfigMap {name} has an invalid {key} {value:?}")]
    InvalidTime {
        name: String,
        key: &'static str,
        value: String,
    },
}

impl HostOwnerError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Missing { .. } => "missing",
            Self::InvalidTime { .. } => "invalid_time",
        }
    }
}

/// The name of the ConfigMap recording `host`'s owner: a hash of the
/// (normalised) host pattern, as wildcards and long hosts are not names.
pub fn host_owner_name(host: &str) -> String {
    let digest = Sha256::digest(normalize_host(host).as_bytes());
    format!("host-owner-{}", &hex::encode(digest)[..20])
}

/// The ConfigMap recording `owner`, in `namespace` (the operator's).
pub fn host_owner_config_map(owner: &HostOwner, namespace: &str) -> ConfigMap {
    let mut data = BTreeMap::from([
        (HOST.to_owned(), owner.host.clone()),
        (NAMESPACE.to_owned(), owner.namespace.clone()),
        (SINCE.to_owned(), time(owner.since)),
    ]);
    if let Some(released) = owner.released {
        data.insert(RELEASED.to_owned(), time(released));
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(host_owner_name(&owner.host)),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (HOST_OWNER_LABEL.to_owned(), "true".to_owned()),
                (OWNER_NAMESPACE_LABEL.to_owned(), owner.namespace.clone()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// The owner a host-owner ConfigMap records.
pub fn host_owner_from(config_map: &ConfigMap) -> Result<HostOwner, HostOwnerError> {
    let name = config_map.metadata.name.clone().unwrap_or_default();
    let data = config_map.data.as_ref();
    let get = |key: &'static str| data.and_then(|d| d.get(key)).filter(|v| !v.is_empty());
    let required = |key: &'static str| {
        get(key).ok_or_else(|| HostOwnerError::Missing {
            name: name.clone(),
            key,
        })
    };
    let parse = |key: &'static str, value: &String| {
        value
            .parse::<Timestamp>()
            .map(|t| t.as_nanosecond())
            .map_err(|_| HostOwnerError::InvalidTime {
                name: name.clone(),
                key,
                value: value.clone(),
            })
    };
    Ok(HostOwner {
        host: normalize_host(required(HOST)?),
        namespace: required(NAMESPACE)?.clone(),
        since: parse(SINCE, required(SINCE)?)?,
        released: get(RELEASED).map(|v| parse(RELEASED, v)).transpose()?,
    })
}

/// `nanos` since the epoch, as RFC 3339 (the epoch if out of range).
fn time(nanos: i128) -> String {
    Timestamp::from_nanosecond(nanos)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_round_trips_through_its_config_map() {
        let mut owner = HostOwner {
            host: "*.example.com".into(),
            namespace: "team-b".into(),
            since: 1_700_000_000_123_456_789,
            released: None,
        };
        let config_map = host_owner_config_map(&owner, "isolane-system");
        assert_eq!(
            config_map.metadata.name.as_deref(),
            Some(host_owner_name("*.Example.com.").as_str())
        );
        assert_eq!(host_owner_from(&config_map), Ok(owner.clone()));
        owner.released = Some(1_800_000_000_000_000_000);
        let config_map = host_owner_config_map(&owner, "isolane-system");
        assert_eq!(host_owner_from(&config_map), Ok(owner));
        assert_ne!(
            host_owner_name("a.example.com"),
            host_owner_name("*.example.com")
        );
    }

    #[test]
    fn a_config_map_missing_a_field_or_with_a_bad_time_is_refused() {
        let owner = HostOwner {
            host: "a.test".into(),
            namespace: "b".into(),
            since: 0,
            released: None,
        };
        let mut config_map = host_owner_config_map(&owner, "ns");
        if let Some(data) = config_map.data.as_mut() {
            data.insert(RELEASED.into(), "yesterday".into());
        }
        assert_eq!(
            host_owner_from(&config_map).unwrap_err().kind(),
            "invalid_time"
        );
        if let Some(data) = config_map.data.as_mut() {
            data.remove(NAMESPACE);
        }
        assert_eq!(host_owner_from(&config_map).unwrap_err().kind(), "missing");
    }
}
