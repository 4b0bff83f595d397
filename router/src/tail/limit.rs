//! How many TokenReviews callers may cause: token buckets over the reviews
//! of tokens that are not in the cache ([`super::access`]), one per client
//! address and one for everyone. A client that sends bogus tokens spends
//! its own bucket and then is answered 429; a crowd of addresses spends the
//! shared one and then everyone's *new* tokens wait (503), while tokens
//! already in the cache never come here and keep working.
//!
//! The buckets count in whole reviews refilled continuously; their clock is
//! tokio's, so tests run it paused. The clients' buckets live in an LRU of
//! [`CLIENTS`] addresses: an address pushed out starts again with a full
//! bucket, which the shared bucket bounds.

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use http::HeaderMap;
use tokio::time::Instant;

/// One client address's budget of reviews: a burst of 10, then 2 a second.
/// A person opening tails needs one review per token per cache lifetime;
/// the burst covers a few people behind one NAT starting at once.
pub const PER_CLIENT: Rate = Rate {
    per_second: 2.0,
    burst: 10.0,
};

/// Everyone's budget: a burst of 40, then 20 reviews a second, whatever the
/// number of addresses: an order of magnitude under what one anonymous
/// client made the router send before (~430 a second).
pub const EVERYONE: Rate = Rate {
    per_second: 20.0,
    burst: 40.0,
};

/// Client addresses whose buckets are kept (least recently used out).
pub const CLIENTS: NonZeroUsize = NonZeroUsize::new(4096).expect("non-zero");

/// A bucket's shape: its size, and how fast it fills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Reviews added per second.
    pub per_second: f64,
    /// Reviews the bucket holds when full.
    pub burst: f64,
}

/// Why a review may not be made now, and how long until it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttled {
    /// This client's bucket is empty.
    Client(Duration),
    /// The bucket shared by every client is empty.
    Everyone(Duration),
}

impl Throttled {
    /// How long until a review may be made.
    pub fn retry_after(self) -> Duration {
        match self {
            Throttled::Client(wait) | Throttled::Everyone(wait) => wait,
        }
    }
}

/// A token bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(rate: Rate, now: Instant) -> Self {
        Self {
            tokens: rate.burst,
            at: now,
        }
    }

    /// Adds what the time since the last refill earned.
    fn refill(&mut self, rate: Rate, now: Instant) {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * rate.per_second;
        self.tokens = (self.tokens + earned).min(rate.burst);
        self.at = now;
    }

    /// How long until it holds one whole review.
    fn wait(&self, rate: Rate) -> Duration {
        let missing = (1.0 - self.tokens).max(0.0);
        Duration::from_secs_f64(missing / rate.per_second)
    }

    fn has_one(&self) -> bool {
        self.tokens >= 1.0
    }
}

/// The buckets.
#[derive(Debug)]
pub struct Limiter {
    per_client: Rate,
    everyone: Rate,
    clients: lru::LruCache<IpAddr, Bucket>,
    shared: Bucket,
}

impl Limiter {
    /// Buckets shaped `per_client` for each of up to `clients` addresses,
    /// and one shaped `everyone` that all share; all start full.
    pub fn new(per_client: Rate, everyone: Rate, clients: NonZeroUsize) -> Self {
        Self {
            per_client,
            everyone,
            clients: lru::LruCache::new(clients),
            shared: Bucket::full(everyone, Instant::now()),
        }
    }

    /// Takes one review from `client`'s bucket and from the shared one, or
    /// neither when either is empty.
    pub fn take(&mut self, client: IpAddr, now: Instant) -> Result<(), Throttled> {
        let (per_client, everyone) = (self.per_client, self.everyone);
        let own = self
            .clients
            .get_or_insert_mut(bucket_key(client), || Bucket::full(per_client, now));
        own.refill(per_client, now);
        if !own.has_one() {
            return Err(Throttled::Client(own.wait(per_client)));
        }
        self.shared.refill(everyone, now);
        if !self.shared.has_one() {
            return Err(Throttled::Everyone(self.shared.wait(everyone)));
        }
        own.tokens -= 1.0;
        self.shared.tokens -= 1.0;
        Ok(())
    }
}

/// The address a client's bucket is kept under: an IPv4 address (also when
/// written as IPv6), or an IPv6 address's /64, which is what one subscriber
/// gets (a client could otherwise pick a fresh address per request).
fn bucket_key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & (u128::MAX << 64);
                IpAddr::V6(prefix.into())
            }
        },
    }
}

