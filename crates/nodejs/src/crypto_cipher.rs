//! `node:crypto`'s `createCipheriv`/`createDecipheriv` on AWS-LC's `EVP_CIPHER`
//! (the `aws-lc-sys` crate, already linked for RSA): BoringSSL's ciphers, the
//! ones workerd's own `Cipheriv` uses, streamed as Node streams them
//! (`update()` answers what it can, `final()` the rest and checks padding or
//! the tag).
//!
//! A context is a handle-table entry ([`CIPHER_CHARGE`] bytes charged to the
//! Worker's memory budget while it lives); AWS-LC wipes its key schedule when
//! the context is freed. JavaScript checks key, IV and tag lengths first (with
//! Node's errors) and feeds `update` at most a step at a time, so one call
//! holds the thread for a bounded time.

use std::ffi::c_int;
use std::ptr::NonNull;
use std::rc::Rc;

use aws_lc_sys as sys;
use zeroize::Zeroizing;

use isolane_engine::api::HostResult;
use isolane_engine::api::Owner;
use isolane_engine::api::{HostState, array_buffer};
use isolane_web::crypto::error::CryptoError;

/// Bytes charged for one context: the `EVP_CIPHER_CTX` and its cipher state
/// (at most ~1 KiB, GCM's tables).
const CIPHER_CHARGE: usize = 2048;

/// Most bytes one `update` takes (JavaScript feeds larger inputs in steps).
const MAX_UPDATE: usize = 1 << 20;

/// `EVP_CIPH_FLAG_AEAD_CIPHER`, as `EVP_CIPHER_flags` answers it.
const AEAD: u32 = sys::EVP_CIPH_FLAG_AEAD_CIPHER.unsigned_abs();

type Evp = unsafe extern "C" fn() -> *const sys::EVP_CIPHER;

/// Node's cipher names (as `getCiphers()` lists them) and AWS-LC's ciphers.
const CIPHERS: &[(&str, Evp)] = &[
    ("aes-128-cbc", sys::EVP_aes_128_cbc),
    ("aes-192-cbc", sys::EVP_aes_192_cbc),
    ("aes-256-cbc", sys::EVP_aes_256_cbc),
    ("aes-128-ctr", sys::EVP_aes_128_ctr),
    ("aes-192-ctr", sys::EVP_aes_192_ctr),
    ("aes-256-ctr", sys::EVP_aes_256_ctr),
    ("aes-128-ecb", sys::EVP_aes_128_ecb),
    ("aes-192-ecb", sys::EVP_aes_192_ecb),
    ("aes-256-ecb", sys::EVP_aes_256_ecb),
    ("aes-128-ofb", sys::EVP_aes_128_ofb),
    ("aes-192-ofb", sys::EVP_aes_192_ofb),
    ("aes-256-ofb", sys::EVP_aes_256_ofb),
    ("aes-128-cfb", sys::EVP_aes_128_cfb),
    ("aes-192-cfb", sys::EVP_aes_192_cfb),
    ("aes-256-cfb", sys::EVP_aes_256_cfb),
    ("aes-128-cfb8", sys::EVP_aes_128_cfb8),
    ("aes-192-cfb8", sys::EVP_aes_192_cfb8),
    ("aes-256-cfb8", sys::EVP_aes_256_cfb8),
    ("aes-128-ccm", sys::EVP_aes_128_ccm),
    ("aes-192-ccm", sys::EVP_aes_192_ccm),
    ("aes-256-ccm", sys::EVP_aes_256_ccm),
    ("aes-128-gcm", sys::EVP_aes_128_gcm),
    ("aes-192-gcm", sys::EVP_aes_192_gcm),
    ("aes-256-gcm", sys::EVP_aes_256_gcm),
    ("chacha20-poly1305", sys::EVP_chacha20_poly1305),
    ("des-cbc", sys::EVP_des_cbc),
    ("des-ecb", sys::EVP_des_ecb),
    ("des-ede", sys::EVP_des_ede),
    ("des-ede-cbc", sys::EVP_des_ede_cbc),
    ("des-ede3", sys::EVP_des_ede3),
    ("des-ede3-cbc", sys::EVP_des_ede3_cbc),
];

