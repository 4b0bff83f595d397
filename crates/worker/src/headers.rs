//! The `x-isolane-*` header names: the one list the engine, the node, the
//! router and `isolane dev` set and read. Tests keep the literal names, as
//! the wire contract they check.

/// Why the platform (not the Worker) answered: a bounded label, the
/// [`crate::Outcome`]'s or the router's (`overloaded`, `no_route`, …).
pub const REASON: &str = "x-isolane-reason";

/// The node's human-readable detail for a refusal, when it gave one.
pub const DETAIL: &str = "x-isolane-detail";

/// The node that served the request.
pub const NODE: &str = "x-isolane-node";

/// The Worker revision that served the request; on a request, the revision
/// (or tag of `spec.traffic`, or `latest`) it asks for, when the Worker
/// allows overrides.
pub const REVISION: &str = "x-isolane-revision";

/// How many times a request has passed through a Worker's `fetch`: every
/// outbound fetch carries one more than the request it runs for (0 when
/// absent), so a front end can refuse a request that loops through Workers.
pub const HOPS: &str = "x-isolane-hops";
