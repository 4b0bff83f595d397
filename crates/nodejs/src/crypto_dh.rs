//! `node:crypto`'s finite-field Diffie-Hellman (`createDiffieHellman`,
//! `getDiffieHellman`) on AWS-LC's `DH` (the `aws-lc-sys` crate, as workerd
//! uses BoringSSL's): RFC 3526's groups, a given prime, or a prime generated
//! on the isolate's thread and stopped with the turn (AWS-LC asks a
//! [`Stop`] between candidates, as for RSA keys).
//!
//! Every operation is one modular exponentiation or one primality test on a
//! prime of at most [`MAX_BITS`], so one call holds the thread for a bounded
//! time and a loop of calls meets the CPU limit. A `DH` is a handle-table
//! entry charged to the Worker's memory; AWS-LC wipes its private key when it
//! is freed.

use std::ffi::c_int;
use std::ptr::NonNull;
use std::rc::Rc;

use aws_lc_sys as sys_crate;

/// AWS-LC's `DH` functions. `aws-lc-sys`'s universal bindings (the ones this
/// build uses) leave out `dh.h`, though the library has it: these are its
/// declarations, under the crate's symbol prefix (`aws_lc_0_47_0_`; another
/// `aws-lc-sys` version fails to link until the prefix here follows it).
mod sys {
    pub(super) use super::sys_crate::*;
    use std::ffi::{c_int, c_uint};

    unsafe extern "C" {
        #[link_name = "aws_lc_0_47_0_DH_new"]
        pub(super) fn DH_new() -> *mut DH;
        #[link_name = "aws_lc_0_47_0_DH_free"]
        pub(super) fn DH_free(dh: *mut DH);
        #[link_name = "aws_lc_0_47_0_DH_set0_pqg"]
        pub(super) fn DH_set0_pqg(
            dh: *mut DH,
            p: *mut BIGNUM,
            q: *mut BIGNUM,
            g: *mut BIGNUM,
        ) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_set0_key"]
        pub(super) fn DH_set0_key(dh: *mut DH, public: *mut BIGNUM, private: *mut BIGNUM) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_get0_p"]
        pub(super) fn DH_get0_p(dh: *const DH) -> *const BIGNUM;
        #[link_name = "aws_lc_0_47_0_DH_get0_g"]
        pub(super) fn DH_get0_g(dh: *const DH) -> *const BIGNUM;
        #[link_name = "aws_lc_0_47_0_DH_get0_pub_key"]
        pub(super) fn DH_get0_pub_key(dh: *const DH) -> *const BIGNUM;
        #[link_name = "aws_lc_0_47_0_DH_get0_priv_key"]
        pub(super) fn DH_get0_priv_key(dh: *const DH) -> *const BIGNUM;
        #[link_name = "aws_lc_0_47_0_DH_num_bits"]
        pub(super) fn DH_num_bits(dh: *const DH) -> c_uint;
        #[link_name = "aws_lc_0_47_0_DH_size"]
        pub(super) fn DH_size(dh: *const DH) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_generate_parameters_ex"]
        pub(super) fn DH_generate_parameters_ex(
            dh: *mut DH,
            bits: c_int,
            generator: c_int,
            callback: *mut BN_GENCB,
        ) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_generate_key"]
        pub(super) fn DH_generate_key(dh: *mut DH) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_compute_key_padded"]
        pub(super) fn DH_compute_key_padded(
            out: *mut u8,
            peer: *const BIGNUM,
            dh: *mut DH,
        ) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_check"]
        pub(super) fn DH_check(dh: *const DH, flags: *mut c_int) -> c_int;
        #[link_name = "aws_lc_0_47_0_DH_check_pub_key"]
        pub(super) fn DH_check_pub_key(
            dh: *const DH,
            key: *const BIGNUM,
            flags: *mut c_int,
        ) -> c_int;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_1536"]
        pub(super) fn BN_get_rfc3526_prime_1536(ret: *mut BIGNUM) -> *mut BIGNUM;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_2048"]
        pub(super) fn BN_get_rfc3526_prime_2048(ret: *mut BIGNUM) -> *mut BIGNUM;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_3072"]
        pub(super) fn BN_get_rfc3526_prime_3072(ret: *mut BIGNUM) -> *mut BIGNUM;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_4096"]
        pub(super) fn BN_get_rfc3526_prime_4096(ret: *mut BIGNUM) -> *mut BIGNUM;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_6144"]
        pub(super) fn BN_get_rfc3526_prime_6144(ret: *mut BIGNUM) -> *mut BIGNUM;
        #[link_name = "aws_lc_0_47_0_BN_get_rfc3526_prime_8192"]
        pub(super) fn BN_get_rfc3526_prime_8192(ret: *mut BIGNUM) -> *mut BIGNUM;
    }

