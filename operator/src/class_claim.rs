//! One installation per Worker class in a cluster.
//!
//! Each installation reconciles only the Workers of its class
//! (`--worker-class`, `isolane_crds::WorkerClass`). Two installations given
//! the same class (a second Helm release left at the default one) would
//! still both reconcile those Workers, and fight over their status; so the
//! elected operator of an installation *holds* its class through a claim,
//! and a second installation of that class stands by until the first is
//! gone.
//!
//! The claim is an annotation of the cluster-scoped CustomResourceDefinition
//! `workers.isolane.dev`, `worker-class.isolane.dev/<class>`, whose value
//! (JSON) names the holding installation by its namespace and says when it
//! last renewed it. The CRD is the one object every installation shares, and
//! only cluster admins and the operators (the chart grants them this one
//! object) can write it: a tenant cannot forge or hold a claim, as it could
//! with an object in its own namespace.
//!
//! [`ClassClaim::gate`] turns the leader election's role into the role the
//! controller follows (`lifecycle.rs`): every [`RENEW_EVERY`] the leader
//! reads the claim; it leads when its installation holds the class, or takes
//! it (unclaimed, or not renewed for [`STALE_AFTER`]); while another
//! installation holds it, the leader stands by, logs an error and records a
//! Warning Event `WorkerClassTaken` on the CRD (in the namespace `default`,
//! where a cluster-scoped object's Events go). So the installation that held
//! the class first keeps it, and another takes over only once the first has
//! stopped renewing. Writes compare and swap on the CRD's resourceVersion, so
//! two installations racing for a free class cannot both take it. A leader
//! that cannot renew for [`RENEW_DEADLINE`] stands by, before its claim can
//! look stale to the others.
//!
//! Caveats: staleness is judged with the local clock against the renewal
//! time another installation's clock wrote (clocks must agree to well within
//! [`STALE_AFTER`] − [`RENEW_DEADLINE`]). An operator that may not read or
//! write the CRD (RBAC made for an operator before this check) leads
//! unchecked, and says so in a warning.

use std::time::Duration;

use isolane_crds::WorkerClass;
use isolane_leader::Role;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// The CRD the claims are annotations of.
pub const CRD_NAME: &str = "workers.isolane.dev";
/// The prefix of a claim's annotation; the class follows it.
pub const ANNOTATION_PREFIX: &str = "worker-class.isolane.dev/";
/// How often the leader renews its claim (or checks another's).
pub const RENEW_EVERY: Duration = Duration::from_secs(15);
/// How long a leader keeps leading without a successful renewal.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(40);
/// How long after its last renewal a claim may be taken over.
pub const STALE_AFTER: Duration = Duration::from_secs(60);
/// The wait before another try after a failed check.
const RETRY: Duration = Duration::from_secs(2);
/// Compare-and-swap attempts in one check (other classes' renewals change
/// the CRD's resourceVersion too).
const ATTEMPTS: usize = 3;

/// A claim's annotation value: who holds the class, renewed when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The holding installation's namespace (its operator's `--namespace`).
    pub namespace: String,
    /// When the holder last renewed the claim (RFC 3339).
    pub renewed: String,
}

/// The annotation holding `class`'s claim.
pub fn annotation(class: &WorkerClass) -> String {
    format!("{ANNOTATION_PREFIX}{class}")
}

/// What the leader of the installation in `namespace` does about the
/// claim it read (`current`, the annotation's value) at `now`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Write this claim: the class is ours, free, or its holder stopped
    /// renewing (or the value is not a claim).
    Write(Claim),
    /// Stand by: another installation holds the class.
    Taken(Claim),
}

/// Decides over a claim read (see [`Decision`]); a claim is stale once
/// `stale` has passed since its renewal.
pub fn decide(current: Option<&str>, namespace: &str, now: Timestamp, stale: Duration) -> Decision {
    let held = current.and_then(|value| serde_json::from_str::<Claim>(value).ok());
    if let Some(claim) = held
        && claim.namespace != namespace
        && fresh(&claim, now, stale)
    {
        return Decision::Taken(claim);
    }
    Decision::Write(Claim {
        namespace: namespace.to_owned(),
        renewed: now.to_string(),
    })
}

