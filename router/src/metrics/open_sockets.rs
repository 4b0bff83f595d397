//! `isolane_router_worker_websockets_open{worker}`: the WebSockets each
//! Worker has open through this router, worked out at each scrape.
//!
//! The per-Worker counters follow the busiest-Workers ranking
//! ([`super::WorkerSeries`]), which drops a Worker's series when it has had
//! no requests since the last re-rank: a counter can restart, a gauge cannot
//! (a Worker whose thousand sockets stay open but opens no new one would
//! drop out and, when it came back, count from zero with them still open).
//! So the count lives in the Worker's slot, raised and lowered by each
//! socket, and this collector exports it when Prometheus asks: the `max`
//! Workers with the most sockets open by name, the rest summed as `other`,
//! Workers with none left out. Its series are made anew at each scrape, so
//! none is ever stale and there are at most `max + 1`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use isolane_telemetry::Metric;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGaugeVec, Opts};

use super::{OTHER_WORKER, WorkerSlot};

pub(super) const WORKER_WEBSOCKETS_OPEN: Metric = Metric::new(
    "isolane_router_worker_websockets_open",
    "WebSockets open through this router, by Worker: the Workers with the most open by name, the rest under worker=\"other\"; Workers with none are absent.",
    &["worker"],
);

/// The routed Workers' slots by id, shared with [`super::WorkerSeries`].
pub(super) type Slots = Arc<Mutex<HashMap<String, Arc<WorkerSlot>>>>;

/// One Worker's open sockets, held by its slot and by each socket.
#[derive(Debug, Default)]
pub struct OpenCount(AtomicU64);

impl OpenCount {
    pub(super) fn opened(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn closed(&self) {
        // Never below zero, whatever the order of the calls.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    pub(super) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The collector, registered once beside the other metrics.
pub(super) struct OpenSockets {
    slots: Slots,
    max: usize,
    gauges: IntGaugeVec,
}

impl OpenSockets {
    pub(super) fn new(slots: Slots, max: usize) -> prometheus::Result<Self> {
        let metric = WORKER_WEBSOCKETS_OPEN;
        let gauges = IntGaugeVec::new(Opts::new(metric.name, metric.help), metric.labels)?;
        Ok(Self { slots, max, gauges })
    }

    /// The Workers with sockets open, most first (ties by id): the first
    /// `max` by name, then `other` with the rest's sum when there are any.
    fn ranked(&self) -> Vec<(String, u64)> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let mut open: Vec<(u64, &str)> = slots
            .iter()
            .map(|(id, slot)| (slot.open_sockets.get(), id.as_str()))
            .filter(|(n, _)| *n > 0)
            .collect();
        open.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let rest: u64 = open.iter().skip(self.max).map(|(n, _)| n).sum();
        let mut ranked: Vec<(String, u64)> = open
            .iter()
            .take(self.max)
            .map(|(n, id)| ((*id).to_owned(), *n))
            .collect();
        if rest > 0 {
            ranked.push((OTHER_WORKER.to_owned(), rest));
        }
        ranked
    }
}

impl Collector for OpenSockets {
    fn desc(&self) -> Vec<&Desc> {
        self.gauges.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let ranked = self.ranked();
        let gauges = self.gauges.clone();
        gauges.reset();
        for (worker, open) in ranked {
            gauges
                .with_label_values(&[worker.as_str()])
                .set(i64::try_from(open).unwrap_or(i64::MAX));
        }
        gauges.collect()
    }
}

#[cfg(test)]
mod tests {
    use prometheus::Registry;

    use super::*;
    use crate::metrics::RouterMetrics;

    fn exported(registry: &Registry) -> Vec<(String, i64)> {
        let mut series = registry
            .gather()
            .iter()
            .filter(|family| family.name() == WORKER_WEBSOCKETS_OPEN.name)
            .flat_map(|family| family.get_metric())
            .map(|m| {
                (
                    m.get_label()[0].value().to_owned(),
                    m.get_gauge().get_value() as i64,
                )
            })
            .collect::<Vec<_>>();
        series.sort();
        series
    }

    /// The busiest two of three Workers by name, the third as `other`; a
    /// Worker whose last socket closed disappears; the count survives the
    /// busiest-Workers re-ranking that drops a Worker's counters.
    #[test]
    fn the_most_open_by_name_the_rest_as_other() {
        let registry = Registry::new();
        let metrics = RouterMetrics::register(&registry, 2).unwrap();
        let slots: Vec<_> = ["ns/a", "ns/b", "ns/c"]
            .iter()
            .map(|id| metrics.workers.slot(id))
            .collect();
        for (slot, sockets) in slots.iter().zip([3, 2, 1]) {
            for _ in 0..sockets {
                slot.open_sockets.opened();
            }
        }
        assert_eq!(
            exported(&registry),
            [
                ("ns/a".to_owned(), 3),
                ("ns/b".to_owned(), 2),
                ("other".to_owned(), 1)
            ]
        );
        // No requests since: the counters' ranking keeps only the two
        // with the most open; the open count is the slots' own.
        metrics.workers.rerank();
        metrics.workers.rerank();
        for _ in 0..3 {
            slots[0].open_sockets.closed();
        }
        slots[0].open_sockets.closed();
        assert_eq!(
            exported(&registry),
            [("ns/b".to_owned(), 2), ("ns/c".to_owned(), 1)]
        );
    }
}