    /// `DH_CHECK_PUBKEY_INVALID`.
    pub(super) const DH_CHECK_PUBKEY_INVALID: c_int = 4;
}

use isolane_engine::api::Owner;
use isolane_engine::api::Stop;
use isolane_engine::api::{HostError, HostResult};
use isolane_engine::api::{HostState, u8_array};
use isolane_web::crypto::aws_lc;
use isolane_web::crypto::error::CryptoError;

/// Largest prime taken (bits): RFC 3526's largest group.
const MAX_BITS: usize = 8192;

/// Largest prime generated (bits): past it a generation would only end at
/// the CPU limit.
const MAX_GENERATED_BITS: u32 = 4096;

/// Bytes charged for one `DH`: its numbers and Montgomery context.
const DH_CHARGE: usize = 8 * 1024;

type Answer<'s> = HostResult<Option<v8::Local<'s, v8::Value>>>;

/// One AWS-LC `DH`, freed (and its private key wiped) when dropped.
struct Dh(NonNull<sys::DH>);

impl Drop for Dh {
    fn drop(&mut self) {
        // SAFETY: made by a `DH_new*` function, freed only here.
        unsafe { sys::DH_free(self.0.as_ptr()) }
    }
}

/// A BIGNUM of `bytes` (big-endian), or `None`.
pub(super) fn bignum(bytes: &[u8]) -> Option<NonNull<sys::BIGNUM>> {
    // SAFETY: reads `bytes.len()` bytes; a null result is `None`.
    NonNull::new(unsafe { sys::BN_bin2bn(bytes.as_ptr(), bytes.len(), std::ptr::null_mut()) })
}

/// A big-endian copy of `bn`, `len` bytes (0: its own length).
///
/// # Safety
/// `bn` is a valid BIGNUM (or null: `None`).
pub(super) unsafe fn bytes_of(bn: *const sys::BIGNUM, len: usize) -> Option<Vec<u8>> {
    if bn.is_null() {
        return None;
    }
    // SAFETY: `bn` is valid (the contract); `out` has `len` bytes.
    unsafe {
        let len = if len == 0 {
            sys::BN_num_bytes(bn) as usize
        } else {
            len
        };
        let mut out = vec![0u8; len];
        (sys::BN_bn2bin_padded(out.as_mut_ptr(), len, bn) == 1).then_some(out)
    }
}

impl Dh {
    fn new() -> HostResult<Self> {
        // SAFETY: a new, empty DH.
        let dh = NonNull::new(unsafe { sys::DH_new() })
            .ok_or_else(|| CryptoError::operation("Out of memory"))?;
        Ok(Self(dh))
    }

    /// A DH over `prime` and `generator` (big-endian).
    fn with(prime: &[u8], generator: &[u8]) -> HostResult<Self> {
        let dh = Self::new()?;
        let (Some(p), Some(g)) = (bignum(prime), bignum(generator)) else {
            return Err(CryptoError::operation("Out of memory").into());
        };
        // SAFETY: on success the DH owns `p` and `g`; on failure they are
        // freed here.
        unsafe {
            if sys::DH_set0_pqg(dh.0.as_ptr(), p.as_ptr(), std::ptr::null_mut(), g.as_ptr()) != 1 {
                sys::BN_free(p.as_ptr());
                sys::BN_free(g.as_ptr());
                return Err(CryptoError::operation("Invalid Diffie-Hellman parameters").into());
            }
        }
        Ok(dh)
    }

    fn bits(&self) -> usize {
        // SAFETY: the DH is valid.
        unsafe { sys::DH_num_bits(self.0.as_ptr()) as usize }
    }

    fn size(&self) -> usize {
        // SAFETY: the DH is valid.
        usize::try_from(unsafe { sys::DH_size(self.0.as_ptr()) }).unwrap_or(0)
    }
}

