//! A call through a service binding as the job that runs it carries it
//! ([`crate::Work::ServiceCall`]); how the call is made and run on the
//! caller's thread is `host/service.rs`.

/// The deepest chain of service calls (Cloudflare's bound): a call from a
/// request already this many calls deep is refused.
pub const MAX_DEPTH: u32 = 32;

/// The status of an RPC call's answer whose body is the serialized result.
pub const RPC_RETURNED: u16 = 200;

/// The status of an RPC call's answer whose body is the serialized error
/// the method threw.
pub const RPC_THREW: u16 = 500;

/// A service call as the called Worker's thread runs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceCall {
    /// The exported class whose `fetch` (or RPC method) is called, or
    /// `None` for the default export's.
    pub entrypoint: Option<String>,
    /// The JS RPC method (`env.SVC.method(...)`), or `None` for
    /// `env.SVC.fetch`.
    pub method: Option<String>,
    /// An RPC call's payload, its V8-serialized arguments (isolane-bindings'
    /// `js/31_rpc.js`), handed to the callee's JavaScript as they are: no
    /// `Request` is made of it. The answer is [`RPC_RETURNED`] or
    /// [`RPC_THREW`] with the serialized result or error as its body.
    pub payload: Option<bytes::Bytes>,
    /// The binding's `props` as JSON text (an object), the callee's
    /// `ctx.props`; `None` for none (`{}`).
    pub props: Option<String>,
}

/// Limits a caller lowers for one call (a dispatch namespace's
/// `get(name, args, {limits: {cpuMs, subRequests}})`): carried in the
/// call's request extensions, read as the callee's request begins, and
/// only ever lowering the callee's own (`None`: its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallLimits {
    /// CPU milliseconds the called request may use.
    pub cpu_ms: Option<u32>,
    /// Subrequests the called request may make.
    pub subrequests: Option<u32>,
}

impl CallLimits {
    /// `own` lowered to `self`'s CPU limit.
    pub fn cpu_ms(&self, own: u64) -> u64 {
        self.cpu_ms.map_or(own, |ms| own.min(u64::from(ms)))
    }
}
