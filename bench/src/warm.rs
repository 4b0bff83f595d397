//! Warm throughput and latency over HTTP: several servers, the same script,
//! wrk at a few concurrencies, interleaved round by round.

use std::time::Duration;

use crate::report::{Table, Target};
use crate::servers::Server;
use crate::stats::{fmt_rate, fmt_ratio, fmt_us, median, ratio};
use crate::wrk::{self, Load, LoadSpec};

/// How hard and how long to load.
#[derive(Debug, Clone)]
pub struct Plan {
    pub connections: Vec<usize>,
    pub rounds: usize,
    pub duration: Duration,
    pub warmup: Duration,
    /// POSTs with a body of this many bytes instead of GETs (0: GETs).
    pub post_bytes: usize,
    /// The CPUs the load generator runs on (`taskset -c`), or any.
    pub load_cpus: Option<String>,
}

/// `loads[server][concurrency]`: one [`Load`] per round.
#[derive(Debug)]
pub struct Measured {
    pub names: Vec<&'static str>,
    pub connections: Vec<usize>,
    pub loads: Vec<Vec<Vec<Load>>>,
}

/// Medians over rounds of one server at one concurrency.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors: u64,
    pub cpu_us: f64,
}

/// Runs the plan: each round visits every concurrency and, for each, every
/// server (the server order rotates each round so none is always first).
pub async fn measure(servers: &[&Server], plan: &Plan) -> anyhow::Result<Measured> {
    for server in servers {
        let spec = spec(server, 16, plan.warmup, plan);
        wrk::run(&spec).await?;
    }
    let mut loads = vec![vec![Vec::new(); plan.connections.len()]; servers.len()];
    for round in 0..plan.rounds {
        for (ci, &connections) in plan.connections.iter().enumerate() {
            for k in 0..servers.len() {
                let si = (k + round) % servers.len();
                let cpu_before = servers[si].cpu_secs();
                let mut load =
                    wrk::run(&spec(servers[si], connections, plan.duration, plan)).await?;
                if let (Some(before), Some(after)) = (cpu_before, servers[si].cpu_secs()) {
                    load.cpu_us = (after - before) * 1e6 / load.requests.max(1) as f64;
                }
                eprintln!(
                    "round {round} c={connections} {}: {:.0} req/s p50 {:.0} µs p99 {:.0} µs errors {} cpu {:.1} µs/req",
                    servers[si].name, load.rps, load.p50_us, load.p99_us, load.errors, load.cpu_us
                );
                loads[si][ci].push(load);
            }
        }
    }
    Ok(Measured {
        names: servers.iter().map(|s| s.name).collect(),
        connections: plan.connections.clone(),
        loads,
    })
}

fn spec(server: &Server, connections: usize, duration: Duration, plan: &Plan) -> LoadSpec {
    LoadSpec {
        url: server.url(),
        host: server.host.clone(),
        connections,
        duration,
        post_bytes: plan.post_bytes,
        cpus: plan.load_cpus.clone(),
        headers: Vec::new(),
    }
}

impl Measured {
    pub fn summary(&self, server: usize, conn: usize) -> Summary {
        let loads = &self.loads[server][conn];
        let pick = |f: fn(&Load) -> f64| median(&loads.iter().map(f).collect::<Vec<_>>());
        Summary {
            rps: pick(|l| l.rps),
            p50_us: pick(|l| l.p50_us),
            p99_us: pick(|l| l.p99_us),
            errors: loads.iter().map(|l| l.errors).sum(),
            cpu_us: pick(|l| l.cpu_us),
        }
    }

    /// Median over rounds of the per-round throughput ratio `a / b` (both
    /// sides of a round ran back to back).
    pub fn round_ratio(&self, a: usize, b: usize, conn: usize) -> f64 {
        let ratios: Vec<f64> = self.loads[a][conn]
            .iter()
            .zip(&self.loads[b][conn])
            .map(|(x, y)| ratio(x.rps, y.rps))
            .collect();
        median(&ratios)
    }

    /// One row per (concurrency, server), with throughput ratios against
    /// each server named in `against`.
    pub fn table(&self, against: &[usize]) -> String {
        let mut columns = vec![
            ">connections",
            "server",
            ">req/s (median)",
            ">p50",
            ">p99",
            ">errors",
            ">CPU µs/req",
        ];
        let ratio_names: Vec<String> = against
            .iter()
            .map(|&b| format!(">req/s ÷ {}", self.names[b]))
            .collect();
        columns.extend(ratio_names.iter().map(String::as_str));
        let mut table = Table::new(&columns);
        for (ci, connections) in self.connections.iter().enumerate() {
            for (si, name) in self.names.iter().enumerate() {
                let s = self.summary(si, ci);
                let mut row = vec![
                    connections.to_string(),
                    (*name).to_owned(),
                    fmt_rate(s.rps),
                    fmt_us(s.p50_us),
                    fmt_us(s.p99_us),
                    s.errors.to_string(),
                    if s.cpu_us > 0.0 {
                        format!("{:.1}", s.cpu_us)
                    } else {
                        "–".to_owned()
                    },
                ];
                for &b in against {
                    row.push(if b == si {
                        "1.00×".to_owned()
                    } else {
                        fmt_ratio(self.round_ratio(si, b, ci))
                    });
                }
                table.row(row);
            }
        }
        table.render()
    }

    /// A per-core target: `a`'s requests per CPU second ≥ `factor` × `b`'s
    /// at each concurrency of `at` (the CPU of each server's processes,
    /// median over rounds): throughput per core used, whatever the cores.
    pub fn per_core_target(
        &self,
        goal: &str,
        (a, b): (usize, usize),
        factor: f64,
        at: &[usize],
    ) -> Target {
        let ratios: Vec<(usize, f64)> = self
            .connections
            .iter()
            .enumerate()
            .filter(|(_, c)| at.contains(c))
            .map(|(ci, &c)| {
                let (x, y) = (self.summary(a, ci), self.summary(b, ci));
                (
                    c,
                    if x.cpu_us > 0.0 {
                        y.cpu_us / x.cpu_us
                    } else {
                        0.0
                    },
                )
            })
            .collect();
        let met = !ratios.is_empty() && ratios.iter().all(|(_, r)| *r >= factor);
        let measured = ratios
            .iter()
            .map(|(c, r)| format!("{} at {c}", fmt_ratio(*r)))
            .collect::<Vec<_>>()
            .join(", ");
        Target::new(goal, measured, met)
    }

    /// A throughput target `a ≥ factor × b` at every concurrency.
    pub fn ratio_target(&self, goal: &str, a: usize, b: usize, factor: f64) -> Target {
        let ratios: Vec<(usize, f64)> = self
            .connections
            .iter()
            .enumerate()
            .map(|(ci, &c)| (c, self.round_ratio(a, b, ci)))
            .collect();
        let met = ratios.iter().all(|(_, r)| *r >= factor);
        let worst = ratios.iter().map(|(_, r)| *r).fold(f64::INFINITY, f64::min);
        let mut measured = ratios
            .iter()
            .map(|(c, r)| format!("{} at {c}", fmt_ratio(*r)))
            .collect::<Vec<_>>()
            .join(", ");
        if !met {
            measured.push_str(&format!(
                "; worst is {:.0}% short of {factor}×",
                (1.0 - worst / factor) * 100.0
            ));
        }
        Target::new(goal, measured, met)
    }
}
