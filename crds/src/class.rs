//! Worker classes: which installation of Isolane serves a Worker.
//!
//! Several installations (Helm releases in their own namespaces, such as a
//! staging and a production one) can share a cluster and its `Worker` CRD.
//! Each serves one class, its operator's and router's `--worker-class`; a
//! Worker names its class in `spec.workerClass`, and one that names none is
//! of the class [`DEFAULT_WORKER_CLASS`], like an Ingress's
//! `ingressClassName`. The operator reconciles, and the router routes, only
//! the Workers of their class, and they decide it the same way, here
//! ([`WorkerClass::serves`]); the runtime nodes read only the bundles their
//! own operator writes. A Worker's class cannot change (a CEL rule of the
//! CRD): two installations would otherwise both act on it while it moves.

use std::fmt;
use std::str::FromStr;

use crate::{Worker, WorkerSpec};

/// The class of a Worker that names none, and the class an installation
/// serves unless told otherwise.
pub const DEFAULT_WORKER_CLASS: &str = "default";

/// The class of Workers one installation serves: a DNS label.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkerClass(String);

impl Default for WorkerClass {
    fn default() -> Self {
        Self(DEFAULT_WORKER_CLASS.to_owned())
    }
}

/// A `--worker-class` that is not a DNS label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("worker class {0:?} is not a DNS label (lower-case letters, digits and '-', at most 63)")]
pub struct InvalidWorkerClass(pub String);

impl FromStr for WorkerClass {
    type Err = InvalidWorkerClass;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if isolane_worker::dispatch::is_namespace_name(value) {
            Ok(Self(value.to_owned()))
        } else {
            Err(InvalidWorkerClass(value.to_owned()))
        }
    }
}

impl fmt::Display for WorkerClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl WorkerClass {
    /// The class's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `worker` is of this class: the one installation serving
    /// this class reconciles and routes it, every other leaves it alone.
    pub fn serves(&self, worker: &Worker) -> bool {
        worker.spec.worker_class() == self.0
    }
}

impl WorkerSpec {
    /// The class this Worker names, or [`DEFAULT_WORKER_CLASS`].
    pub fn worker_class(&self) -> &str {
        self.worker_class.as_deref().unwrap_or(DEFAULT_WORKER_CLASS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(class: Option<&str>) -> Worker {
        let mut spec = serde_json::json!({"script": "export default {}"});
        if let Some(class) = class {
            spec["workerClass"] = class.into();
        }
        Worker::new("w", serde_json::from_value(spec).unwrap())
    }

    #[test]
    fn a_worker_naming_no_class_is_the_default_installations() {
        let default = WorkerClass::default();
        let staging: WorkerClass = "staging".parse().unwrap();
        assert!(default.serves(&worker(None)));
        assert!(default.serves(&worker(Some("default"))));
        assert!(!default.serves(&worker(Some("staging"))));
        assert!(staging.serves(&worker(Some("staging"))));
        assert!(!staging.serves(&worker(None)));
        assert_eq!(default.to_string(), DEFAULT_WORKER_CLASS);
    }

    #[test]
    fn a_class_is_a_dns_label() {
        for bad in ["", "Staging", "-a", "a-", "a.b", &"a".repeat(64)] {
            assert!(bad.parse::<WorkerClass>().is_err(), "{bad:?}");
        }
        for good in ["a", "prod-2", &"a".repeat(63)] {
            assert_eq!(good.parse::<WorkerClass>().unwrap().as_str(), good);
        }
    }
}
