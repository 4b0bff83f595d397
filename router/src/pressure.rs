//! Isolate pressure per node: what runs out on a runtime node, sampled by
//! the router for the custom metrics API ([`crate::custom_metrics`]) that a
//! HorizontalPodAutoscaler reads (docs/autoscaling.md).
//!
//! Expected flow: every [`POLL`] the router asks each live node of its fleet
//! for a `Stats` snapshot, over the same mutually authenticated channel as
//! its requests (an RPC every node already serves, so no port, credential
//! or scrape format is added). From the snapshots it keeps, per node, the
//! count of warm-set evictions (capacity or memory: a Worker's isolate
//! thrown out because more Workers are hot than the node's warm sets hold)
//! over the last [`WINDOW`], and the requests in flight per thread now.
//!
//! Guarantees: a node's eviction rate is served only once two snapshots of
//! it span some time; a node whose counter went back (it restarted) starts
//! over; a node that left the fleet is forgotten at the next poll. A node
//! that does not answer within [`ASK_FOR`] keeps its older samples.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use isolane_proto::runtime::v1::StatsResponse;
use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use k8s_openapi::jiff::Timestamp;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::Proxy;
use crate::channels;
use crate::fleet::FleetNode;

/// How often every node is asked for its stats.
pub const POLL: Duration = Duration::from_secs(5);
/// The span an eviction rate is measured over.
pub const WINDOW: Duration = Duration::from_secs(30);
/// How long one node's answer is waited for.
pub const ASK_FOR: Duration = Duration::from_secs(2);

/// The pressure signals of every node the router sampled; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Pressure {
    nodes: Arc<Mutex<HashMap<String, NodeSamples>>>,
}

/// What one node's recent snapshots say.
#[derive(Debug, Default)]
struct NodeSamples {
    /// (when, warm-set evictions so far), oldest first, within [`WINDOW`].
    evictions: VecDeque<(Instant, u64)>,
    in_flight_per_thread: f64,
    sampled_at: Option<Timestamp>,
}

/// One node's pressure, as served.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePressure {
    /// The node's name: its Lease's, which the chart makes its pod's.
    pub node: String,
    /// Warm-set evictions per second over `window`.
    pub evictions_per_second: f64,
    /// The span the rate was measured over.
    pub window: Duration,
    /// Requests in flight (running or waiting for their thread) per thread.
    pub in_flight_per_thread: f64,
    /// When the newest snapshot was taken.
    pub sampled_at: Timestamp,
}

// === impl Pressure ===

impl Pressure {
    /// Records `stats`, a snapshot of `node` taken at `at`.
    pub fn record(&self, node: &str, at: Instant, stats: &StatsResponse) {
        let mut nodes = self.lock();
        let samples = nodes.entry(node.to_owned()).or_default();
        if samples
            .evictions
            .back()
            .is_some_and(|(_, last)| *last > stats.warm_set_evictions)
        {
            samples.evictions.clear();
        }
        samples.evictions.push_back((at, stats.warm_set_evictions));
        while samples
            .evictions
            .front()
            .is_some_and(|(first, _)| at.saturating_duration_since(*first) > WINDOW)
        {
            samples.evictions.pop_front();
        }
        let in_flight: u64 = stats.threads.iter().map(|t| u64::from(t.in_flight)).sum();
        let threads = stats.threads.len().max(1);
        samples.in_flight_per_thread = in_flight as f64 / threads as f64;
        samples.sampled_at = Some(Timestamp::now());
    }