fn cipher(name: &str) -> Option<*const sys::EVP_CIPHER> {
    let (_, evp) = CIPHERS.iter().find(|(known, _)| *known == name)?;
    // SAFETY: AWS-LC's cipher getters take nothing and return a static.
    let cipher = unsafe { evp() };
    (!cipher.is_null()).then_some(cipher)
}

/// One cipher context, freed (and wiped by AWS-LC) when dropped.
struct Context(NonNull<sys::EVP_CIPHER_CTX>);

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: made by `EVP_CIPHER_CTX_new`, freed only here.
        unsafe { sys::EVP_CIPHER_CTX_free(self.0.as_ptr()) }
    }
}

impl Context {
    /// A context for `cipher` keyed with `key` and `iv` (lengths checked by
    /// the caller against the cipher's), encrypting or decrypting; `ccm_tag`:
    /// CCM's tag length, which it needs before the key (0: not CCM).
    fn new(
        cipher: *const sys::EVP_CIPHER,
        key: &[u8],
        iv: &[u8],
        encrypt: bool,
        ccm_tag: c_int,
    ) -> Option<Self> {
        // SAFETY: `cipher` is a static from `cipher()`; the context is ours;
        // key and IV outlive the calls that read them (AWS-LC copies both).
        unsafe {
            let context = Self(NonNull::new(sys::EVP_CIPHER_CTX_new())?);
            let ctx = context.0.as_ptr();
            let enc = c_int::from(encrypt);
            let none = std::ptr::null_mut();
            let aead = sys::EVP_CIPHER_flags(cipher) & AEAD != 0;
            let ok =
                sys::EVP_CipherInit_ex(ctx, cipher, none, std::ptr::null(), std::ptr::null(), enc)
                    == 1
                    && (!aead || iv_length(ctx, iv.len()))
                    && (ccm_tag == 0 || tag_length(ctx, ccm_tag))
                    && sys::EVP_CipherInit_ex(
                        ctx,
                        std::ptr::null(),
                        none,
                        key.as_ptr(),
                        iv_ptr(iv),
                        enc,
                    ) == 1;
            sys::ERR_clear_error();
            ok.then_some(context)
        }
    }

    /// Ciphers `input`, answering the bytes that are ready (`aad`: feeds it
    /// as additional data instead, answering nothing).
    fn update(&mut self, input: &[u8], aad: bool) -> Option<Vec<u8>> {
        let mut out = vec![0u8; input.len() + 32];
        let mut len: c_int = 0;
        let into = if aad {
            std::ptr::null_mut()
        } else {
            out.as_mut_ptr()
        };
        let in_len = c_int::try_from(input.len()).ok()?;
        // SAFETY: `out` has room for the input and a block more (AWS-LC
        // writes at most in_len + block_size - 1); a null `out` feeds AAD.
        let ok = unsafe {
            sys::EVP_CipherUpdate(self.0.as_ptr(), into, &raw mut len, input.as_ptr(), in_len) == 1
        };
        self.settle(ok, out, len)
    }

    /// The last bytes; fails on bad padding, a wrong final block length or
    /// a tag that does not authenticate.
    fn finish(&mut self) -> Option<Vec<u8>> {
        let mut out = vec![0u8; 32];
        let mut len: c_int = 0;
        // SAFETY: `out` holds a block (at most 16 bytes are written).
        let ok = unsafe {
            sys::EVP_CipherFinal_ex(self.0.as_ptr(), out.as_mut_ptr(), &raw mut len) == 1
        };
        self.settle(ok, out, len)
    }

    fn settle(&self, ok: bool, mut out: Vec<u8>, len: c_int) -> Option<Vec<u8>> {
        // SAFETY: clears this thread's AWS-LC error queue only.
        unsafe { sys::ERR_clear_error() };
        let len = usize::try_from(len).ok().filter(|len| *len <= out.len())?;
        out.truncate(len);
        ok.then_some(out)
    }

    /// CCM's message length, before any data or additional data.
    fn ccm(&mut self, length: u32) -> bool {
        let Ok(length) = c_int::try_from(length) else {
            return false;
        };
        let mut out: c_int = 0;
        let (ctx, null_out) = (self.0.as_ptr(), std::ptr::null_mut());
        // SAFETY: a null input with a length sets CCM's message length.
        let ok = unsafe {
            sys::EVP_CipherUpdate(ctx, null_out, &raw mut out, std::ptr::null(), length) == 1
        };
        // SAFETY: as in `settle`.
        unsafe { sys::ERR_clear_error() };
        ok
    }

