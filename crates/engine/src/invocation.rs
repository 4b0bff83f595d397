//! One invocation's [`TailEvent`], built only when someone tails its Worker:
//! [`Watch::begin`] when the request starts (one relaxed load when nobody
//! tails anything), [`Watch::end`] when it is done, with the console lines
//! and exceptions the `console` unit kept for it (`host/console.rs`).

use std::sync::Arc;
use std::time::Duration;

use isolane_worker::{Exception, TailEvent};

use crate::bundle::WorkerBundle;
use crate::host::HostState;
use crate::host::console::{Logs, epoch_ms};
use crate::outcome::{ExecuteError, Outcome};
use crate::thread_ctx::ThreadCtx;

/// A tailed invocation in flight: what its event needs of its start.
pub(crate) struct Watch {
    started_ms: u64,
    request_id: Arc<str>,
    method: String,
    url: String,
}

impl Watch {
    /// `Some` when someone tails `bundle`'s Worker now: its console lines
    /// are kept from here on.
    pub(crate) fn begin(
        ctx: &ThreadCtx,
        bundle: &WorkerBundle,
        parts: &http::request::Parts,
        request_id: &Arc<str>,
        host: Option<(&HostState, u32)>,
    ) -> Option<Box<Watch>> {
        if !ctx.shared.tail.watching(&bundle.id) {
            return None;
        }
        if let Some((host, req)) = host
            && let Some(logs) = host.state::<Logs>()
        {
            logs.watch(req);
        }
        // Boxed: a request that nobody tails carries one null pointer.
        Some(Box::new(Watch {
            started_ms: epoch_ms(),
            request_id: request_id.clone(),
            method: parts.method.to_string(),
            url: parts
                .uri
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
        }))
    }

    /// The invocation is done: its event goes to the tails.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn end(
        self,
        ctx: &ThreadCtx,
        bundle: &WorkerBundle,
        host: &HostState,
        req: u32,
        outcome: Outcome,
        status: u16,
        wall: Duration,
        cpu: Duration,
    ) {
        let collected = host
            .state::<Logs>()
            .map(|l| l.take(req))
            .unwrap_or_default();
        if collected.dropped > 0 {
            tracing::debug!(worker.id = %bundle.id, thread = ctx.index, lines = collected.dropped, "console lines over the log budget dropped");
        }
        let mut event = self.event(ctx, bundle, outcome, status, wall, cpu);
        event.logs = collected.lines;
        event.exceptions = collected.exceptions;
        event.dropped_lines = collected.dropped;
        ctx.shared.tail.publish(event);
    }

    /// The invocation failed before its Worker ran (its script did not
    /// load): the event carries the error as its exception.
    pub(crate) fn failed(
        self,
        ctx: &ThreadCtx,
        bundle: &WorkerBundle,
        error: &ExecuteError,
        wall: Duration,
    ) {
        let mut event = self.event(
            ctx,
            bundle,
            error.outcome(),
            error.status().as_u16(),
            wall,
            Duration::ZERO,
        );
        if let ExecuteError::Script { message } | ExecuteError::Exception { message } = error {
            event
                .exceptions
                .push(Exception::from_message(message, "", epoch_ms()));
        }
        ctx.shared.tail.publish(event);
    }

    fn event(
        self,
        ctx: &ThreadCtx,
        bundle: &WorkerBundle,
        outcome: Outcome,
        status: u16,
        wall: Duration,
        cpu: Duration,
    ) -> TailEvent {
        TailEvent {
            worker: bundle.id.clone(),
            namespace: bundle.namespace().to_owned(),
            revision: bundle.revision.clone(),
            node: String::new(),
            thread: ctx.index,
            request_id: self.request_id.to_string(),
            outcome: outcome.label().to_owned(),
            status,
            method: self.method,
            url: self.url,
            timestamp_ms: self.started_ms,
            wall_ms: wall.as_secs_f64() * 1000.0,
            cpu_ms: cpu.as_secs_f64() * 1000.0,
            logs: Vec::new(),
            exceptions: Vec::new(),
            dropped_lines: 0,
        }
    }
}