/// Whether `claim` was renewed less than `stale` before `now` (or after it:
/// a clock ahead of ours).
fn fresh(claim: &Claim, now: Timestamp, stale: Duration) -> bool {
    let Ok(renewed) = claim.renewed.parse::<Timestamp>() else {
        return false;
    };
    let age = now.as_nanosecond() - renewed.as_nanosecond();
    age < i128::try_from(stale.as_nanos()).unwrap_or(i128::MAX)
}

/// Where the installation stands after a check.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Standing {
    /// It holds its class.
    Held,
    /// Another installation does.
    Taken(Claim),
    /// The claim could not be read or written for lack of permission (the
    /// API's answer).
    Unchecked(String),
}

/// What a leader's gate remembers between checks.
#[derive(Debug, Default)]
struct Gate {
    /// When the last check found the class this installation's.
    last_held: Option<Instant>,
    /// What the last check found (its change is reported).
    standing: Option<Standing>,
}

/// The claim of one installation's class.
pub struct ClassClaim {
    api: Api<CustomResourceDefinition>,
    class: WorkerClass,
    namespace: String,
    recorder: Recorder,
}

impl std::fmt::Debug for ClassClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassClaim")
            .field("class", &self.class)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl ClassClaim {
    /// The claim of `class` by the installation in `namespace`, through
    /// `client`.
    pub fn new(client: Client, class: WorkerClass, namespace: String) -> Self {
        let recorder = crate::event_recorder(client.clone());
        Self {
            api: Api::all(client),
            class,
            namespace,
            recorder,
        }
    }

    /// The role the controller follows, from the `elected` one: a leader
    /// leads only while its installation holds the class (module docs).
    /// The task runs until `stop` or until `elected`'s sender goes.
    pub fn gate(
        self,
        elected: watch::Receiver<Role>,
        stop: CancellationToken,
    ) -> (watch::Receiver<Role>, JoinHandle<()>) {
        let (role_tx, role) = watch::channel(Role::Unknown);
        (role, tokio::spawn(self.run(elected, role_tx, stop)))
    }

    async fn run(
        self,
        mut elected: watch::Receiver<Role>,
        role: watch::Sender<Role>,
        stop: CancellationToken,
    ) {
        let mut gate = Gate::default();
        loop {
            let current = *elected.borrow_and_update();
            if current != Role::Leader {
                gate = Gate::default();
                role.send_replace(current);
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = elected.changed() => if changed.is_err() { return },
                }
                continue;
            }
            // A change of the election wins over a check still under way: a
            // leader that steps down stops at once.
            let checked = tokio::select! {
                () = stop.cancelled() => return,
                changed = elected.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    continue;
                }
                checked = self.check() => checked,
            };
            let wait = self.settle(checked, &mut gate, &role).await;
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
                changed = elected.changed() => if changed.is_err() { return },
            }
        }
    }

    /// Sets the leader's `role` from what a check found, and reports a
    /// change; returns how long until the next check.
    async fn settle(
        &self,
        checked: Result<Standing, kube::Error>,
        gate: &mut Gate,
        role: &watch::Sender<Role>,
    ) -> Duration {
        match checked {
            Ok(now) => {
                let leads = matches!(now, Standing::Held | Standing::Unchecked(_));
                role.send_replace(if leads { Role::Leader } else { Role::Standby });
                gate.last_held = leads.then(Instant::now);
                self.report(&now, gate.standing.as_ref()).await;
                gate.standing = Some(now);
                RENEW_EVERY
            }
            Err(error) => {
                // Leading still while the claim cannot have gone stale.
                let leads = gate
                    .last_held
                    .is_some_and(|at| at.elapsed() < RENEW_DEADLINE);
                role.send_replace(if leads { Role::Leader } else { Role::Standby });
                warn!(
                    %error,
                    worker_class = %self.class,
                    leads,
                    "checking the worker-class claim failed; retrying"
                );
                if !leads {
                    gate.standing = None;
                }
                RETRY
            }
        }
    }

    /// Reads the claim and renews or takes it, or finds it another's.
    async fn check(&self) -> Result<Standing, kube::Error> {
        let key = annotation(&self.class);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let crd = match self.api.get_metadata(CRD_NAME).await {
                Ok(crd) => crd,
                Err(error) if forbidden(&error) => {
                    return Ok(Standing::Unchecked(error.to_string()));
                }
                Err(error) => return Err(error),
            };
            let current = crd
                .metadata
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.get(&key));
            let claim = match decide(
                current.map(String::as_str),
                &self.namespace,
                Timestamp::now(),
                STALE_AFTER,
            ) {
                Decision::Taken(claim) => return Ok(Standing::Taken(claim)),
                Decision::Write(claim) => claim,
            };
            let value = serde_json::json!({
                "namespace": claim.namespace,
                "renewed": claim.renewed,
            })
            .to_string();
            // The resourceVersion read is the write's precondition.
            let patch = serde_json::json!({
                "metadata": {
                    "resourceVersion": crd.metadata.resource_version,
                    "annotations": { key.as_str(): value },
                }
            });
            let written = self
                .api
                .patch_metadata(CRD_NAME, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            match written {
                Ok(_) => return Ok(Standing::Held),
                Err(error) if forbidden(&error) => {
                    return Ok(Standing::Unchecked(error.to_string()));
                }
                Err(error) if conflict(&error) && attempt < ATTEMPTS => {}
                Err(error) => return Err(error),
            }
        }
    }

    /// Logs a change of standing, and records the Event of a class taken.
    async fn report(&self, now: &Standing, before: Option<&Standing>) {
        if before == Some(now) {
            return;
        }
        let (class, namespace) = (&self.class, &self.namespace);
        match now {
            Standing::Held => info!(worker_class = %class, "holding the worker class"),
            Standing::Unchecked(error) => warn!(
                %error,
                worker_class = %class,
                "may not read or write the worker-class claim on the CRD (grant the operator get and patch on customresourcedefinitions {CRD_NAME}, as the chart does): reconciling without checking that no other installation serves this class"
            ),
            Standing::Taken(claim) => {
                let note = format!(
                    "the Isolane installation in namespace {namespace} reconciles nothing: worker class {class:?} is served by the installation in namespace {} (claim renewed {}). Give one of them another worker class (Helm value workerClass, --worker-class), or remove one; this one takes over {}s after the other stops renewing",
                    claim.namespace,
                    claim.renewed,
                    STALE_AFTER.as_secs(),
                );
                error!(worker_class = %class, holder = %claim.namespace, "{note}");
                let event = Event {
                    type_: EventType::Warning,
                    reason: "WorkerClassTaken".to_owned(),
                    note: Some(note),
                    action: "Reconcile".to_owned(),
                    secondary: None,
                };
                let reference = ObjectReference {
                    api_version: Some("apiextensions.k8s.io/v1".to_owned()),
                    kind: Some("CustomResourceDefinition".to_owned()),
                    name: Some(CRD_NAME.to_owned()),
                    ..ObjectReference::default()
                };
                if let Err(error) = self.recorder.publish(&event, &reference).await {
                    warn!(%error, "recording the WorkerClassTaken event failed");
                }
            }
        }
    }
}

