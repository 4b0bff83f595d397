//! Leader election through a `coordination.k8s.io/v1` Lease.
//!
//! # Expected flow
//! Every replica runs a [`LeaderElector`]. Each retry period it reads the Lease:
//! absent, it creates it holding it; held by itself, it renews it (`renewTime`);
//! held by another whose `renewTime + leaseDurationSeconds` has passed, or by
//! nobody, it takes it over. Every write carries the `resourceVersion` it read, so
//! two replicas racing for the same Lease cannot both win: the loser gets 409 and
//! stays standby. The current [`Role`] is published on a `watch` channel; the
//! operator runs its controller only while it is [`Role::Leader`].
//!
//! # Guarantees
//! A leader that cannot renew for `renew_deadline` steps down (publishes
//! [`Role::Standby`]) even while its last request hangs, and `renew_deadline` is
//! shorter than the lease duration, so it stops acting before anyone else may
//! take over. On shutdown the leader releases the Lease (no holder, duration 1 s)
//! so a standby takes over at its next retry instead of waiting out the lease.
//!
//! # Assumptions and caveats
//! Expiry is judged against the Lease's `renewTime` with the local clock, as the
//! runtime-node Leases are: replicas' clocks must agree to well within
//! `lease_duration - renew_deadline` (5 s with the defaults). A standby notices
//! an expired lease within one retry period (it also wakes at the expiry time).

#![forbid(unsafe_code)]

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// How one replica takes part in an election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's holder identity.
    pub identity: String,
    /// Lease duration.
    pub lease_duration: Duration,
    /// The leader steps down when it has not renewed for this long.
    pub renew_deadline: Duration,
    /// Renewal and retry period.
    pub retry_period: Duration,
}

/// `<host name>-<pid>` (or `<fallback>-<pid>` without a host name): unique
/// per process, readable in `kubectl get lease`.
pub fn default_identity(fallback: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| fallback.to_owned());
    format!("{host}-{}", std::process::id())
}

/// This replica's part in the election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The Lease has not been read yet.
    Unknown,
    /// Another replica holds the Lease (or it could not be read).
    Standby,
    /// This replica holds the Lease and acts.
    Leader,
}

/// Why an election round failed.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    /// Reading or writing the Lease failed.
    #[error("failed to {action} Lease {namespace}/{name}")]
    Lease {
        action: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    /// The round took longer than allowed.
    #[error("Lease request timed out")]
    Timeout,
}

impl ElectionError {
    /// A short, bounded name.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Lease { .. } => "lease",
            Self::Timeout => "timeout",
        }
    }
}

/// What to do with the Lease as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nobody has created it: create it, holding it.
    Create,
    /// We hold it: renew it.
    Renew,
    /// It is free or expired: take it over.
    TakeOver,
    /// Another replica holds it until `expires_in` from now.
    Wait {
        /// The holder.
        holder: String,
        /// Time left on the holder's lease.
        expires_in: Duration,
    },
}

/// Decides what to do with `lease` (as read at `now`) for `identity`.
pub fn decide(lease: Option<&Lease>, identity: &str, now: Timestamp) -> Decision {
    let Some(lease) = lease else {
        return Decision::Create;
    };
    let spec = lease.spec.as_ref();
    let holder = spec
        .and_then(|spec| spec.holder_identity.as_deref())
        .filter(|holder| !holder.is_empty());
    let Some(holder) = holder else {
        return Decision::TakeOver;
    };
    if holder == identity {
        return Decision::Renew;
    }
    let renewed = spec.and_then(|spec| spec.renew_time.as_ref().or(spec.acquire_time.as_ref()));
    let duration = spec
        .and_then(|spec| spec.lease_duration_seconds)
        .unwrap_or(0);
    let expires_at = renewed.and_then(|renewed| {
        renewed
            .0
            .checked_add(SignedDuration::from_secs(i64::from(duration)))
            .ok()
    });
    match expires_at {
        Some(expires_at) if expires_at > now => Decision::Wait {
            holder: holder.to_owned(),
            expires_in: now.duration_until(expires_at).unsigned_abs(),
        },
        _ => Decision::TakeOver,
    }
}

/// How long a round started at `now` may take. A leader must not outlive
/// its renew deadline waiting on a hung request: what is left of it since
/// `last_renewal`. A standby has no deadline to keep; it gets the whole renew
/// deadline, so that a slow apiserver (two requests that take over a retry
/// period together) still lets it acquire. A round that acquires counts from
/// its start, so a late answer never stretches the new leader's deadline.
pub fn round_budget(
    config: &LeaderConfig,
    last_renewal: Option<Instant>,
    now: Instant,
) -> Duration {
    match last_renewal {
        Some(renewed) => (renewed + config.renew_deadline)
            .saturating_duration_since(now)
            .max(Duration::from_millis(10)),
        None => config.renew_deadline,
    }
}

