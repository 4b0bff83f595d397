//! The process's peak resident memory while a hostile request runs (the
//! `memory` binary's tests only), and [`alone`], which runs those tests one
//! at a time: each measures the process, which another's attack, running
//! at the same time, would move (seen: a replace's +50 MiB measured as
//! +172 beside two other attacks).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::{Mutex, MutexGuard};

/// Samples this process's RSS every millisecond until dropped: the peak
/// while a hostile request runs, not only after it.
pub struct PeakRss {
    peak: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    pub fn start() -> Self {
        let peak = Arc::new(std::sync::atomic::AtomicU64::new(rss_mib()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (peak, stop) = (peak.clone(), stop.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_mib(), Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        });
        Self {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

/// Held for the whole of each test of the `memory` binary: one at a time
/// (tokio's lock, held across awaits; a test that fails releases it).
pub async fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::const_new(());
    ONE.lock().await
}

/// Resident memory of this process, in MiB (Linux).
pub fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap()
        .to_owned();
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}
