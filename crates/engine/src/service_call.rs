//! A call through a service binding as the job that runs it carries it
//! ([`crate::Work::ServiceCall`]); how the call is made and run on the
//! caller's thread is `host/service.rs`.

/// The deepest chain of service calls (Cloudflare's bound): a call from a
/// request already this many calls deep is refused.
pub const MAX_DEPTH: u32 = 32;

/// A service call as the called Worker's thread runs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServiceCall {
    /// The exported class whose `fetch` (or RPC method) is called, or
    /// `None` for the default export's.
    pub entrypoint: Option<String>,
    /// The JS RPC method (`env.SVC.method(...)`), or `None` for
    /// `env.SVC.fetch`. The request of an RPC call is a `POST` whose body
    /// is the V8-serialized arguments, or has no body for a property's
    /// read (`await env.SVC.prop`); the answer's body is the
    /// V8-serialized result, or the thrown error (isolane-bindings'
    /// `js/31_rpc.js`).
    pub method: Option<String>,
    /// The binding's `props` as JSON text (an object), the callee's
    /// `ctx.props`; `None` for none (`{}`).
    pub props: Option<String>,
}
