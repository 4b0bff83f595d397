//! The registry's clients, one per credentials, kept between pushes and
//! pulls.
//!
//! A client keeps what its credentials got from a registry (a token per
//! repository, the basic credentials it stored), so one made with a
//! tenant's pull secret must never serve a pull made with another's: the
//! registry made a new client for every push and pull. That cost a read of
//! the system's certificate store each time (oci-client builds a throwaway
//! default reqwest client inside every client, whose TLS verifier reads the
//! store: 10-17 ms on the bench machine) and a new connection to the
//! registry. Now a client is made once per credentials (and once for none)
//! and taken again by the next push or pull with exactly the same
//! credentials, the same principal at the registry; other credentials get
//! a client of their own. Tested by `tests/registry.rs`: pulls with no or
//! wrong credentials after a push with the right ones are still refused.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use oci_client::Client;

use crate::Error;

/// Most clients kept; past it the set starts again (a node sees a few pull
/// secrets, not thousands).
const MOST: usize = 64;

/// Clients by the credentials `K` they were made for.
pub(crate) struct Clients<K> {
    by_credentials: Mutex<HashMap<K, Client>>,
}

impl<K> Default for Clients<K> {
    fn default() -> Self {
        Self {
            by_credentials: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq> Clients<K> {
    /// The client of credentials `key`, made by `make` the first time.
    pub(crate) fn of(
        &self,
        key: K,
        make: impl FnOnce() -> Result<Client, Error>,
    ) -> Result<Client, Error> {
        let mut clients = self
            .by_credentials
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = make()?;
        if clients.len() >= MOST {
            clients.clear();
        }
        clients.insert(key, client.clone());
        Ok(client)
    }
}
