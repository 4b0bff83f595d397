//! A call through a service binding as the job that runs it carries it
//! (the engine's `Work::ServiceCall`); how the call is made and run on the
//! caller's thread is the engine's `host/service.rs`.

/// The deepest chain of service calls (Cloudflare's bound): a call from a
/// request already this many calls deep is refused.
pub const MAX_DEPTH: u32 = 32;

/// The hop count a call from a request `hops` calls deep carries, or why
/// it is refused: past [`MAX_DEPTH`] (a Worker calling itself, or a cycle).
pub fn within_depth(hops: u32) -> Result<u32, String> {
    if hops > MAX_DEPTH {
        return Err(format!(
            "Service call failed: the chain of service calls is deeper than {MAX_DEPTH} (a Worker calling itself, or a cycle of Workers)"
        ));
    }
    Ok(hops)
}

/// [`within_depth`] for a call to a Durable Object forwarded out of its
/// caller's isolate: the same hop count (service calls, objects and
/// `fetch()`es of one chain all raise it, as Cloudflare's "Subrequest depth
/// limit exceeded" counts Workers and objects calling each other), its
/// refusal in an object call's words.
pub fn object_within_depth(hops: u32) -> Result<u32, String> {
    within_depth(hops).map_err(|_| {
        format!(
            "Durable Object call failed: the chain of calls is deeper than {MAX_DEPTH} (objects or Workers calling each other in a cycle)"
        )
    })
}

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
    /// Values the callee sees in its `env` for this call only, beside its
    /// own bindings (an outbound Worker's `params`, a JSON object's text):
    /// `None` for its `env` as it is.
    pub params: Option<String>,
}

/// A dispatch namespace binding's outbound Worker for one dispatched call
/// (docs/dispatch.md): carried in the call's request extensions (as
/// [`CallLimits`]) and kept with the callee's request, whose every
/// `fetch()` goes to Worker `worker` of `namespace` (the platform's) with
/// `params` in its `env`. Per call, so the dispatched Worker runs in its
/// own isolates whatever the params.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutbound {
    /// The outbound Worker's namespace (the dispatching Worker's).
    pub namespace: String,
    /// The outbound Worker's name.
    pub worker: String,
    /// The declared params `get()` was given, a JSON object's text.
    pub params: Option<String>,
}

impl CallOutbound {
    /// Why `what` (`connect`, a WebSocket) to `host` is refused in a
    /// request given an outbound Worker: it takes `fetch()` calls only.
    pub fn refusal(what: &str, host: &str) -> String {
        format!(
            "{what} to {host} refused: this Worker was called through a dispatch namespace binding with an outbound Worker, which takes its fetch() calls only"
        )
    }
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