/// RFC 3526's prime for a group Node names (`modp5`, `modp14`–`modp18`).
fn group_prime(name: &str) -> Option<Vec<u8>> {
    let get: unsafe extern "C" fn(*mut sys::BIGNUM) -> *mut sys::BIGNUM = match name {
        "modp5" => sys::BN_get_rfc3526_prime_1536,
        "modp14" => sys::BN_get_rfc3526_prime_2048,
        "modp15" => sys::BN_get_rfc3526_prime_3072,
        "modp16" => sys::BN_get_rfc3526_prime_4096,
        "modp17" => sys::BN_get_rfc3526_prime_6144,
        "modp18" => sys::BN_get_rfc3526_prime_8192,
        _ => return None,
    };
    // SAFETY: a new BIGNUM, copied out and freed.
    unsafe {
        let bn = get(std::ptr::null_mut());
        let bytes = bytes_of(bn, 0);
        if !bn.is_null() {
            sys::BN_free(bn);
        }
        bytes
    }
}

fn insert<'s>(scope: &mut v8::PinScope<'s, '_>, host: &HostState, dh: Dh) -> Answer<'s> {
    Ok(host
        .handles()
        .insert_object(scope, dh, DH_CHARGE, Owner::Isolate)
        .map(Into::into))
}

fn not_dh() -> HostError {
    CryptoError::Type("not a DiffieHellman".to_owned()).into()
}

host_fn! {
/// `nodeDhNew(prime, generator)` → a DH handle over the given numbers (big
/// endian), or for `prime` a group name (`modp14`, ...: undefined when
/// unknown).
pub(super) fn dh_new<'s>(
    scope,
    host: Rc<HostState>,
    prime: v8::Local<'s, v8::Value>,
    generator: Option<Vec<u8>>,
) -> Answer<'s> {
    let prime = if prime.is_string() {
        let name = prime.to_rust_string_lossy(scope);
        let Some(prime) = group_prime(&name) else {
            return Ok(None);
        };
        prime
    } else {
        isolane_web::crypto::subtle::bytes_arg(prime, "prime")?
    };
    let generator = generator.unwrap_or_else(|| vec![2]);
    let dh = Dh::with(&prime, &generator)?;
    if dh.bits() > MAX_BITS {
        return Err(HostError::range_error(format!("Diffie-Hellman primes above {MAX_BITS} bits are not supported")));
    }
    insert(scope, &host, dh)
}
}

host_fn! {
/// `nodeDhGenerate(bits, generator)` → a DH handle over a new safe prime of
/// `bits`, made on the isolate's thread and stopped once the watchdog ends
/// the turn.
pub(super) fn dh_generate<'s>(
    scope,
    host: Rc<HostState>,
    bits: u32,
    generator: u32,
) -> Answer<'s> {
    if !(2..=MAX_GENERATED_BITS).contains(&bits) {
        return Err(HostError::range_error(format!(
            "Diffie-Hellman prime lengths from 2 to {MAX_GENERATED_BITS} bits are supported"
        )));
    }
    let dh = Dh::new()?;
    let budget = host.cpu_remaining(host.current());
    let stop = Stop::on_thread(host.tripwire(), budget);
    let (Ok(bits), Ok(generator)) = (c_int::try_from(bits), c_int::try_from(generator)) else {
        return Err(HostError::range_error("Invalid Diffie-Hellman parameters"));
    };
    let made = aws_lc::with_progress(&stop, |callback| {
        // SAFETY: the DH is valid; `callback` is alive for the call.
        unsafe { sys::DH_generate_parameters_ex(dh.0.as_ptr(), bits, generator, callback) == 1 }
    })?;
    if !made {
        return Err(CryptoError::operation("Diffie-Hellman parameter generation failed or was stopped").into());
    }
    insert(scope, &host, dh)
}
}

host_fn! {
/// `nodeDhGet(handle, what)` → Uint8Array of `p`, `g`, `pub` or `priv`
/// (big-endian, undefined when not set), or for `check` DH_check's flags
/// (4 bytes, big-endian; undefined when the check could not run).
pub(super) fn dh_get<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    what: String,
) -> Answer<'s> {
    let got = host
        .handles()
        .with_handle(scope, handle, |dh: &mut Dh| {
            let ptr = dh.0.as_ptr();
            // SAFETY: the DH is valid; its numbers are read, not kept.
            unsafe {
                match what.as_str() {
                    "p" => bytes_of(sys::DH_get0_p(ptr), 0),
                    "g" => bytes_of(sys::DH_get0_g(ptr), 0),
                    "pub" => bytes_of(sys::DH_get0_pub_key(ptr), 0),
                    "priv" => bytes_of(sys::DH_get0_priv_key(ptr), 0),
                    _ => {
                        let mut flags: c_int = 0;
                        let ok = sys::DH_check(ptr, &raw mut flags) == 1;
                        sys::ERR_clear_error();
                        ok.then(|| flags.to_be_bytes().to_vec())
                    }
                }
            }
        })
        .ok_or_else(not_dh)?;
    match got {
        Some(bytes) => Ok(u8_array(scope, bytes).map(Into::into)),
        None => Ok(Some(v8::undefined(scope).into())),
    }
}
}

