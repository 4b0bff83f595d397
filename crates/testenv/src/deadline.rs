//! Waiting on a condition with a deadline: the one poll loop of the tests.
//!
//! Tests never sleep and hope. They probe a condition until it holds, and fail
//! naming what they waited for once the deadline passes. A probe answers with a
//! [`Probe`]: `bool`, `Option<T>` (`Some` when done) or `Result<T, E>` (`Err`
//! says why not yet; the last one goes into the failure message).
//!
//! Probes start 5 ms apart and back off to 50 ms, so an in-process condition is
//! seen at once and a probe of an apiserver or a process costs little. The async
//! form sleeps on tokio's clock, so it also works with paused time.
//!
//! ```
//! # async fn example() {
//! use std::sync::atomic::{AtomicBool, Ordering};
//! use std::time::Duration;
//!
//! let ready = AtomicBool::new(true);
//! isolane_testenv::wait_until("the flag", Duration::from_secs(5), || async {
//!     ready.load(Ordering::Relaxed)
//! })
//! .await;
//! # }
//! ```

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// The first pause between two probes.
const FIRST_INTERVAL: Duration = Duration::from_millis(5);
/// The longest pause between two probes.
const MAX_INTERVAL: Duration = Duration::from_millis(50);

/// What a probe answers: done (with a value), or not yet (perhaps saying why).
pub trait Probe {
    /// What the wait returns once the condition holds.
    type Value;
    /// `Ok` when done; `Err` with what the probe saw when not yet.
    fn settle(self) -> Result<Self::Value, Option<String>>;
}

impl Probe for bool {
    type Value = ();
    fn settle(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Probe for Option<T> {
    type Value = T;
    fn settle(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Probe for Result<T, E> {
    type Value = T;
    fn settle(self) -> Result<T, Option<String>> {
        self.map_err(|error| Some(error.to_string()))
    }
}

/// Probes until `probe` settles and returns its value; panics after `within`,
/// naming `what` (and what the last probe said, if it said anything).
pub async fn wait_until<P, F, Fut>(what: &str, within: Duration, mut probe: F) -> P::Value
where
    P: Probe,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    let deadline = tokio::time::Instant::now() + within;
    let mut interval = FIRST_INTERVAL;
    loop {
        let last = match probe().await.settle() {
            Ok(value) => return value,
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            timed_out(what, within, last);
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(MAX_INTERVAL);
    }
}

/// [`wait_until`] for a thread without a runtime (a `Drop`, a plain `#[test]`).
pub fn wait_until_blocking<P: Probe>(
    what: &str,
    within: Duration,
    probe: impl FnMut() -> P,
) -> P::Value {
    poll_blocking(within, probe).unwrap_or_else(|last| timed_out(what, within, last))
}

/// Probes until `probe` settles; `Err` with what the last probe said once
/// `within` has passed.
pub(crate) fn poll_blocking<P: Probe>(
    within: Duration,
    mut probe: impl FnMut() -> P,
) -> Result<P::Value, Option<String>> {
    let deadline = std::time::Instant::now() + within;
    let mut interval = FIRST_INTERVAL;
    loop {
        let last = match probe().settle() {
            Ok(value) => return Ok(value),
            Err(last) => last,
        };
        if std::time::Instant::now() >= deadline {
            return Err(last);
        }
        std::thread::sleep(interval);
        interval = (interval * 2).min(MAX_INTERVAL);
    }
}

fn timed_out(what: &str, within: Duration, last: Option<String>) -> ! {
    match last {
        Some(last) => panic!("timed out after {within:?} waiting for {what} (last: {last})"),
        None => panic!("timed out after {within:?} waiting for {what}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn returns_the_value_once_the_probe_settles() {
        let mut probes = 0;
        let value = wait_until("the third probe", Duration::from_secs(1), || {
            probes += 1;
            let value = (probes == 3).then_some(probes * 10);
            async move { value }
        })
        .await;
        assert_eq!(value, 30);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "timed out after 1s waiting for a miracle (last: still 7)")]
    async fn fails_at_the_deadline_with_what_the_last_probe_said() {
        wait_until("a miracle", Duration::from_secs(1), || async {
            Err::<(), _>("still 7")
        })
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn backs_off_to_the_longest_interval() {
        let probes = Arc::new(AtomicU32::new(0));
        let counted = probes.clone();
        let result = tokio::spawn(async move {
            wait_until("never", Duration::from_secs(1), || async {
                counted.fetch_add(1, Ordering::Relaxed);
                false
            })
            .await;
        })
        .await;
        assert!(result.is_err(), "a condition that never holds fails");
        // At 0, 5, 15, 35 and 75 ms, then 50 ms apart until 1025 ms.
        assert_eq!(probes.load(Ordering::Relaxed), 5 + 19);
    }

    #[test]
    fn blocking_probes_settle_or_time_out() {
        let mut probes = 0;
        wait_until_blocking("the second probe", Duration::from_secs(5), || {
            probes += 1;
            probes == 2
        });
        assert_eq!(probes, 2);
        let last = poll_blocking(Duration::from_millis(20), || Err::<(), _>("no"));
        assert_eq!(last, Err(Some("no".to_owned())));
    }
}
