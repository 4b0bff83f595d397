//! What a queue batch's delivery said of each message: the JSON the
//! engine's answer to a `Work::QueueBatch` carries (`js/35_queue.js` in
//! `isolane-bindings` writes it), read into [`QueueOutcome`], and the
//! [`Verdict`] on each message (workerd's rules).

use std::collections::{HashMap, HashSet};

use isolane_storage::QueueMessage;
use serde::Deserialize;

/// What the handler said of its batch, as JavaScript answers it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueOutcome {
    /// `batch.ackAll()` was called.
    #[serde(default)]
    pub ack_all: bool,
    /// `batch.retryAll()` was called, with this delay when it gave one.
    #[serde(default)]
    pub retry_all: bool,
    #[serde(default)]
    pub retry_all_delay: Option<f64>,
    /// Messages `ack()`ed.
    #[serde(default)]
    pub acks: Vec<String>,
    /// Messages `retry()`ed, each with its delay when it gave one.
    #[serde(default)]
    pub retries: Vec<(String, Option<f64>)>,
    /// Whether the handler threw (or its promise rejected).
    #[serde(default)]
    pub threw: bool,
}

/// What becomes of one message after its delivery.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Ack,
    /// Retried, after this many seconds when the handler gave a delay.
    Retry(Option<f64>),
}

impl QueueOutcome {
    /// The outcome of a delivery that answered none (a limit, a crash):
    /// every message retried.
    pub fn failed() -> Self {
        Self {
            threw: true,
            ..Self::default()
        }
    }

    /// The outcome in `body`, the answer's JSON; `None` when it is not one.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }

    /// What becomes of message `id`: explicit calls win (`ackAll`/`retryAll`
    /// over a message's own, as workerd); otherwise acked when the handler
    /// resolved, retried when it threw.
    fn verdict(
        &self,
        id: &str,
        acks: &HashSet<&str>,
        retries: &HashMap<&str, Option<f64>>,
    ) -> Verdict {
        if self.ack_all {
            return Verdict::Ack;
        }
        if self.retry_all {
            return Verdict::Retry(self.retry_all_delay);
        }
        if acks.contains(id) {
            return Verdict::Ack;
        }
        if let Some(delay) = retries.get(id) {
            return Verdict::Retry(*delay);
        }
        if self.threw {
            Verdict::Retry(None)
        } else {
            Verdict::Ack
        }
    }

    /// Each message of `batch` with its verdict.
    pub fn verdicts<'b>(&self, batch: &'b [QueueMessage]) -> Vec<(&'b QueueMessage, Verdict)> {
        let acks: HashSet<&str> = self.acks.iter().map(String::as_str).collect();
        let retries: HashMap<&str, Option<f64>> = self
            .retries
            .iter()
            .map(|(id, delay)| (id.as_str(), *delay))
            .collect();
        batch
            .iter()
            .map(|message| (message, self.verdict(&message.id, &acks, &retries)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str) -> QueueMessage {
        QueueMessage {
            id: id.into(),
            timestamp_ms: 0,
            body: Vec::new(),
            content_type: "text".into(),
            attempts: 1,
        }
    }

    #[test]
    fn explicit_calls_win_then_how_the_handler_ended() {
        let batch = [message("a"), message("b"), message("c")];
        let outcome =
            QueueOutcome::parse(br#"{"acks":["a"],"retries":[["b",5]],"threw":true}"#).unwrap();
        let verdicts: Vec<_> = outcome
            .verdicts(&batch)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Ack,
                Verdict::Retry(Some(5.0)),
                Verdict::Retry(None)
            ]
        );
        let resolved = QueueOutcome::parse(br#"{"retries":[["b",null]]}"#).unwrap();
        let verdicts: Vec<_> = resolved
            .verdicts(&batch)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(verdicts, [Verdict::Ack, Verdict::Retry(None), Verdict::Ack]);
        let all =
            QueueOutcome::parse(br#"{"retryAll":true,"retryAllDelay":2,"acks":["a"]}"#).unwrap();
        assert!(
            all.verdicts(&batch)
                .iter()
                .all(|(_, v)| *v == Verdict::Retry(Some(2.0)))
        );
        let failed = QueueOutcome::failed();
        assert!(
            failed
                .verdicts(&batch)
                .iter()
                .all(|(_, v)| *v == Verdict::Retry(None))
        );
        assert_eq!(QueueOutcome::parse(b"not json"), None);
    }
}
