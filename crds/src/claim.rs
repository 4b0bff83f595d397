//! A Worker as the route-ownership rule sees it (`isolane_worker::decide`):
//! its key and its claim, read from the resource the same way by the
//! operator and the router.

use isolane_worker::{Claim, Route, WorkerKey};
use kube::ResourceExt;

use crate::Worker;

impl Worker {
    /// The Worker's namespace and name; `None` for an object without them
    /// (never one read from the API).
    pub fn key(&self) -> Option<WorkerKey> {
        Some(WorkerKey::new(
            self.namespace()?,
            self.metadata.name.clone()?,
        ))
    }

    /// What the Worker claims: its distinct routes, as old as its
    /// `creationTimestamp` (in nanoseconds). A Worker being deleted claims
    /// no route, so its routes pass on as soon as deletion starts.
    pub fn claim(&self) -> Option<Claim> {
        let deleting = self.metadata.deletion_timestamp.is_some();
        Some(Claim {
            worker: self.key()?,
            since: self
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0.as_nanosecond()),
            routes: if deleting {
                Vec::new()
            } else {
                Route::distinct(&self.spec.routes)
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::WorkerSpec;

    #[test]
    fn a_worker_claims_its_routes_until_deletion_starts() {
        let spec: WorkerSpec = serde_json::from_value(serde_json::json!({
            "script": "export default {}",
            "routes": [{"host": "a.test"}, {"host": "a.test", "pathPrefix": "/"}],
        }))
        .unwrap();
        let mut worker = Worker::new("w", spec);
        assert_eq!(worker.claim(), None, "no namespace");
        worker.metadata.namespace = Some("ns".into());
        worker.metadata.creation_timestamp = Some(Time(Timestamp::from_second(2).unwrap()));
        let claim = worker.claim().unwrap();
        assert_eq!(claim.worker, WorkerKey::new("ns", "w"));
        assert_eq!(claim.since, Some(2_000_000_000));
        assert_eq!(claim.routes, [Route::new("a.test", "/")]);
        worker.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(3).unwrap()));
        assert!(worker.claim().unwrap().routes.is_empty());
    }
}