    /// A control call (`EVP_CTRL_AEAD_*`) on `buffer`.
    fn control(&mut self, command: i32, buffer: &mut [u8]) -> bool {
        let Ok(len) = c_int::try_from(buffer.len()) else {
            return false;
        };
        // SAFETY: AWS-LC reads or writes at most `len` bytes of `buffer`.
        let ok = unsafe {
            sys::EVP_CIPHER_CTX_ctrl(self.0.as_ptr(), command, len, buffer.as_mut_ptr().cast()) == 1
        };
        // SAFETY: as in `settle`.
        unsafe { sys::ERR_clear_error() };
        ok
    }
}

/// Sets an AEAD context's IV length.
///
/// # Safety
/// `ctx` is a context initialised with an AEAD cipher.
unsafe fn iv_length(ctx: *mut sys::EVP_CIPHER_CTX, len: usize) -> bool {
    let Ok(len) = c_int::try_from(len) else {
        return false;
    };
    // SAFETY: the contract; SET_IVLEN reads no pointer.
    unsafe {
        sys::EVP_CIPHER_CTX_ctrl(ctx, sys::EVP_CTRL_AEAD_SET_IVLEN, len, std::ptr::null_mut()) == 1
    }
}

/// Sets a CCM context's tag length (before its key).
///
/// # Safety
/// `ctx` is a context initialised with a CCM cipher.
unsafe fn tag_length(ctx: *mut sys::EVP_CIPHER_CTX, len: c_int) -> bool {
    // SAFETY: the contract; SET_TAG with a null pointer reads nothing.
    unsafe {
        sys::EVP_CIPHER_CTX_ctrl(ctx, sys::EVP_CTRL_AEAD_SET_TAG, len, std::ptr::null_mut()) == 1
    }
}

fn iv_ptr(iv: &[u8]) -> *const u8 {
    if iv.is_empty() {
        std::ptr::null()
    } else {
        iv.as_ptr()
    }
}

fn not_a_cipher() -> CryptoError {
    CryptoError::Type("not a cipher".to_owned())
}

host_fn! {
/// `nodeCipherInfo(name)` → `[keyLength, ivLength, blockSize, aead, nid,
/// mode]` (`mode` AWS-LC's `EVP_CIPH_*_MODE`), or undefined for a cipher
/// this runtime does not have.
pub(super) fn cipher_info<'s>(
    scope,
    name: String,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let Some(cipher) = cipher(&name) else {
        return Ok(None);
    };
    // SAFETY: `cipher` is one of AWS-LC's static ciphers.
    let (key, iv, block, flags, nid, mode) = unsafe {
        (
            sys::EVP_CIPHER_key_length(cipher),
            sys::EVP_CIPHER_iv_length(cipher),
            sys::EVP_CIPHER_block_size(cipher),
            sys::EVP_CIPHER_flags(cipher),
            sys::EVP_CIPHER_nid(cipher),
            sys::EVP_CIPHER_mode(cipher),
        )
    };
    let aead = flags & AEAD != 0;
    let values = [
        v8::Integer::new_from_unsigned(scope, key).into(),
        v8::Integer::new_from_unsigned(scope, iv).into(),
        v8::Integer::new_from_unsigned(scope, block).into(),
        v8::Boolean::new(scope, aead).into(),
        v8::Integer::new(scope, nid).into(),
        v8::Integer::new_from_unsigned(scope, mode).into(),
    ];
    Ok(Some(v8::Array::new_with_elements(scope, &values)))
}
}

host_fn! {
/// `nodeCipherNames()` → the names `nodeCipherNew` takes, in order.
pub(super) fn cipher_names<'s>(scope) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let mut names = Vec::with_capacity(CIPHERS.len());
    for (name, _) in CIPHERS {
        let Some(name) = v8::String::new(scope, name) else {
            return Ok(None);
        };
        names.push(name.into());
    }
    Ok(Some(v8::Array::new_with_elements(scope, &names)))
}
}