/// The spec of a Lease held by `config.identity`, from the previous spec: the
/// acquire time is kept on renewal, transitions count changes of holder.
pub fn held_spec(config: &LeaderConfig, previous: Option<LeaseSpec>, now: Timestamp) -> LeaseSpec {
    let previous = previous.unwrap_or_default();
    let ours = previous.holder_identity.as_deref() == Some(config.identity.as_str());
    let seconds = i32::try_from(config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX);
    LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(seconds),
        acquire_time: if ours {
            previous.acquire_time
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(match (ours, previous.lease_transitions) {
            (true, transitions) => transitions.unwrap_or(0),
            (false, Some(transitions)) => transitions.saturating_add(1),
            (false, None) => 0,
        }),
        ..previous
    }
}

/// Campaigns for the leader Lease and publishes this replica's [`Role`].
#[derive(Clone)]
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    config: LeaderConfig,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("namespace", &self.namespace)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for the Lease `config.lease_name` in `namespace`.
    pub fn new(client: Client, namespace: &str, config: LeaderConfig) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            config,
        }
    }

    /// Campaigns until `stop` is cancelled, publishing the role on `role`; then
    /// releases the Lease if it holds it.
    pub async fn run(self, role: watch::Sender<Role>, stop: CancellationToken) {
        let mut last_renewal: Option<Instant> = None;
        loop {
            let started = Instant::now();
            let budget = round_budget(&self.config, last_renewal, started);
            let attempt = tokio::select! {
                () = stop.cancelled() => break,
                attempt = tokio::time::timeout(budget, self.round()) => {
                    attempt.unwrap_or(Err(ElectionError::Timeout))
                }
            };
            let now = Instant::now();
            let (next, mut wait) = self.after_round(attempt, started, now, &mut last_renewal);
            if let Some(renewed) = last_renewal {
                // Never sleep past the renew deadline.
                let left = (renewed + self.config.renew_deadline).saturating_duration_since(now);
                wait = wait.min(left);
            }
            self.publish(&role, next);
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
        self.step_down(&role).await;
    }

    /// The role a round's `attempt` (started at `started`) leaves us in, and
    /// how long to wait before the next; `last_renewal` is kept up to date.
    fn after_round(
        &self,
        attempt: Result<Option<Duration>, ElectionError>,
        started: Instant,
        now: Instant,
        last_renewal: &mut Option<Instant>,
    ) -> (Role, Duration) {
        match attempt {
            Ok(None) => {
                *last_renewal = Some(started);
                (Role::Leader, self.config.retry_period)
            }
            Ok(Some(expires_in)) => {
                *last_renewal = None;
                // Wake at the holder's expiry if that comes before the next retry.
                let wait = self
                    .config
                    .retry_period
                    .min(expires_in + Duration::from_millis(50));
                (Role::Standby, wait)
            }
            Err(error) => {
                let keep = last_renewal.is_some_and(|renewed| {
                    now.duration_since(renewed) < self.config.renew_deadline
                });
                warn!(%error, kind = error.kind(), still_leader = keep, "leader election round failed");
                if keep {
                    (Role::Leader, self.config.retry_period / 2)
                } else {
                    *last_renewal = None;
                    (Role::Standby, self.config.retry_period)
                }
            }
        }
    }

    /// Publishes `next` on `role` when it changed.
    fn publish(&self, role: &watch::Sender<Role>, next: Role) {
        role.send_if_modified(|current| {
            if *current == next {
                return false;
            }
            info!(identity = %self.config.identity, role = ?next, "leader election role changed");
            *current = next;
            true
        });
    }

    /// On stopping: a leader becomes a standby and releases its Lease.
    async fn step_down(&self, role: &watch::Sender<Role>) {
        if *role.borrow() != Role::Leader {
            return;
        }
        role.send_replace(Role::Standby);
        match tokio::time::timeout(self.config.retry_period, self.release()).await {
            Ok(Ok(())) => info!(identity = %self.config.identity, "released the leader Lease"),
            Ok(Err(error)) => warn!(%error, "failed to release the leader Lease"),
            Err(_) => warn!("timed out releasing the leader Lease"),
        }
    }

    /// One round: `Ok(None)` when we hold the Lease afterwards, `Ok(Some(left))`
    /// when another replica holds it for `left` more.
    async fn round(&self) -> Result<Option<Duration>, ElectionError> {
        let name = &self.config.lease_name;
        let current = self
            .api
            .get_opt(name)
            .await
            .map_err(|source| self.error("read", source))?;
        let now = Timestamp::now();
        let decision = decide(current.as_ref(), &self.config.identity, now);
        debug!(?decision, "leader election round");
        let write = match decision {
            Decision::Wait { expires_in, .. } => return Ok(Some(expires_in)),
            Decision::Create => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.held_spec(None, now)),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Decision::Renew | Decision::TakeOver => {
                let Some(mut lease) = current else {
                    return Ok(Some(self.config.retry_period));
                };
                lease.spec = Some(self.held_spec(lease.spec.take(), now));
                // `lease.metadata.resourceVersion` is the one read: a concurrent
                // write makes this replace fail with 409.
                self.api.replace(name, &PostParams::default(), &lease).await
            }
        };
        match write {
            Ok(_) => Ok(None),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                debug!("lost a race for the leader Lease");
                Ok(Some(self.config.retry_period))
            }
            Err(source) => Err(self.error("write", source)),
        }
    }

    fn held_spec(&self, previous: Option<LeaseSpec>, now: Timestamp) -> LeaseSpec {
        held_spec(&self.config, previous, now)
    }

    async fn release(&self) -> Result<(), ElectionError> {
        let name = &self.config.lease_name;
        let Some(mut lease) = self
            .api
            .get_opt(name)
            .await
            .map_err(|source| self.error("read", source))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        self.api
            .replace(name, &PostParams::default(), &lease)
            .await
            .map(drop)
            .map_err(|source| self.error("release", source))
    }

    fn error(&self, action: &'static str, source: kube::Error) -> ElectionError {
        ElectionError::Lease {
            action,
            namespace: self.namespace.clone(),
            name: self.config.lease_name.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: Option<&str>, renewed: i64, duration: i32) -> Lease {
        Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed).unwrap())),
                lease_duration_seconds: Some(duration),
                ..LeaseSpec::default()
            }),
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn decisions() {
        assert_eq!(decide(None, "me", at(0)), Decision::Create);
        assert_eq!(
            decide(Some(&lease(Some("me"), 0, 15)), "me", at(100)),
            Decision::Renew
        );
        assert_eq!(
            decide(Some(&lease(Some("other"), 100, 15)), "me", at(110)),
            Decision::Wait {
                holder: "other".into(),
                expires_in: Duration::from_secs(5)
            }
        );
        assert_eq!(
            decide(Some(&lease(Some("other"), 100, 15)), "me", at(115)),
            Decision::TakeOver
        );
        assert_eq!(
            decide(Some(&lease(None, 100, 15)), "me", at(101)),
            Decision::TakeOver
        );
        assert_eq!(
            decide(Some(&lease(Some(""), 100, 15)), "me", at(101)),
            Decision::TakeOver
        );
    }

    #[test]
    fn a_standby_round_may_take_the_renew_deadline_and_a_leader_what_is_left_of_it() {
        let config = LeaderConfig {
            lease_name: "lease".into(),
            identity: "me".into(),
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(500),
        };
        let now = Instant::now();
        // Not the retry period: two requests of 300 ms each must not time out.
        assert_eq!(round_budget(&config, None, now), Duration::from_secs(2));
        let renewed = now
            .checked_sub(Duration::from_millis(1500))
            .expect("an instant");
        assert_eq!(
            round_budget(&config, Some(renewed), now),
            Duration::from_millis(500)
        );
        let long_ago = now.checked_sub(Duration::from_secs(5)).expect("an instant");
        assert_eq!(
            round_budget(&config, Some(long_ago), now),
            Duration::from_millis(10)
        );
    }

    #[test]
    fn held_spec_counts_transitions_and_keeps_acquire_time() {
        let config = LeaderConfig {
            lease_name: "l".into(),
            identity: "me".into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(5),
        };
        let taken = held_spec(&config, lease(Some("other"), 1, 15).spec, at(50));
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(0));
        assert_eq!(taken.acquire_time, Some(MicroTime(at(50))));
        let mut previous = taken.clone();
        previous.lease_transitions = Some(3);
        let renewed = held_spec(&config, Some(previous), at(55));
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(50))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(55))));
        assert_eq!(renewed.lease_transitions, Some(3));
        let mut other = lease(Some("other"), 1, 15).spec;
        if let Some(spec) = other.as_mut() {
            spec.lease_transitions = Some(3);
        }
        assert_eq!(held_spec(&config, other, at(60)).lease_transitions, Some(4));
    }
}
