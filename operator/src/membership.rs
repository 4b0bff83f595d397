//! The operator's view of runtime-node membership: a watch on the nodes' Leases
//! (format and parsing in the shared `isolane-membership` crate, which the router
//! uses too), turned into the placement node set `status.placement` comes from.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use isolane_membership::{NODE_LABEL, NodeMember, live_members};
use isolane_placement::{Node, NodeSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::watch;
use tracing::{debug, info};

/// The placement node set of live, non-draining `members`.
pub fn node_set(members: &[NodeMember]) -> NodeSet {
    NodeSet::new(
        members
            .iter()
            .map(|member| Node::new(member.name.clone(), member.threads))
            .collect(),
    )
}

/// Watches runtime-node Leases through `api`; publishes the schedulable node set
/// on `nodes` whenever it changes (on a Lease event, or when a Lease expires,
/// checked every `interval`); after the first publication, sends on `changed` so
/// every Worker's placement is recomputed. `synced` turns true at the first
/// publication. Runs until the watch ends.
pub async fn watch(
    api: Api<Lease>,
    interval: Duration,
    nodes: watch::Sender<Arc<NodeSet>>,
    changed: mpsc::UnboundedSender<()>,
    synced: watch::Sender<bool>,
) {
    let (store, writer) = reflector::store::<Lease>();
    let selector = format!("{NODE_LABEL}=true");
    let events = watcher(api, watcher::Config::default().labels(&selector))
        .default_backoff()
        .reflect(writer);
    tokio::pin!(events);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut listed = false;
    let mut published: Option<Vec<(String, u32)>> = None;
    loop {
        tokio::select! {
            event = events.next() => match event {
                None => return,
                Some(Ok(watcher::Event::InitDone)) => listed = true,
                Some(Ok(_)) => {}
                Some(Err(error)) => debug!(%error, "node Lease watch error"),
            },
            _ = tick.tick() => {}
        }
        if !listed {
            continue;
        }
        let leases = store.state();
        let (members, errors) = live_members(leases.iter().map(Arc::as_ref), Timestamp::now());
        for error in errors {
            debug!(%error, kind = error.kind(), "ignoring a runtime-node Lease");
        }
        let fingerprint: Vec<(String, u32)> = members
            .iter()
            .map(|member| (member.name.clone(), member.threads))
            .collect();
        if published.as_ref() == Some(&fingerprint) {
            continue;
        }
        info!(
            nodes = fingerprint.len(),
            "schedulable runtime nodes changed"
        );
        nodes.send_replace(Arc::new(node_set(&members)));
        if published.is_some() {
            // The receiver lives as long as the controller.
            let _ = changed.unbounded_send(());
        }
        published = Some(fingerprint);
        synced.send_replace(true);
    }
}