host_fn! {
/// `nodeCipherNew(name, key, iv, encrypt, tagLength)` → a context handle;
/// key and IV lengths are the caller's to check (a mismatch fails here);
/// `tagLength` is CCM's (other ciphers ignore it).
pub(super) fn cipher_new<'s>(
    scope,
    host: Rc<HostState>,
    name: String,
    key: Option<Vec<u8>>,
    iv: Option<Vec<u8>>,
    encrypt: bool,
    tag_length: u32,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let key = Zeroizing::new(key.unwrap_or_default());
    let iv = iv.unwrap_or_default();
    if iv.len() > MAX_UPDATE {
        return Err(CryptoError::Type(format!("nodeCipherNew: IVs longer than {MAX_UPDATE} bytes are not supported")).into());
    }
    let cipher = cipher(&name).ok_or_else(|| CryptoError::Type(format!("Unknown cipher: {name}")))?;
    let ccm_tag = if name.ends_with("-ccm") {
        c_int::try_from(tag_length).unwrap_or(0)
    } else {
        0
    };
    let context = Context::new(cipher, &key, &iv, encrypt, ccm_tag)
        .ok_or_else(|| CryptoError::operation("Invalid key or initialization vector"))?;
    Ok(host.handles().insert_object(scope, context, CIPHER_CHARGE, Owner::Isolate))
}
}

host_fn! {
/// `nodeCipherUpdate(handle, data, aad)` → ArrayBuffer of what is ready
/// (nothing for additional data); throws when the context refuses it.
pub(super) fn cipher_update<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    data: Option<Vec<u8>>,
    aad: bool,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let data = data.unwrap_or_default();
    if data.len() > MAX_UPDATE {
        return Err(CryptoError::Type(format!("nodeCipherUpdate: at most {MAX_UPDATE} bytes a call")).into());
    }
    let out = host
        .handles()
        .with_handle(scope, handle, |c: &mut Context| c.update(&data, aad))
        .ok_or_else(not_a_cipher)?
        .ok_or_else(|| CryptoError::operation("cipher update failed"))?;
    Ok(array_buffer(scope, out))
}
}

host_fn! {
/// `nodeCipherFinal(handle, tagLength)` → ArrayBuffer: the last bytes, then
/// (encrypting with an AEAD cipher, `tagLength` > 0) the tag. The context is
/// spent either way; throws when padding or the tag do not check out.
pub(super) fn cipher_final<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    tag_length: u32,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let out = host
        .handles()
        .with_handle(scope, handle, |c: &mut Context| {
            let mut out = c.finish()?;
            if tag_length > 0 {
                let mut tag = vec![0u8; tag_length.min(16) as usize];
                c.control(sys::EVP_CTRL_AEAD_GET_TAG, &mut tag).then_some(())?;
                out.extend_from_slice(&tag);
            }
            Some(out)
        })
        .ok_or_else(not_a_cipher)?;
    host.handles().remove_handle(scope, handle);
    let out = out.ok_or_else(|| CryptoError::operation("cipher final failed"))?;
    Ok(array_buffer(scope, out))
}
}

host_fn! {
/// `nodeCipherSetTag(handle, tag)` → whether the context took the expected
/// tag (decrypting with an AEAD cipher).
pub(super) fn cipher_set_tag<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    tag: Option<Vec<u8>>,
) -> HostResult<bool> {
    let mut tag = tag.unwrap_or_default();
    host.handles()
        .with_handle(scope, handle, |c: &mut Context| c.control(sys::EVP_CTRL_AEAD_SET_TAG, &mut tag))
        .ok_or_else(|| not_a_cipher().into())
}
}

host_fn! {
/// `nodeCipherPadding(handle, on)` → whether the context took it.
pub(super) fn cipher_padding<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    on: bool,
) -> HostResult<bool> {
    host.handles()
        .with_handle(scope, handle, |c: &mut Context| {
            // SAFETY: the context is alive while the table holds it.
            unsafe { sys::EVP_CIPHER_CTX_set_padding(c.0.as_ptr(), c_int::from(on)) == 1 }
        })
        .ok_or_else(|| not_a_cipher().into())
}
}

host_fn! {
/// `nodeCipherCcm(handle, length)`: readies a CCM context for a message of
/// `length` bytes (CCM needs it before the additional data). Whether the
/// context took it.
pub(super) fn cipher_ccm<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    length: u32,
) -> HostResult<bool> {
    host.handles()
        .with_handle(scope, handle, |c: &mut Context| c.ccm(length))
        .ok_or_else(|| not_a_cipher().into())
}
}
