//! [`Params`]: the parameters of a Web Crypto operation, as the runtime's
//! JavaScript passes them; read by `subtle.rs`, used by `ops.rs` and
//! `fast_verify.rs`.

use std::rc::Rc;

use super::key::Key;

/// Algorithm parameters, already normalised by the runtime's JavaScript.
#[derive(Default)]
pub struct Params {
    pub hash: Option<String>,
    pub salt_length: Option<usize>,
    pub iv: Option<Vec<u8>>,
    pub additional_data: Option<Vec<u8>>,
    pub tag_length: Option<usize>,
    pub counter: Option<Vec<u8>>,
    /// AES-CTR: bits of the counter block that count.
    pub length: Option<usize>,
    pub label: Option<Vec<u8>>,
    pub salt: Option<Vec<u8>>,
    pub info: Option<Vec<u8>>,
    pub iterations: Option<u32>,
    /// ECDH/X25519: the peer's public key.
    pub public: Option<Rc<Key>>,
}
