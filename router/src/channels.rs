//! Per-thread gRPC channels to runtime nodes.
//!
//! Each router worker thread keeps its own map from endpoint to
//! [`tonic::transport::Channel`] (one HTTP/2 connection each) in a
//! thread-local, so the request path takes no lock to find a connection and
//! every core drives its own connections, as the design asks ("per-core workers
//! with their own HTTP/2 connections beat a shared pool"). Channels are created
//! lazily on a thread's first request to an endpoint, and a thread drops the
//! channels of nodes that left the fleet the next time it sees a newer
//! [`Fleet`] generation.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use http::Uri;
use tonic::transport::{Channel, Endpoint};

use crate::Error;
use crate::fleet::{Fleet, FleetNode};

/// How a new channel connects.
#[derive(Clone, Copy, Debug)]
pub struct ChannelConfig {
    /// Deadline for establishing the TCP connection.
    pub connect_timeout: Duration,
    /// HTTP/2 keep-alive ping interval, to notice a dead node without traffic.
    pub keepalive: Duration,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(1),
            keepalive: Duration::from_secs(10),
        }
    }
}

#[derive(Default)]
struct Cache {
    generation: u64,
    /// Endpoint URI → (node name, channel).
    channels: HashMap<String, (String, Channel)>,
}

thread_local! {
    static CHANNELS: RefCell<Cache> = RefCell::new(Cache::default());
}

/// This thread's channel to `node`'s `endpoint`, created if needed.
pub fn channel(
    fleet: &Fleet,
    node: &FleetNode,
    endpoint: &str,
    config: ChannelConfig,
) -> Result<Channel, Error> {
    CHANNELS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.generation != fleet.generation() {
            cache.generation = fleet.generation();
            cache.channels.retain(|endpoint, (name, _)| {
                fleet
                    .nodes()
                    .iter()
                    .any(|n| n.member.name == *name && n.member.endpoints.contains(endpoint))
            });
        }
        if let Some((_, channel)) = cache.channels.get(endpoint) {
            return Ok(channel.clone());
        }
        let channel = connect_lazy(endpoint, config).ok_or_else(|| Error::InvalidEndpoint {
            node: node.member.name.clone(),
            endpoint: endpoint.to_owned(),
        })?;
        cache.channels.insert(
            endpoint.to_owned(),
            (node.member.name.clone(), channel.clone()),
        );
        Ok(channel)
    })
}

/// How many channels this thread holds (for tests).
pub fn cached() -> usize {
    CHANNELS.with(|cache| cache.borrow().channels.len())
}

fn connect_lazy(endpoint: &str, config: ChannelConfig) -> Option<Channel> {
    let uri: Uri = endpoint.parse().ok()?;
    uri.authority()?;
    let endpoint = Endpoint::from(uri)
        .connect_timeout(config.connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(config.keepalive)
        .keep_alive_while_idle(true)
        .http2_adaptive_window(true);
    Some(endpoint.connect_lazy())
}
