//! A request's id: a trusted proxy's `x-request-id` when it is usable,
//! otherwise one made here. Kept as text (logs, the call to the node) and as a header
//! value (the Worker's request, the client's response), each made once per
//! request rather than once per use.

use std::cell::Cell;
use std::hash::{BuildHasher, RandomState};

use http::HeaderValue;

/// One request's id.
#[derive(Clone, Debug)]
pub struct RequestId {
    text: String,
    /// `None` only if `text` could not be a header value, which neither a
    /// usable client id nor a made one can.
    value: Option<HeaderValue>,
}

impl RequestId {
    /// The client's id when `sent` is usable (1–128 visible ASCII), else a new one.
    pub fn from_client(sent: Option<&HeaderValue>) -> Self {
        match sent.and_then(|value| Some((value, valid_request_id(value)?))) {
            Some((value, text)) => Self {
                text: text.to_owned(),
                // Shares the client's bytes: no copy.
                value: Some(value.clone()),
            },
            None => Self::new(),
        }
    }

    /// A new 16-hex-digit id, distinct from every other this process makes.
    pub fn new() -> Self {
        let n = REQUEST_IDS.with(|ids| {
            let (seed, count) = ids.get();
            ids.set((seed, count.wrapping_add(1)));
            seed.wrapping_add(count)
        });
        let mut digits = [0u8; 16];
        // 8 bytes are 16 hex digits: the slice is always the right size.
        let encoded = hex::encode_to_slice(mix(n).to_be_bytes(), &mut digits).is_ok();
        // Hex digits are ASCII: the check does not fail.
        let text = match std::str::from_utf8(&digits) {
            Ok(text) if encoded => text.to_owned(),
            _ => format!("{:016x}", mix(n)),
        };
        Self {
            value: HeaderValue::from_str(&text).ok(),
            text,
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The id as a header value.
    pub fn header(&self) -> Option<&HeaderValue> {
        self.value.as_ref()
    }
}

impl Default for RequestId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// `value` as text, if it is a usable request id.
fn valid_request_id(value: &HeaderValue) -> Option<&str> {
    let s = value.to_str().ok()?;
    (!s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic())).then_some(s)
}

thread_local! {
    /// Per-thread request-id state: a random seed and a counter, so ids are
    /// unique without a shared atomic.
    static REQUEST_IDS: Cell<(u64, u64)> = Cell::new((RandomState::new().hash_one(std::thread::current().id()), 0));
}

/// A bijective 64-bit mixer (splitmix64's finaliser): distinct inputs give distinct ids.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_ids_are_distinct_hex() {
        let ids: std::collections::HashSet<String> = (0..10_000)
            .map(|_| RequestId::new().as_str().to_owned())
            .collect();
        assert_eq!(ids.len(), 10_000);
        assert!(
            ids.iter()
                .all(|id| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        );
        let id = RequestId::new();
        assert_eq!(id.header().unwrap().as_bytes(), id.as_str().as_bytes());
    }

    #[test]
    fn a_usable_client_id_is_kept_and_another_replaced() {
        let sent = HeaderValue::from_static("client-id-1");
        let id = RequestId::from_client(Some(&sent));
        assert_eq!(id.as_str(), "client-id-1");
        assert_eq!(id.header(), Some(&sent));
        for unusable in ["", "has space", &"x".repeat(129)] {
            let sent = HeaderValue::from_str(unusable).unwrap();
            let id = RequestId::from_client(Some(&sent));
            assert_ne!(id.as_str(), unusable);
            assert_eq!(id.as_str().len(), 16);
        }
        assert_eq!(RequestId::from_client(None).as_str().len(), 16);
    }
}
