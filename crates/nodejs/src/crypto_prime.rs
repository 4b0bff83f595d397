//! `node:crypto`'s `checkPrime` and `generatePrime` on AWS-LC's
//! `BN_primality_test` and `BN_generate_prime_ex`, run on the isolate's
//! thread with the progress callback Diffie-Hellman's and RSA's generations
//! use ([`aws_lc::with_progress`]): AWS-LC asks it between candidates and
//! between Miller–Rabin rounds, so a search too long for the CPU limit is
//! stopped with the turn.
//!
//! Numbers are at most [`MAX_BITS`] long, so one round (one modular
//! exponentiation) holds the thread for a bounded time.

use std::ffi::c_int;
use std::ptr::NonNull;
use std::rc::Rc;

use aws_lc_sys as sys;

use super::crypto_dh::{bignum, bytes_of};
use isolane_engine::api::Stop;
use isolane_engine::api::{HostError, HostResult};
use isolane_engine::api::{HostState, u8_array};
use isolane_web::crypto::aws_lc;
use isolane_web::crypto::error::CryptoError;

/// Longest number tested or generated (bits), as Diffie-Hellman's primes.
const MAX_BITS: usize = 8192;

/// A BIGNUM freed when dropped.
struct Bn(NonNull<sys::BIGNUM>);

impl Bn {
    fn of(bytes: &[u8]) -> HostResult<Self> {
        bignum(bytes)
            .map(Self)
            .ok_or_else(|| CryptoError::operation("Out of memory").into())
    }
}

impl Drop for Bn {
    fn drop(&mut self) {
        // SAFETY: made by `BN_bin2bn`/`BN_new`, freed only here.
        unsafe { sys::BN_free(self.0.as_ptr()) }
    }
}

/// `BN_CTX` freed when dropped.
struct Ctx(NonNull<sys::BN_CTX>);

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: made by `BN_CTX_new`, freed only here.
        unsafe { sys::BN_CTX_free(self.0.as_ptr()) }
    }
}

fn out_of_memory() -> HostError {
    CryptoError::operation("Out of memory").into()
}

fn too_long() -> HostError {
    HostError::range_error(format!("primes above {MAX_BITS} bits are not supported"))
}

/// The thread's stop for this turn: the watchdog, or the CPU time left.
fn stop(host: &HostState) -> Stop {
    Stop::on_thread(host.tripwire(), host.cpu_remaining(host.current()))
}

host_fn! {
/// `nodePrimeCheck(candidate, checks)` → whether `candidate` (big-endian)
/// is probably prime after `checks` Miller–Rabin rounds (0: AWS-LC's
/// count for its size).
pub(super) fn prime_check<'s>(
    scope,
    host: Rc<HostState>,
    candidate: Option<Vec<u8>>,
    checks: u32,
) -> HostResult<bool> {
    let _ = scope;
    let candidate = Bn::of(&candidate.unwrap_or_default())?;
    // SAFETY: a valid BIGNUM.
    if unsafe { sys::BN_num_bits(candidate.0.as_ptr()) } as usize > MAX_BITS {
        return Err(too_long());
    }
    let checks = c_int::try_from(checks).map_err(|_| HostError::range_error("checks out of range"))?;
    // SAFETY: a new context, freed by `Ctx`.
    let ctx = Ctx(NonNull::new(unsafe { sys::BN_CTX_new() }).ok_or_else(out_of_memory)?);
    let stop = stop(&host);
    let mut prime: c_int = 0;
    let ran = aws_lc::with_progress(&stop, |callback| {
        // SAFETY: every pointer is valid for the call.
        unsafe {
            sys::BN_primality_test(&raw mut prime, candidate.0.as_ptr(), checks, ctx.0.as_ptr(), 1, callback) == 1
        }
    })?;
    if !ran {
        return Err(CryptoError::operation("Prime check failed or was stopped").into());
    }
    Ok(prime == 1)
}
}

host_fn! {
/// `nodePrimeGenerate(bits, safe, add, rem)` → Uint8Array: a (safe, when
/// asked) prime of `bits` (big-endian), `≡ rem (mod add)` when `add` is
/// given (checked by the caller).
pub(super) fn prime_generate<'s>(
    scope,
    host: Rc<HostState>,
    bits: u32,
    safe: bool,
    add: Option<Vec<u8>>,
    rem: Option<Vec<u8>>,
) -> HostResult<Option<v8::Local<'s, v8::Uint8Array>>> {
    if bits as usize > MAX_BITS {
        return Err(too_long());
    }
    let bits = c_int::try_from(bits).map_err(|_| too_long())?;
    let add = add.as_deref().map(Bn::of).transpose()?;
    let rem = rem.as_deref().map(Bn::of).transpose()?;
    // SAFETY: a new BIGNUM, freed by `Bn`.
    let out = Bn(NonNull::new(unsafe { sys::BN_new() }).ok_or_else(out_of_memory)?);
    let pointer = |bn: &Option<Bn>| bn.as_ref().map_or(std::ptr::null(), |bn| bn.0.as_ptr().cast_const());
    let stop = stop(&host);
    let made = aws_lc::with_progress(&stop, |callback| {
        // SAFETY: every pointer is valid (or null where AWS-LC takes null)
        // for the call.
        unsafe {
            sys::BN_generate_prime_ex(out.0.as_ptr(), bits, c_int::from(safe), pointer(&add), pointer(&rem), callback) == 1
        }
    })?;
    if !made {
        return Err(CryptoError::operation("Error while generating prime").into());
    }
    // SAFETY: a valid BIGNUM.
    let bytes = unsafe { bytes_of(out.0.as_ptr(), 0) }.ok_or_else(out_of_memory)?;
    Ok(u8_array(scope, bytes))
}
}
