//! The operator's view of runtime-node membership: the nodes' Leases, through
//! the Lease watch of the shared `isolane-membership` crate (the router's
//! too), turned into the placement node set `status.placement` comes from.

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use isolane_membership::{Members, MembershipObserver, NodeMember};
use isolane_placement::{Node, NodeSet};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::watch;
use tracing::info;

/// The placement node set of live, non-draining `members`.
pub fn node_set(members: &[NodeMember]) -> NodeSet {
    NodeSet::new(
        members
            .iter()
            .map(|member| Node::new(member.name.clone(), member.threads))
            .collect(),
    )
}

/// Watches runtime-node Leases through `api` (the watch the router uses too,
/// `isolane_membership::watch`); publishes the schedulable node set on
/// `nodes` whenever it changes (on a Lease event, or when a Lease lapses,
/// checked at the next expiry and at least every `interval`); after the first
/// publication, sends on `changed` so every Worker's placement is recomputed.
/// `synced` turns true at the first publication. Runs until the watch ends.
pub async fn watch(
    api: Api<Lease>,
    interval: Duration,
    nodes: watch::Sender<Arc<NodeSet>>,
    changed: mpsc::UnboundedSender<()>,
    synced: watch::Sender<bool>,
) {
    let placement = Placement {
        nodes,
        changed,
        synced,
        published: None,
    };
    isolane_membership::watch::watch(api, interval, placement).await;
}

/// The node set placement reads, as the Lease watch's observer.
struct Placement {
    nodes: watch::Sender<Arc<NodeSet>>,
    changed: mpsc::UnboundedSender<()>,
    synced: watch::Sender<bool>,
    /// The (name, threads) of the set last published.
    published: Option<Vec<(String, u32)>>,
}

impl MembershipObserver for Placement {
    fn members(&mut self, members: Members) {
        let fingerprint: Vec<(String, u32)> = members
            .live
            .iter()
            .map(|member| (member.name.clone(), member.threads))
            .collect();
        if self.published.as_ref() == Some(&fingerprint) {
            return;
        }
        info!(
            nodes = fingerprint.len(),
            "schedulable runtime nodes changed"
        );
        self.nodes.send_replace(Arc::new(node_set(&members.live)));
        if self.published.is_some() {
            // The receiver lives as long as the caches.
            let _ = self.changed.unbounded_send(());
        }
        self.published = Some(fingerprint);
        self.synced.send_replace(true);
    }
}
