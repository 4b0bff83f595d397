//! [`Params`]: the parameters of a Web Crypto operation, as the runtime's
//! JavaScript passes them; read by `subtle.rs`, used by `ops.rs` and
//! `fast_verify.rs`.

use std::rc::Rc;

use super::key::Key;

/// Algorithm parameters, already normalised by the runtime's JavaScript.
#[derive(Default)]
pub(crate) struct Params {
    pub(crate) hash: Option<String>,
    pub(crate) salt_length: Option<usize>,
    pub(crate) iv: Option<Vec<u8>>,
    pub(crate) additional_data: Option<Vec<u8>>,
    pub(crate) tag_length: Option<usize>,
    pub(crate) counter: Option<Vec<u8>>,
    /// AES-CTR: bits of the counter block that count.
    pub(crate) length: Option<usize>,
    pub(crate) label: Option<Vec<u8>>,
    pub(crate) salt: Option<Vec<u8>>,
    pub(crate) info: Option<Vec<u8>>,
    pub(crate) iterations: Option<u32>,
    /// ECDH/X25519: the peer's public key.
    pub(crate) public: Option<Rc<Key>>,
}
