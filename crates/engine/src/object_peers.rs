//! Durable Objects across nodes: which node of the cluster owns an object,
//! and how a call reaches an owner that is another node. The engine knows
//! nothing of membership or gRPC; a runtime node gives it an
//! [`ObjectPeers`] (`EngineConfig::objects`), built on its node Leases and
//! its node-to-node `Execute` calls. Without one (`isolane dev`, tests),
//! every object is this process's.
//!
//! A stub call whose owner is another node leaves the isolate as an
//! [`ObjectCall`] and its request (as a call to another thread does) and is
//! handed to [`ObjectPeers::call`]; the owner runs it on the object's home
//! thread there. A call the owner refuses before it ran (it is not the
//! owner by its own view of the ring, or it cannot be reached) is sent
//! again to the owner the ring then names, a few times
//! ([`MAX_ATTEMPTS`]), then fails with a clear error.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::object_call::ObjectCall;

/// How many times one stub call is sent to an owner (the first time and
/// the retries after a refusal before it ran).
pub const MAX_ATTEMPTS: usize = 4;

/// The pause before the `attempt`th retry (the ring may be changing:
/// nodes see a Lease change a little apart).
pub fn retry_pause(attempt: usize) -> Duration {
    Duration::from_millis(50 * u64::try_from(attempt).unwrap_or(1).min(8))
}

/// The answer of a call made on another node.
pub type PeerAnswer =
    Pin<Box<dyn Future<Output = Result<http::Response<Body>, PeerError>> + Send + 'static>>;

/// The cluster's owners of objects, as a runtime node sees them.
pub trait ObjectPeers: Send + Sync + std::fmt::Debug + 'static {
    /// The node that owns the object with placement key `key`
    /// ([`crate::object_key`]), when it is another node; `None` when it is
    /// this one (or no ring is known yet).
    fn owner(&self, key: &str) -> Option<String>;

    /// Runs stub call `call` (its request `request`: a
    /// [`crate::Work::ObjectCall`]) for `worker` on node `node`, which the
    /// ring names as the object's owner.
    fn call(
        &self,
        node: &str,
        worker: &WorkerBundle,
        call: ObjectCall,
        request: http::Request<Body>,
    ) -> PeerAnswer;
}

/// Why a call to another node did not run there, or failed there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The node refused it before it ran: by its own ring the object is
    /// not its own. Sent again to the owner the ring names then.
    #[error("node {node} is not the object's owner")]
    NotOwner { node: String },
    /// The call could not be sent (no connection): it did not run.
    #[error("node {node} cannot be reached: {reason}")]
    Unreachable { node: String, reason: String },
    /// The node refused or failed it (overloaded, a limit, the call broke
    /// after it was sent): whether it ran is not known.
    #[error("node {node} failed the call: {reason}")]
    Failed { node: String, reason: String },
}

impl PeerError {
    /// Whether the call surely did not run, so it may be sent again.
    pub fn not_run(&self) -> bool {
        matches!(self, Self::NotOwner { .. } | Self::Unreachable { .. })
    }
}

/// The object peers of an engine config, shared.
pub type SharedPeers = Arc<dyn ObjectPeers>;
