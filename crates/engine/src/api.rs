//! The API crates' door into the engine (`isolane-nodejs`,
//! `isolane-bindings`, and the Web platform's crate as it leaves the core): what a
//! family of units needs to register itself ([`Unit`], [`Family`]), to
//! write host functions (`host_fn!`, [`FromArg`], [`Return`]), to reach
//! its isolate's state ([`HostState`]) and to settle its promises
//! ([`Settle`], [`Settlement`]). Nothing else of the core is public to
//! them: a new need is a new, documented item here.
//!
//! Every function here runs on the isolate's own thread, inside V8; the
//! rules of `host.rs` hold (no panics, no JS turn of one's own).

pub use crate::host::error::{ErrorClass, HostError, HostResult};
pub use crate::host::handle::{Handles, Owner};
pub use crate::host::holder::{holder, set};
pub use crate::host::memory::fits;
pub use crate::host::{
    HostState, IsolateTurns, Settle, Settlement, array_buffer, begin_op, js_string, new_promise,
    spawn_op, u8_array, value_string, view_bytes,
};
/// A class of calls on the ring beside Durable Objects'.
pub use crate::object_call::RingClass;
pub use crate::unit::{Family, Gate, RequestResources, Unit};
pub use crate::watchdog::{Stop, Tripwire};
pub use crate::{FromArg, Return};
pub use isolane_egress::EgressPolicy;

/// An isolate's memory budget ([`HostState::memory`]) and a charge to
/// it: host-made copies outside V8 (a value on its way to or from the
/// store) are held as a [`Reservation`] until JavaScript has them or they
/// are written; refused ([`OverLimit`]) when the isolate is at its limit.
pub use crate::memory::{Memory, OverLimit, Reservation};

/// The engine's metrics sink ([`HostState::observer`]) and the KV
/// operations it counts (`isolane-bindings`' KV unit reports them).
pub use crate::observer::{EngineObserver, KvOp, KvResult};

/// State an API's unit shares among the threads of one engine, made from
/// the engine's config on first use ([`HostState::engine_state`]), and
/// the config it is made from: `isolane-web`'s Cache API store, from the
/// store's bounds (`EngineConfig::cache`).
pub use crate::config::{CacheConfig, EngineConfig};
pub use crate::thread_ctx::EngineState;

/// Header lists between JavaScript and Rust: a flat `[name, value, …]`
/// array read into a [`http::HeaderMap`] (`Err`: a TypeError's message) and
/// a map made one (`isolane-web`'s Cache API).
pub mod headers {
    pub use crate::host::headers::{header_array, header_map, lenient_header_map};
}

/// The maps of ids an API's state hands out (sequential `u32`s, their own
/// hash).
pub use crate::host::id_map::IdMap;

/// What outbound connections share with `fetch`: the egress policy's
/// resolver (every address checked), the refusal it reports, the connect
/// timeout, and a socket's place among the Worker's sockets on its thread
/// ([`HostState::socket_slot`]).
pub mod net {
    pub use crate::host::socket_count::{Refused, Slot};
    pub use isolane_egress::{CONNECT_TIMEOUT, EgressRefused, Refusal, refusal_in, resolve};
}

/// What Durable Objects' API (`isolane-bindings`' object unit) and their
/// hibernatable WebSockets (`isolane-web`'s `websocket/hibernation.rs`)
/// need of the core, whose mechanics they are: the Worker of a class it
/// binds ([`object::bound_worker`]), calls to an object's home thread,
/// another node or a [`RingClass`] (`objectIsHome`, `objectCall`: the
/// ring's), a socket a forwarded call was answered with
/// ([`object::take_passed`]), an object's socket events run on its home
/// thread ([`object::SocketEvents`]), the engine's idle time for objects
/// and the name of this thread as an object's owner.
pub mod object {
    pub use crate::host::object_forward::{SocketEvents, object_call, object_is_home, take_passed};
    pub use crate::host::object_hosted::bound_worker;

    /// How long an object stays in memory unused (`EngineConfig::object_idle`).
    pub fn idle(host: &super::HostState) -> std::time::Duration {
        host.thread.config.object_idle
    }

    /// This process and thread as an object's owner (`Store::take_object`).
    pub fn owner(host: &super::HostState) -> String {
        format!("pid {} thread {}", std::process::id(), host.thread.index)
    }
}

/// The message of a `TypeError` for a request past its subrequest limit.
pub use crate::host::error::too_many;

/// What `fetch()` (`isolane-web`) needs of the core: the checks of a hop
/// and its connection headers, one hop sent on the thread's HTTP client,
/// the head JavaScript gets, the hop count header, and a request given
/// an outbound Worker sent there ([`fetch::prepare_through`]).
pub mod fetch {
    pub use crate::HOPS_HEADER;
    pub use crate::host::outbound::{check_hop, connection_headers, send, send_upgrade};
    pub use crate::host::service::prepare_through;
    pub use crate::host::state::FetchHead;
}

/// Expensive native work off the isolate's thread, admitted fairly
/// (`isolane-web`'s Web Crypto: RSA key generation, PBKDF2): the engine's
/// pool of slots ([`HostState::offload_pool`], one a core, at most half of
/// them for one namespace, namespaces then Workers taking turns), a job's
/// [`offload::Tenant`] and the [`offload::Permit`] it holds while it runs.
/// The job's [`Stop`] and its CPU charge are the caller's
/// ([`IsolateTurns::charge_offloaded_cpu`]).
pub mod offload {
    pub use crate::crypto_pool::{Permit, Pool, Tenant};
}

/// Service bindings' engine mechanics (`isolane-bindings`' service unit):
/// a call through a binding prepared ([`service::prepare`]: the called
/// Worker, the depth bound), run on this thread ([`service::Outbound::run`])
/// and its answer made the caller's `Response` or `Error`
/// ([`service::settlement`]); and the head of a request from JavaScript
/// ([`service::header_map`], [`service::request`]).
pub mod service {
    pub use crate::host::headers::header_map;
    pub use crate::host::request_head::request;
    pub use crate::host::service::{
        Outbound, RpcAnswer, prepare, prepare_call, prepare_dispatch, rpc_answer, settlement,
    };
    pub use crate::service_call::{
        CallLimits, CallOutbound, MAX_DEPTH, RPC_RETURNED, RPC_THREW, ServiceCall,
    };
    pub use isolane_calltree::MAX_LOADED_IN_FLIGHT;
}
