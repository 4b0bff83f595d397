//! Continuous traffic through the router while a test changes the system, and
//! a tally of every request it sent.
//!
//! [`Load::start`] runs `concurrency` clients, each with its own connections
//! ([`Ingress`]), each sending one request at a time round the targets (a
//! `Host` and a path each), at most one every `pause`. Every request becomes a
//! [`Sample`] (when it was sent, how long it took, the reply or the error),
//! readable while the load runs ([`Load::count`], [`Load::wait_for`]) and in
//! full once it stops ([`Load::stop`] → [`Tally`]). A failed request is a
//! non-2xx status or no reply at all: nothing is retried here.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::ingress::{Ingress, Reply};
use isolane_testenv::wait_until;

/// Where a request goes: the `Host` header and the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The `Host` header.
    pub host: String,
    /// The path (and query).
    pub path: String,
}

impl Target {
    /// `GET /` on `host`.
    pub fn host(host: &str) -> Self {
        Self {
            host: host.to_owned(),
            path: "/".to_owned(),
        }
    }
}

/// One request of the load.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When it was sent.
    pub sent: Instant,
    /// How long until the whole response was read (or the exchange failed).
    pub latency: Duration,
    /// Index of its target.
    pub target: usize,
    /// The reply, or what went wrong.
    pub outcome: Result<Reply, String>,
}

impl Sample {
    /// A 2xx reply.
    pub fn is_success(&self) -> bool {
        self.outcome.as_ref().is_ok_and(Reply::is_success)
    }

    /// The node that answered, per `x-isolane-node`.
    pub fn node(&self) -> Option<&str> {
        self.outcome.as_ref().ok()?.node.as_deref()
    }

    /// The body of a reply.
    pub fn body(&self) -> Option<&str> {
        self.outcome.as_ref().ok().map(|reply| reply.body.as_str())
    }

    /// When it was answered.
    pub fn done(&self) -> Instant {
        self.sent + self.latency
    }
}

/// How to send the load.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Clients sending at once (each waits for its reply before the next request).
    pub concurrency: usize,
    /// Least time between two requests of one client.
    pub pause: Duration,
}

impl Default for LoadOptions {
    /// Four clients, each at most one request every 5 ms: enough to have
    /// requests in flight on every node at any moment without saturating two
    /// cores that also run the control plane, the nodes and the router.
    fn default() -> Self {
        Self {
            concurrency: 4,
            pause: Duration::from_millis(5),
        }
    }
}

/// Traffic running in the background until [`Load::stop`].
#[derive(Debug)]
pub struct Load {
    targets: Vec<Target>,
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    clients: Vec<JoinHandle<()>>,
    started: Instant,
}

impl Load {
    /// Starts `options.concurrency` clients sending to `targets` through the
    /// router at `router`; client `i` starts at target `i`.
    ///
    /// # Panics
    /// When `targets` is empty.
    pub fn start(router: SocketAddr, targets: Vec<Target>, options: LoadOptions) -> Self {
        assert!(!targets.is_empty(), "load needs at least one target");
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let clients = (0..options.concurrency)
            .map(|client| {
                let ingress = Ingress::new(router);
                let targets = targets.clone();
                let samples = Arc::clone(&samples);
                let stop = Arc::clone(&stop);
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval(options.pause);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    let mut target = client % targets.len();
                    while !stop.load(Ordering::Relaxed) {
                        tick.tick().await;
                        let Target { host, path } = &targets[target];
                        let sent = Instant::now();
                        let outcome = ingress.get(host, path).await;
                        let sample = Sample {
                            sent,
                            latency: sent.elapsed(),
                            target,
                            outcome,
                        };
                        samples
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(sample);
                        target = (target + 1) % targets.len();
                    }
                })
            })
            .collect();
        Self {
            targets,
            samples,
            stop,
            clients,
            started: Instant::now(),
        }
    }

    /// The targets, by index.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// Requests answered (or failed) so far.
    pub fn sent(&self) -> usize {
        self.samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Requests so far that satisfy `matches`.
    pub fn count(&self, matches: impl Fn(&Sample) -> bool) -> usize {
        self.samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|sample| matches(sample))
            .count()
    }

    /// Waits until `count` requests satisfying `matches` have been answered.
    pub async fn wait_for(
        &self,
        what: &str,
        count: usize,
        timeout: Duration,
        matches: impl Fn(&Sample) -> bool,
    ) {
        wait_until(what, timeout, || async {
            (self.count(&matches) >= count).then_some(())
        })
        .await;
    }

    /// Waits until `count` more requests (of any outcome) have been answered.
    pub async fn wait_for_more(&self, count: usize, timeout: Duration) {
        let target = self.sent() + count;
        let what = format!("{count} more requests of the load");
        wait_until(&what, timeout, || async {
            (self.sent() >= target).then_some(())
        })
        .await;
    }

    /// Stops the clients after their current request; returns every sample.
    pub async fn stop(self) -> Tally {
        self.stop.store(true, Ordering::Relaxed);
        for client in self.clients {
            // A client that panicked lost nothing recorded: its samples are shared.
            let _ = client.await;
        }
        let samples =
            std::mem::take(&mut *self.samples.lock().unwrap_or_else(PoisonError::into_inner));
        Tally {
            targets: self.targets,
            samples,
            elapsed: self.started.elapsed(),
        }
    }
}

