//! Waking a queue's owner when another process sends to it: each send's
//! transaction notifies channel [`CHANNEL`] (PostgreSQL's `NOTIFY`,
//! delivered at commit) with the sending process's token and the queue's
//! key, `<token> <namespace>/<queue>`; a process that delivers queues
//! listens on one dedicated connection and changes the watch of the queue
//! named ([`QueueWakes::subscribe`]), which its delivery loop waits on.
//!
//! A wake-up is only a hint: the loop then looks at the queue and leases as
//! it always does (fenced by its owner epoch). A flood of sends is no flood
//! of looks: a watch keeps only that it changed, so a loop looks once
//! whatever the number of notifications since its last look. The
//! notifications of this process's own sends are skipped (its token): its
//! own watch woke it already. While the connection is down (it is made
//! again with a backoff) the loops fall back to their look every second;
//! once it is back, every queue waited on is woken once (what was sent
//! while it was down is seen at once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::AsyncMessage;

use crate::StoreError;
use crate::queue::QueueScope;

/// The channel sends notify.
pub(crate) const CHANNEL: &str = "isolane_queue";

/// The first wait before the connection is made again; it doubles up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The queues this process waits on, each with its watch.
#[derive(Debug)]
pub(crate) struct QueueWakes {
    /// This process's token (random), which its own notifications carry.
    token: String,
    waiting: Mutex<HashMap<QueueScope, watch::Sender<u64>>>,
}

impl QueueWakes {
    pub(crate) fn new() -> Self {
        let mut token = crate::queue::new_id();
        token.truncate(16);
        Self {
            token,
            waiting: Mutex::default(),
        }
    }

    /// The payload of a notification about `scope` (at most about 150
    /// bytes: a Kubernetes namespace and a queue name are at most 63 each).
    pub(crate) fn payload(&self, scope: &QueueScope) -> String {
        format!("{} {}/{}", self.token, scope.namespace, scope.queue)
    }

    /// A watch that changes when another process sends to `scope`.
    pub(crate) fn subscribe(&self, scope: &QueueScope) -> watch::Receiver<u64> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting
            .entry(scope.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Wakes the queue `payload` names, when another process sent it and
    /// this one waits on it; whether it did.
    pub(crate) fn wake(&self, payload: &str) -> bool {
        let Some((token, key)) = payload.split_once(' ') else {
            return false;
        };
        let Some((namespace, queue)) = key.split_once('/') else {
            return false;
        };
        if token == self.token {
            return false;
        }
        let scope = QueueScope::new(namespace, queue);
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match waiting.get(&scope) {
            Some(sender) if sender.receiver_count() == 0 => {
                waiting.remove(&scope);
                false
            }
            Some(sender) => {
                sender.send_modify(|n| *n = n.wrapping_add(1));
                true
            }
            None => false,
        }
    }

    /// Wakes every queue waited on (the connection was down: what was sent
    /// meanwhile was not told).
    fn wake_all(&self) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.retain(|_, sender| sender.receiver_count() > 0);
        for sender in waiting.values() {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// Listens for [`CHANNEL`]'s notifications and wakes `wakes`' queues,
/// making the connection again after a backoff when it fails, until
/// `wakes` is dropped (its store is).
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    wakes: Weak<QueueWakes>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match listen_once(&config, tls.clone(), &wakes, &mut backoff).await {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, ?backoff, "queues: the connection listening for other processes' sends failed; queues are looked at every second until it is back");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life: `Ok` once `wakes` is gone.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    wakes: &Weak<QueueWakes>,
    backoff: &mut Duration,
) -> Result<(), StoreError> {
    let (client, mut connection) = config.connect(tls).await?;
    let told = wakes.clone();
    // The connection is driven here; its notifications wake the queues.
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(note))) => match told.upgrade() {
                    Some(wakes) => {
                        wakes.wake(note.payload());
                    }
                    None => return Ok(()),
                },
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(StoreError::from(error)),
                None => return Err(StoreError::Gone),
            }
        }
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    *backoff = FIRST_BACKOFF;
    match wakes.upgrade() {
        Some(wakes) => wakes.wake_all(),
        None => return Ok(()),
    }
    let ended = driver.await.map_err(|_| StoreError::Gone)?;
    drop(client);
    ended
}

/// Starts [`listen`] on `handle` for `wakes`.
pub(crate) fn spawn(
    handle: &tokio::runtime::Handle,
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    wakes: &Arc<QueueWakes>,
) {
    handle.spawn(listen(config, tls, Arc::downgrade(wakes)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_another_process_s_sends_to_a_queue_waited_on_wake_it() {
        let (mine, theirs) = (QueueWakes::new(), QueueWakes::new());
        let jobs = QueueScope::new("team-a", "jobs");
        let mut woken = mine.subscribe(&jobs);
        assert!(!mine.wake(&mine.payload(&jobs)), "its own send");
        assert!(!mine.wake(&theirs.payload(&QueueScope::new("team-b", "jobs"))));
        assert!(!mine.wake("no key"));
        assert!(!woken.has_changed().unwrap());
        assert!(mine.wake(&theirs.payload(&jobs)));
        assert!(mine.wake(&theirs.payload(&jobs)));
        // Two sends, one change seen.
        assert!(woken.has_changed().unwrap());
        woken.mark_unchanged();
        assert!(!woken.has_changed().unwrap());
        drop(woken);
        assert!(!mine.wake(&theirs.payload(&jobs)), "nobody waits any more");
    }
}
