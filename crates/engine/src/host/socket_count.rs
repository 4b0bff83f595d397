//! How many WebSockets a Worker holds open on this engine thread, in all and
//! per client, and the two caps on them (`WebSocketConfig`): the Worker's
//! budget (`max_sockets_per_worker`, 503 past it) and each client's share of
//! it (`max_sockets_per_client`, 429 past it), so that one client cannot
//! spend a Worker's whole budget and lock its other clients out.
//!
//! The share holds only under contention: while the Worker has more than
//! half its budget free, a client past its share still gets sockets. One
//! address is often many people (an office NAT; a carrier's NAT puts
//! thousands of phones behind one): 50 of them opening sockets to an idle
//! Worker were refused at 16 when the share held always. One client alone
//! can so take half the budget, never more, and the other half stays for
//! the others, each up to its share and then up to the budget.
//!
//! The client is the address the front end vouches for in
//! [`CLIENT_HEADER`] (the router's `Client`: the connection's address, or a
//! trusted proxy's word; `isolane dev` runs the same code). A request
//! without it (the node called directly, a trusted proxy that did not send
//! it) has no share of its own: only the Worker's budget holds it.
//!
//! A socket's place is a [`Slot`]: counted when opened, given back when
//! dropped. Isolates never leave their thread, so thread-local counts are
//! exactly "per Worker per thread".

use std::cell::RefCell;
use std::collections::HashMap;

use http::HeaderValue;

use crate::socket::WebSocketConfig;

/// The header in which the front end names the client's address
/// (`cf-connecting-ip`, as on Cloudflare).
pub(crate) const CLIENT_HEADER: &str = "cf-connecting-ip";

#[derive(Default)]
struct Counts {
    per_worker: HashMap<String, usize>,
    per_client: HashMap<(String, HeaderValue), usize>,
}

thread_local! {
    static OPEN: RefCell<Counts> = RefCell::default();
}

/// Why a socket was not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The Worker holds its whole budget on this thread.
    Worker { limit: usize },
    /// This client holds its whole share of the Worker's budget.
    Client { limit: usize },
}

/// One open socket's place in the counts; given back when dropped.
pub struct Slot {
    worker: String,
    client: Option<HeaderValue>,
}

/// Takes a place for a new socket of `worker` opened by `client`, unless a
/// cap of `config` is reached.
pub(crate) fn open(
    worker: &str,
    client: Option<&HeaderValue>,
    config: &WebSocketConfig,
) -> Result<Slot, Refused> {
    OPEN.with(|counts| {
        let mut counts = counts.borrow_mut();
        let Counts {
            per_worker,
            per_client,
        } = &mut *counts;
        let total = per_worker.get(worker).copied().unwrap_or(0);
        if total >= config.max_sockets_per_worker {
            return Err(Refused::Worker {
                limit: config.max_sockets_per_worker,
            });
        }
        if let Some(client) = client {
            let key = (worker.to_owned(), client.clone());
            let mine = per_client.entry(key).or_default();
            if *mine >= config.max_sockets_per_client && contended(total, config) {
                return Err(Refused::Client {
                    limit: config.max_sockets_per_client,
                });
            }
            *mine += 1;
        }
        *per_worker.entry(worker.to_owned()).or_default() += 1;
        Ok(Slot {
            worker: worker.to_owned(),
            client: client.cloned(),
        })
    })
}

/// Whether a Worker holding `total` sockets is short of its budget: half
/// of it or more is taken (see the module docs).
fn contended(total: usize, config: &WebSocketConfig) -> bool {
    total.saturating_mul(2) >= config.max_sockets_per_worker
}

impl Drop for Slot {
    fn drop(&mut self) {
        // At thread exit the counts may be gone already: nothing to give back.
        let _ = OPEN.try_with(|counts| {
            let mut counts = counts.borrow_mut();
            let worker = std::mem::take(&mut self.worker);
            if let Some(client) = self.client.take() {
                let key = (worker.clone(), client);
                release(&mut counts.per_client, key);
            }
            release(&mut counts.per_worker, worker);
        });
    }
}

fn release<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: K) {
    if let Some(n) = map.get_mut(&key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_capped_at_its_share_and_others_still_get_the_budget() {
        let config = WebSocketConfig {
            max_sockets_per_worker: 4,
            max_sockets_per_client: 2,
            ..WebSocketConfig::default()
        };
        let (a, b) = (
            HeaderValue::from_static("192.0.2.1"),
            HeaderValue::from_static("192.0.2.2"),
        );
        let a1 = open("w", Some(&a), &config).unwrap();
        let _a2 = open("w", Some(&a), &config).unwrap();
        assert_eq!(
            open("w", Some(&a), &config).err(),
            Some(Refused::Client { limit: 2 })
        );
        // Another Worker's share of the same client is its own.
        let _other = open("other", Some(&a), &config).unwrap();
        let _b1 = open("w", Some(&b), &config).unwrap();
        let _unknown = open("w", None, &config).unwrap();
        assert_eq!(
            open("w", Some(&b), &config).err(),
            Some(Refused::Worker { limit: 4 })
        );
        // A closed socket gives its place back, to its client and the Worker.
        drop(a1);
        let _a3 = open("w", Some(&a), &config).unwrap();
        assert_eq!(
            open("w", None, &config).err(),
            Some(Refused::Worker { limit: 4 })
        );
    }

    #[test]
    fn a_crowd_behind_one_address_is_served_while_the_budget_has_room() {
        let config = WebSocketConfig {
            max_sockets_per_worker: 100,
            max_sockets_per_client: 16,
            ..WebSocketConfig::default()
        };
        let (nat, other) = (
            HeaderValue::from_static("198.51.100.7"),
            HeaderValue::from_static("192.0.2.9"),
        );
        // Fifty people behind one office NAT: every one gets a socket.
        let crowd: Vec<Slot> = (0..50)
            .map(|i| open("w", Some(&nat), &config).unwrap_or_else(|e| panic!("{i}: {e:?}")))
            .collect();
        // Half the budget is taken: that address is now held to its share.
        assert_eq!(
            open("w", Some(&nat), &config).err(),
            Some(Refused::Client { limit: 16 })
        );
        // The other half stays for everyone else, each up to its share.
        let others: Vec<HeaderValue> = (0..50)
            .map(|i| HeaderValue::try_from(format!("192.0.2.{i}")).unwrap())
            .collect();
        assert!(open("w", Some(&other), &config).is_ok());
        let rest: Vec<Slot> = others
            .iter()
            .map(|client| open("w", Some(client), &config).unwrap())
            .collect();
        assert_eq!(
            open("w", None, &config).err(),
            Some(Refused::Worker { limit: 100 })
        );
        // The crowd leaves; the others still hold half the budget, so the
        // address gets its share and no more.
        drop(crowd);
        let again: Vec<Slot> = (0..16)
            .map(|i| open("w", Some(&nat), &config).unwrap_or_else(|e| panic!("{i}: {e:?}")))
            .collect();
        assert_eq!(
            open("w", Some(&nat), &config).err(),
            Some(Refused::Client { limit: 16 })
        );
        // Everyone else leaves too: room again, past the share.
        drop(rest);
        assert!(open("w", Some(&nat), &config).is_ok());
        drop(again);
    }
}