/// The client a request comes from: the peer, or, when the peer is a
/// trusted proxy (`--trusted-proxies`, which `trusts` tells), the nearest
/// address in `X-Forwarded-For` that is not one (each proxy appends the
/// address it got the request from, so entries right of the first untrusted
/// one were written by trusted proxies). An entry that is not an address
/// leaves the peer's.
pub fn client_address(
    peer: IpAddr,
    headers: &HeaderMap,
    trusts: impl Fn(IpAddr) -> bool,
) -> IpAddr {
    if !trusts(peer) {
        return peer;
    }
    let mut hops = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .collect::<Vec<_>>();
    hops.reverse();
    for hop in hops {
        match hop.trim().parse::<IpAddr>() {
            Ok(address) if trusts(address) => continue,
            Ok(address) => return address,
            Err(_) => return peer,
        }
    }
    peer
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: Rate = Rate {
        per_second: 2.0,
        burst: 10.0,
    };
    const WIDE: Rate = Rate {
        per_second: 1000.0,
        burst: 1000.0,
    };

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_gets_its_burst_then_its_rate() {
        let mut limits = Limiter::new(RATE, WIDE, CLIENTS);
        let client = ip("192.0.2.7");
        for _ in 0..10 {
            assert_eq!(limits.take(client, Instant::now()), Ok(()));
        }
        let Err(Throttled::Client(wait)) = limits.take(client, Instant::now()) else {
            panic!("the 11th review within the burst is throttled");
        };
        assert_eq!(wait, Duration::from_millis(500));
        tokio::time::advance(wait).await;
        assert_eq!(limits.take(client, Instant::now()), Ok(()));
        assert!(limits.take(client, Instant::now()).is_err());
        // Another address has its own bucket.
        assert_eq!(limits.take(ip("192.0.2.8"), Instant::now()), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_shared_bucket_bounds_a_crowd_of_addresses() {
        let everyone = Rate {
            per_second: 20.0,
            burst: 40.0,
        };
        let mut limits = Limiter::new(RATE, everyone, CLIENTS);
        let taken = (0..200u32)
            .map(|n| IpAddr::V4((0xC000_0200 + n).into()))
            .filter(|&client| limits.take(client, Instant::now()).is_ok())
            .count();
        assert_eq!(taken, 40);
        let Err(Throttled::Everyone(wait)) = limits.take(ip("198.51.100.1"), Instant::now()) else {
            panic!("a new address is throttled by the shared bucket");
        };
        assert_eq!(wait, Duration::from_millis(50));
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_refused_by_the_shared_bucket_keeps_its_own() {
        let everyone = Rate {
            per_second: 1.0,
            burst: 1.0,
        };
        let mut limits = Limiter::new(RATE, everyone, CLIENTS);
        let (first, second) = (ip("192.0.2.1"), ip("192.0.2.2"));
        assert_eq!(limits.take(first, Instant::now()), Ok(()));
        for _ in 0..20 {
            assert!(matches!(
                limits.take(second, Instant::now()),
                Err(Throttled::Everyone(_))
            ));
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(limits.take(second, Instant::now()), Ok(()));
    }

    #[test]
    fn an_ipv6_client_is_its_64() {
        assert_eq!(bucket_key(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(
            bucket_key(ip("2001:db8:1:2:ffff::1")),
            bucket_key(ip("2001:db8:1:2::9"))
        );
        assert_ne!(
            bucket_key(ip("2001:db8:1:3::1")),
            bucket_key(ip("2001:db8:1:2::1"))
        );
        assert_eq!(bucket_key(ip("::ffff:192.0.2.7")), ip("192.0.2.7"));
        assert_eq!(bucket_key(ip("192.0.2.7")), ip("192.0.2.7"));
    }

    #[test]
    fn forwarded_for_counts_only_behind_a_trusted_proxy() {
        let proxy = ip("10.0.0.1");
        let trusts = |address: IpAddr| address == ip("10.0.0.1") || address == ip("10.0.0.2");
        let mut headers = HeaderMap::new();
        headers.append(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.4".parse().unwrap(),
        );
        headers.append("x-forwarded-for", "10.0.0.2".parse().unwrap());
        // The nearest untrusted hop, not the leftmost (the client's to write).
        assert_eq!(client_address(proxy, &headers, trusts), ip("198.51.100.4"));
        // From anyone else the header is the client's own: ignored.
        let stranger = ip("192.0.2.7");
        assert_eq!(client_address(stranger, &headers, trusts), stranger);
        // No header, or garbage: the proxy's own address.
        assert_eq!(client_address(proxy, &HeaderMap::new(), trusts), proxy);
        let mut garbage = HeaderMap::new();
        garbage.insert("x-forwarded-for", "unknown".parse().unwrap());
        assert_eq!(client_address(proxy, &garbage, trusts), proxy);
    }
}
