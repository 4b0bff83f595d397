//! [`IdMap`]: the maps of the ids an isolate's host state hands out
//! (requests, ops, bodies, timers, handles, sockets).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Maps keyed by the ids this state hands out (sequential `u32`s, never
/// chosen by a client): the id is its own hash, no SipHash on every lookup.
pub type IdMap<T> = HashMap<u32, T, BuildHasherDefault<IdHasher>>;

#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // Spread the sequential ids over the table's top bits too.
        self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id);
    }
}
