//! How a [`Proxy`] is made: its settings and metrics, then what differs
//! between the cluster's router (`--reserved-host`, `--trusted-proxies`)
//! and `isolane dev` (a node in this process), each said once by name.

use std::sync::Arc;

use isolane_membership::NodeMember;
use isolane_worker::Reservation;

use super::{Inner, LocalNode, Proxy, ProxyConfig, State};
use crate::losses::NodeLosses;
use crate::metrics::RouterMetrics;

/// A [`Proxy`] to be made: [`Proxy::builder`], then what it needs besides
/// its settings, then [`ProxyBuilder::build`].
#[derive(Debug)]
#[must_use = "a builder makes nothing until `build`"]
pub struct ProxyBuilder {
    config: ProxyConfig,
    metrics: Arc<RouterMetrics>,
    reservations: Vec<Reservation>,
    trusted_proxies: Vec<ipnet::IpNet>,
    local: Option<(Arc<dyn LocalNode>, NodeMember)>,
}

impl Proxy {
    /// A proxy with `config` and `metrics`, and with no routes and no nodes
    /// until the watches (or its owner) set them.
    pub fn builder(config: ProxyConfig, metrics: Arc<RouterMetrics>) -> ProxyBuilder {
        ProxyBuilder {
            config,
            metrics,
            reservations: Vec::new(),
            trusted_proxies: Vec::new(),
            local: None,
        }
    }
}

impl ProxyBuilder {
    /// Serves hosts reserved for a namespace only to it (`--reserved-host`).
    pub fn reservations(mut self, reservations: Vec<Reservation>) -> Self {
        self.reservations = reservations;
        self
    }

    /// Keeps the forwarding headers of requests from these peers
    /// (`--trusted-proxies`).
    pub fn trusted_proxies(mut self, trusted_proxies: Vec<ipnet::IpNet>) -> Self {
        self.trusted_proxies = trusted_proxies;
        self
    }

    /// The only node is `node`, in this process, named `name`, with
    /// `threads` engine threads (`isolane dev`): requests are matched,
    /// split, placed on a thread, retried, mapped to a status and counted
    /// exactly as in the cluster, and handed to the node without a
    /// connection.
    pub fn in_process(mut self, node: Arc<dyn LocalNode>, name: &str, threads: u32) -> Self {
        let member = NodeMember {
            name: name.to_owned(),
            endpoints: Vec::new(),
            threads,
            draining: false,
            expires_at: None,
            crash: None,
        };
        self.local = Some((node, member));
        self
    }

    /// The proxy.
    pub fn build(self) -> Proxy {
        let (local, member) = self.local.unzip();
        let proxy = Proxy {
            inner: Arc::new(Inner {
                config: self.config,
                state: State::default(),
                metrics: self.metrics,
                losses: NodeLosses::default(),
                reservations: self.reservations,
                trusted_proxies: self.trusted_proxies,
                local,
                sockets: crate::sockets::Sockets::default(),
            }),
        };
        if let Some(member) = member {
            proxy.set_members(vec![member]);
        }
        proxy
    }
}
