//! Whether the machine was quiet while a comparison ran: the CPU time the
//! whole machine used (`/proc/stat`) less the benchmark's own (this
//! process, its children that have ended, such as each wrk run, and the
//! servers it started). A load average cannot tell: it counts the
//! benchmark's own load too.

use std::time::Instant;

use crate::servers::process_cpu_secs;

/// Other work above this many cores, on average, and the rounds were not
/// quiet.
const QUIET_CORES: f64 = 0.1;

/// CPU counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    at: Instant,
    machine: f64,
    bench: f64,
}

impl Mark {
    /// The counters now; `servers` are the pids the benchmark started and
    /// still runs.
    pub fn now(servers: &[u32]) -> Self {
        Self {
            at: Instant::now(),
            machine: machine_busy_secs().unwrap_or(0.0),
            bench: own_secs().unwrap_or(0.0) + servers_secs(servers),
        }
    }

    /// The cores' worth of CPU that other work used since `self`, on
    /// average (0 when the counters cannot be read).
    pub fn others(&self, servers: &[u32]) -> f64 {
        let now = Self::now(servers);
        let wall = now.at.duration_since(self.at).as_secs_f64();
        if wall <= 0.0 {
            return 0.0;
        }
        ((now.machine - self.machine) - (now.bench - self.bench)).max(0.0) / wall
    }
}

/// One sentence for a section: how much other work ran during its rounds.
pub fn describe(others: f64) -> String {
    let verdict = if others < QUIET_CORES {
        "the machine was quiet"
    } else {
        "the machine was not quiet: other work shared the cores"
    };
    format!(
        "Other work used {others:.2} cores on average during these rounds (the machine's CPU \
         time from `/proc/stat` less the benchmark's, its servers' and wrk's): {verdict} \
         (quiet: under {QUIET_CORES:.2})."
    )
}

/// CPU time all cores spent busy since boot, in seconds.
fn machine_busy_secs() -> Option<f64> {
    busy_secs(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// `/proc/stat`'s first line: user, nice, system, irq, softirq and steal
/// (not idle or iowait; guest time is inside user's), in seconds.
fn busy_secs(stat: &str) -> Option<f64> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<f64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    let busy: f64 = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| fields.get(i))
        .sum();
    Some(busy / CLOCK_TICKS)
}

/// This process's CPU time and its waited-for children's, in seconds.
fn own_secs() -> Option<f64> {
    self_and_children_secs(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// `/proc/PID/stat`'s utime, stime, cutime and cstime, in seconds.
fn self_and_children_secs(stat: &str) -> Option<f64> {
    let rest = stat.rsplit_once(')')?.1;
    let ticks: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse::<f64>().unwrap_or(0.0))
        .collect();
    (ticks.len() == 4).then(|| ticks.iter().sum::<f64>() / CLOCK_TICKS)
}

fn servers_secs(servers: &[u32]) -> f64 {
    servers.iter().copied().filter_map(process_cpu_secs).sum()
}

/// `/proc`'s clock ticks per second (`USER_HZ`, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_leaves_out_idle_and_iowait() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  1000 20 300 99999 555 4 6 10 70 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n";
        let busy = busy_secs(stat).expect("a cpu line");
        assert!((busy - 13.40).abs() < 1e-9, "{busy}");
        assert_eq!(busy_secs("intr 1 2 3\n"), None);
    }

    #[test]
    fn own_time_counts_the_children_that_ended() {
        // pid (comm with ') ' inside) state … utime stime cutime cstime …
        let stat = "4242 (wrk) x) S 1 4242 4242 0 -1 4194560 10 0 0 0 150 50 700 100 20 0";
        let secs = self_and_children_secs(stat).expect("four times");
        assert!((secs - 10.0).abs() < 1e-9, "{secs}");
        assert_eq!(self_and_children_secs("1 (short) S 1 2"), None);
    }

    #[test]
    fn the_verdict_names_the_bound() {
        assert!(describe(0.02).contains("the machine was quiet"));
        assert!(describe(0.5).contains("not quiet"));
    }
}