host_fn! {
/// `nodeDhSetKey(handle, private, bytes)`: sets the public or the private
/// key (a private key set, `generateKeys` computes its public key).
pub(super) fn dh_set_key<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    private: bool,
    key: Option<Vec<u8>>,
) -> HostResult<bool> {
    let key = zeroize::Zeroizing::new(key.unwrap_or_default());
    host.handles()
        .with_handle(scope, handle, |dh: &mut Dh| {
            let Some(bn) = bignum(&key) else {
                return false;
            };
            let null = std::ptr::null_mut();
            let (public, secret) = if private { (null, bn.as_ptr()) } else { (bn.as_ptr(), null) };
            // SAFETY: on success the DH owns `bn`; on failure it is freed.
            unsafe {
                let ok = sys::DH_set0_key(dh.0.as_ptr(), public, secret) == 1;
                if !ok {
                    sys::BN_free(bn.as_ptr());
                }
                ok
            }
        })
        .ok_or_else(not_dh)
}
}

host_fn! {
/// `nodeDhGenerateKeys(handle)`: a new key pair (or, with a private key
/// set, its public key).
pub(super) fn dh_generate_keys<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
) -> HostResult<bool> {
    host.handles()
        .with_handle(scope, handle, |dh: &mut Dh| {
            // SAFETY: the DH is valid.
            let ok = unsafe { sys::DH_generate_key(dh.0.as_ptr()) == 1 };
            // SAFETY: clears this thread's AWS-LC error queue only.
            unsafe { sys::ERR_clear_error() };
            ok
        })
        .ok_or_else(not_dh)
}
}

host_fn! {
/// `nodeDhCompute(handle, peer)` → Uint8Array: the shared secret, padded to
/// the prime's length; a number: DH_check_pub_key's flags when the peer's
/// key is refused.
pub(super) fn dh_compute<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    peer: Option<Vec<u8>>,
) -> Answer<'s> {
    let peer = peer.unwrap_or_default();
    let answer = host
        .handles()
        .with_handle(scope, handle, |dh: &mut Dh| compute(dh, &peer))
        .ok_or_else(not_dh)??;
    match answer {
        Ok(secret) => Ok(u8_array(scope, secret).map(Into::into)),
        Err(flags) => Ok(Some(v8::Integer::new(scope, flags).into())),
    }
}
}

/// The secret with `peer`, or the peer key's check flags.
fn compute(dh: &Dh, peer: &[u8]) -> HostResult<Result<Vec<u8>, i32>> {
    if dh.bits() > MAX_BITS {
        return Err(HostError::range_error("Diffie-Hellman prime too large"));
    }
    let size = dh.size();
    let bn = bignum(peer).ok_or_else(|| CryptoError::operation("Out of memory"))?;
    // SAFETY: `bn` is ours and freed here; `secret` has DH_size bytes.
    unsafe {
        let mut flags: c_int = 0;
        let checked = sys::DH_check_pub_key(dh.0.as_ptr(), bn.as_ptr(), &raw mut flags) == 1;
        let answer = if !checked || flags != 0 {
            Ok(Err(if flags == 0 {
                sys::DH_CHECK_PUBKEY_INVALID
            } else {
                flags
            }))
        } else {
            let mut secret = vec![0u8; size];
            if sys::DH_compute_key_padded(secret.as_mut_ptr(), bn.as_ptr(), dh.0.as_ptr()) < 0 {
                Err(
                    CryptoError::operation("Diffie-Hellman: no private key (call generateKeys)")
                        .into(),
                )
            } else {
                Ok(Ok(secret))
            }
        };
        sys::BN_free(bn.as_ptr());
        sys::ERR_clear_error();
        answer
    }
}