fn forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

fn conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn claim(namespace: &str, renewed: i64) -> String {
        serde_json::to_string(&Claim {
            namespace: namespace.into(),
            renewed: at(renewed).to_string(),
        })
        .unwrap()
    }

    #[test]
    fn a_fresh_claim_of_another_installation_stands_in_the_way() {
        let stale = Duration::from_secs(60);
        let write = |renewed: i64| {
            Decision::Write(Claim {
                namespace: "prod".into(),
                renewed: at(renewed).to_string(),
            })
        };
        // Free, ours, or garbage: written.
        assert_eq!(decide(None, "prod", at(100), stale), write(100));
        let ours = claim("prod", 90);
        assert_eq!(decide(Some(&ours), "prod", at(100), stale), write(100));
        assert_eq!(decide(Some("{"), "prod", at(100), stale), write(100));
        // Another's, renewed 59 s ago (or ahead of our clock): taken.
        let theirs = claim("staging", 41);
        assert!(matches!(
            decide(Some(&theirs), "prod", at(100), stale),
            Decision::Taken(Claim { namespace, .. }) if namespace == "staging"
        ));
        let ahead = claim("staging", 130);
        assert!(matches!(
            decide(Some(&ahead), "prod", at(100), stale),
            Decision::Taken(_)
        ));
        // Not renewed for 60 s: taken over.
        let gone = claim("staging", 40);
        assert_eq!(decide(Some(&gone), "prod", at(100), stale), write(100));
    }

    #[test]
    fn the_annotation_names_the_class() {
        assert_eq!(
            annotation(&WorkerClass::default()),
            "worker-class.isolane.dev/default"
        );
    }
}