/// Every request a [`Load`] sent.
#[derive(Clone, Debug)]
pub struct Tally {
    /// The targets, by index.
    pub targets: Vec<Target>,
    /// The requests, in the order they were answered.
    pub samples: Vec<Sample>,
    /// How long the load ran.
    pub elapsed: Duration,
}

impl Tally {
    /// The requests that did not get a 2xx reply.
    pub fn failures(&self) -> Vec<&Sample> {
        self.samples
            .iter()
            .filter(|sample| !sample.is_success())
            .collect()
    }

    /// Requests answered per node (`x-isolane-node`, or `-` for none).
    pub fn by_node(&self) -> BTreeMap<String, usize> {
        let mut nodes = BTreeMap::new();
        for sample in &self.samples {
            *nodes
                .entry(sample.node().unwrap_or("-").to_owned())
                .or_insert(0) += 1;
        }
        nodes
    }

    /// The latency at quantile `q` (0 to 1) of the requests sent in `window`
    /// (all when `None`).
    pub fn latency(&self, q: f64, window: Option<(Instant, Instant)>) -> Duration {
        let mut latencies: Vec<Duration> = self
            .samples
            .iter()
            .filter(|sample| {
                window.is_none_or(|(from, to)| sample.sent >= from && sample.sent < to)
            })
            .map(|sample| sample.latency)
            .collect();
        latencies.sort_unstable();
        // An index into a short list: the rounding is the quantile's definition.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((latencies.len().saturating_sub(1)) as f64 * q).round() as usize;
        latencies.get(index).copied().unwrap_or_default()
    }

    /// One line: requests, rate, failures, latency quantiles, requests per node.
    pub fn summary(&self) -> String {
        let total = self.samples.len();
        #[allow(clippy::cast_precision_loss)]
        let rate = total as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON);
        format!(
            "{total} requests in {:.1}s ({rate:.0}/s), {} failed, latency p50 {:.1} ms p99 {:.1} ms max {:.1} ms, by node {:?}",
            self.elapsed.as_secs_f64(),
            self.failures().len(),
            ms(self.latency(0.5, None)),
            ms(self.latency(0.99, None)),
            ms(self.latency(1.0, None)),
            self.by_node(),
        )
    }

    /// The failed requests, one line each (when relative to `origin`, target, outcome).
    pub fn describe_failures(&self, origin: Instant) -> String {
        self.failures()
            .iter()
            .map(|sample| {
                let when = sample.sent.saturating_duration_since(origin);
                let what = match &sample.outcome {
                    Ok(reply) => format!(
                        "{} reason={:?} node={:?} body={:?}",
                        reply.status, reply.reason, reply.node, reply.body
                    ),
                    Err(error) => error.clone(),
                };
                format!(
                    "  +{:.3}s {} {}: {what}",
                    when.as_secs_f64(),
                    self.targets[sample.target].host,
                    self.targets[sample.target].path
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A duration in milliseconds, for printing.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
