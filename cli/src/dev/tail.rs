//! `isolane dev` prints its Workers' invocations — one line each, then
//! their console lines and exceptions — on stdout, as `isolane tail` does
//! (one formatter: [`TailFormat`]). The node's own log goes to stderr.
//!
//! A terminal that cannot keep up loses events (the engine drops them for
//! this reader and a note says how many); requests never wait on it.

use std::io::Write as _;

use futures::FutureExt as _;
use isolane_engine::{Engine, TailError, TailItem, TailSubscription};
use isolane_worker::TailFormat;

/// Events written to stdout in one write, at most: what arrived while the
/// last write was going on goes out together.
const BATCH: usize = 256;

/// Starts printing every Worker's invocations, until the process ends, on
/// a thread of its own: an event wakes that thread alone, which writes it
/// and sleeps (an async writer on the control runtime took five context
/// switches an event, through the blocking pool), and a stalled terminal
/// stalls nothing else.
pub(super) fn spawn(engine: &Engine, format: TailFormat) -> Result<(), TailError> {
    let mut tail = engine.tail(None)?;
    let printing = std::thread::Builder::new()
        .name("isolane-dev-tail".to_owned())
        .spawn(move || {
            while let Some(item) = futures::executor::block_on(tail.next()) {
                let mut text = render(format, item);
                drain(&mut tail, format, &mut text);
                let mut out = std::io::stdout().lock();
                if out.write_all(text.as_bytes()).is_err() || out.flush().is_err() {
                    return;
                }
            }
        });
    if let Err(error) = printing {
        tracing::warn!(%error, "cannot start the tail's thread; invocations are not printed");
    }
    Ok(())
}

/// Appends to `text` what is already waiting in `tail` (up to [`BATCH`]).
fn drain(tail: &mut TailSubscription, format: TailFormat, text: &mut String) {
    for _ in 1..BATCH {
        match tail.next().now_or_never() {
            Some(Some(item)) => text.push_str(&render(format, item)),
            _ => return,
        }
    }
}

fn render(format: TailFormat, item: TailItem) -> String {
    match item {
        TailItem::Event(event) => format.render(&event),
        TailItem::Dropped(n) => format.dropped(n),
    }
}
