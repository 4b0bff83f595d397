//! A call through a service binding as the job that runs it carries it
//! ([`crate::Work::ServiceCall`]); how the call is made and run on the
//! caller's thread is `host/service.rs`.

/// The deepest chain of service calls (Cloudflare's bound): a call from a
/// request already this many calls deep is refused.
pub const MAX_DEPTH: u32 = 32;

/// A service call as the called Worker's thread runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceCall {
    /// The exported class whose `fetch` is called, or `None` for the
    /// default export's.
    pub entrypoint: Option<String>,
}