    /// Forgets the nodes `live` says are gone.
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|node, _| live(node));
    }

    /// Every node with a measured rate, by name.
    pub fn nodes(&self) -> Vec<NodePressure> {
        let nodes = self.lock();
        let mut measured: Vec<NodePressure> = nodes
            .iter()
            .filter_map(|(node, samples)| samples.pressure(node))
            .collect();
        measured.sort_by(|a, b| a.node.cmp(&b.node));
        measured
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, NodeSamples>> {
        // A panic elsewhere while it was held leaves the samples usable.
        self.nodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl NodeSamples {
    fn pressure(&self, node: &str) -> Option<NodePressure> {
        let (first_at, first) = *self.evictions.front()?;
        let (last_at, last) = *self.evictions.back()?;
        let window = last_at.saturating_duration_since(first_at);
        if window.is_zero() {
            return None;
        }
        Some(NodePressure {
            node: node.to_owned(),
            evictions_per_second: (last - first) as f64 / window.as_secs_f64(),
            window,
            in_flight_per_thread: self.in_flight_per_thread,
            sampled_at: self.sampled_at?,
        })
    }
}

/// Samples every live node of `proxy`'s fleet into `pressure` every
/// [`POLL`], until `shutdown`.
pub async fn run(proxy: Proxy, pressure: Pressure, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(POLL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = every.tick() => {}
        }
        let fleet = proxy.fleet();
        let asks = fleet.nodes().iter().map(|node| ask(&proxy, &fleet, node));
        for (node, stats) in futures::future::join_all(asks).await {
            if let Some(stats) = stats {
                pressure.record(&node, Instant::now(), &stats);
            }
        }
        pressure.retain(|name| fleet.nodes().iter().any(|n| n.member.name == name));
    }
}

/// `node`'s stats, or `None` (logged) when it could not say within [`ASK_FOR`].
async fn ask(
    proxy: &Proxy,
    fleet: &crate::fleet::Fleet,
    node: &FleetNode,
) -> (String, Option<StatsResponse>) {
    let name = node.member.name.clone();
    let Some(endpoint) = node.member.endpoint_for(0) else {
        return (name, None);
    };
    let (channel, origin) = match channels::channel(fleet, node, endpoint, &proxy.config().channel)
    {
        Ok(channel) => channel,
        Err(error) => {
            debug!(node = %name, %error, "pressure: no channel to the node");
            return (name, None);
        }
    };
    let mut client = RuntimeClient::with_origin(channel, origin);
    let request = isolane_proto::runtime::v1::StatsRequest {};
    match tokio::time::timeout(ASK_FOR, client.stats(request)).await {
        Ok(Ok(response)) => (name, Some(response.into_inner())),
        Ok(Err(status)) => {
            debug!(node = %name, error = %status.message(), "pressure: the node refused Stats");
            (name, None)
        }
        Err(_) => {
            debug!(node = %name, "pressure: no stats within the time allowed");
            (name, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isolane_proto::runtime::v1::ThreadStats;

    fn stats(evictions: u64, in_flight: &[u32]) -> StatsResponse {
        StatsResponse {
            warm_set_evictions: evictions,
            threads: in_flight
                .iter()
                .map(|n| ThreadStats {
                    in_flight: *n,
                    ..ThreadStats::default()
                })
                .collect(),
            ..StatsResponse::default()
        }
    }

    #[test]
    fn a_rate_needs_two_snapshots_apart() {
        let pressure = Pressure::default();
        let start = Instant::now();
        pressure.record("node-a", start, &stats(10, &[1, 2]));
        assert_eq!(pressure.nodes(), []);
        pressure.record(
            "node-a",
            start + Duration::from_secs(5),
            &stats(60, &[3, 4]),
        );
        let [node] = pressure.nodes().try_into().unwrap();
        assert_eq!(node.node, "node-a");
        assert_eq!(node.evictions_per_second, 10.0);
        assert_eq!(node.window, Duration::from_secs(5));
        assert_eq!(node.in_flight_per_thread, 3.5);
    }

    #[test]
    fn the_window_slides_and_a_restart_starts_over() {
        let pressure = Pressure::default();
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        pressure.record("a", at(0), &stats(0, &[0]));
        pressure.record("a", at(20), &stats(1000, &[0]));
        pressure.record("a", at(40), &stats(1000, &[0]));
        // The first sample left the 30 s window: no evictions in 20..40.
        assert_eq!(pressure.nodes()[0].evictions_per_second, 0.0);
        pressure.record("a", at(45), &stats(5, &[0]));
        assert_eq!(pressure.nodes(), [], "a counter that went back starts over");
        pressure.record("a", at(50), &stats(30, &[0]));
        assert_eq!(pressure.nodes()[0].evictions_per_second, 5.0);
        pressure.retain(|name| name != "a");
        assert_eq!(pressure.nodes(), []);
    }
}
