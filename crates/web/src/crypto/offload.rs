//! Expensive Web Crypto work (RSA key generation, PBKDF2) off the isolate's
//! thread, on the engine's offload pool as `crate::offload` runs it: charged
//! to the request that asked for it, admitted fairly, one job at a time for
//! this isolate's Web Crypto. RSA key generation stops within milliseconds
//! once its request's CPU budget is spent or its request is gone (it asks
//! its `Stop` between steps).
//!
//! Caveats: PBKDF2 cannot be stopped once started (the `pbkdf2` crate has
//! no step to stop at): its request can overrun its CPU limit by one call,
//! which is bounded (`ops.rs`, at most ~0.5 s).

use isolane_engine::api::{HostState, Settlement, Stop};

use super::CryptoState;
use super::error::{CryptoError, Result};
use super::formats::Generated;

/// What an offloaded job hands back.
pub enum Offloaded {
    Bytes(Vec<u8>),
    Generated(Box<Generated>),
}

/// An offloaded job's answer as its op settles with it
/// ([`isolane_engine::api::Settle`], in `subtle.rs`).
pub struct Offload(pub Result<Offloaded>);

/// Returns a promise for `work`'s result and queues it on the engine's
/// offload pool (`crate::offload`), one job at a time for this isolate's
/// Web Crypto.
pub fn spawn<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    work: impl FnOnce(&Stop) -> Result<Offloaded> + Send + 'static,
) -> Option<v8::Local<'s, v8::Promise>> {
    let slot = HostState::get(scope)?
        .state::<CryptoState>()?
        .offload
        .clone();
    crate::offload::spawn(scope, slot, work, |result| {
        let result = result.unwrap_or_else(|| Err(CryptoError::operation("The operation failed")));
        Settlement::custom(Offload(result))
    })
}
