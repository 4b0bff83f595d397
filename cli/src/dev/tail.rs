//! `isolane dev` prints its Workers' invocations — one line each, then
//! their console lines and exceptions — on stdout, as `isolane tail` does
//! (one formatter: [`TailFormat`]). The node's own log goes to stderr.
//!
//! A terminal that cannot keep up loses events (the engine drops them for
//! this reader and a note says how many); requests never wait on it.

use isolane_engine::{Engine, TailError, TailItem};
use isolane_worker::TailFormat;
use tokio::io::AsyncWriteExt;

/// Starts printing every Worker's invocations, until the process ends.
pub(super) fn spawn(engine: &Engine, format: TailFormat) -> Result<(), TailError> {
    let mut tail = engine.tail(None)?;
    tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(item) = tail.next().await {
            let text = match item {
                TailItem::Event(event) => format.render(&event),
                TailItem::Dropped(n) => format.dropped(n),
            };
            if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
    });
    Ok(())
}
