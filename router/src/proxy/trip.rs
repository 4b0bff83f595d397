//! One request's trip through the fleet: the call the Worker sees, each
//! attempt on a node (retries on another when the first fails before an
//! answer), and the response the client gets.

use super::*;
use crate::prewarm::PrewarmRequest;
use tracing::Instrument as _;

/// One request's trip through the fleet.
pub(super) struct Trip<'p> {
    pub(super) proxy: &'p Proxy,
    pub(super) backend: Arc<Backend>,
    /// The revision this request runs (the split chose it).
    pub(super) revision: Revision,
    /// Whether the request counts in the request metrics (a prewarm does not).
    pub(super) record: bool,
    pub(super) request_id: RequestId,
    /// The client, for a client's request (`None` for the router's own).
    pub(super) client: Option<&'p Client>,
    pub(super) host: String,
    pub(super) started: Instant,
    pub(super) deadline: tokio::time::Instant,
    /// The request's trace when it is sampled (the latency's exemplar).
    pub(super) trace: Option<isolane_telemetry::TraceId>,
    /// The client's body was not read whole before it went to a node (it
    /// streams): an error page then closes the connection.
    pub(super) unread_body: AtomicBool,
}

/// A failed request: the node it failed on (or [`NO_NODE`]) and why.
pub(super) type Failure = (String, Error);

/// A call to a node over gRPC, answering with its head and body.
type Exchange<'a> = futures::future::BoxFuture<'a, Result<(Answer, Source), Error>>;

impl Trip<'_> {
    pub(super) async fn run<B>(
        &self,
        request: Request<B>,
    ) -> Result<Response<ResponseBody>, Failure>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let config = &self.proxy.inner.config;
        let (parts, body) = request.into_parts();
        // A WebSocket handshake the front end will complete if the Worker
        // accepts.
        let upgrade = parts
            .extensions
            .get::<crate::sockets::ClientUpgrade>()
            .is_some();
        // Built once; only a retry builds it again.
        let mut first_call = Some(self.call(&parts, upgrade)?);
        let mut body =
            tokio::time::timeout_at(self.deadline, Outgoing::prepare(body, config.replay_limit))
                .await
                .map_err(|_| self.deadline_failure(NO_NODE))?
                .map_err(|source| (NO_NODE.to_owned(), Error::RequestBody { source }))?;
        self.unread_body
            .store(!body.is_replayable(), Ordering::Relaxed);
        let losses = &self.proxy.inner.losses;
        let worker_id = &self.backend.worker_id;
        let wait_until = self
            .deadline
            .min(tokio::time::Instant::from_std(self.started) + config.node_wait);
        if losses.quarantined_now(worker_id).is_some() {
            self.unquarantined(wait_until)
                .await
                .map_err(|retry_after| self.quarantined(NO_NODE.to_owned(), retry_after))?;
        }
        let mut fleet = self.proxy.fleet();
        let mut tried = self.untried(&parts, &fleet);
        let mut attempts = 0u32;
        // The error that made the request look for another node, if any.
        let mut refused: Option<Failure> = None;
        loop {
            let placed = self.place(&fleet, &tried, attempts);
            let Some(pick) = placed else {
                // No candidate left: wait (bounded) for the fleet to change,
                // as while the only node pod is replaced.
                if self.proxy.fleet_changed(&fleet, wait_until).await {
                    fleet = self.proxy.fleet();
                    tried.clear();
                    continue;
                }
                return Err(refused.unwrap_or_else(|| {
                    (
                        NO_NODE.to_owned(),
                        Error::NoLiveNode {
                            worker_id: self.backend.worker_id.clone(),
                        },
                    )
                }));
            };
            if let Some((node, error)) = &refused {
                debug!(
                    request.id = %self.request_id, worker.id = %self.backend.worker_id,
                    %node, %error, "retrying on another node"
                );
                self.proxy.inner.metrics.retry(error.kind());
            }
            attempts += 1;
            let call = match first_call.take() {
                Some(call) => call,
                None => self.call(&parts, upgrade)?,
            };
            let node_span = span::attempt(
                &fleet.nodes()[pick.index].member.name,
                pick.thread,
                attempts,
            );
            let attempt = self.attempt(&fleet, pick.index, pick.thread, call, &mut body, upgrade);
            let result = if node_span.is_disabled() {
                attempt.await
            } else {
                attempt.instrument(node_span).await
            };
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let node = fleet.nodes()[pick.index].member.name.clone();
            if error.ejects_node() {
                fleet.eject(pick.index);
                warn!(%node, %error, "node unreachable; skipping it for new requests briefly");
            }
            if error.lost_with_node() {
                // Lost with its node: the second node lost under the same
                // Worker quarantines it (it may be what kills them). A node
                // that refused the connection never had the request.
                if let Verdict::Quarantined(retry_after) = losses.lost(
                    worker_id,
                    &node,
                    Instant::now(),
                    isolane_membership::crash::unix_ms(),
                ) {
                    warn!(
                        worker.id = %worker_id, %node, quarantine_s = retry_after.as_secs(),
                        "a second node was lost under this worker's requests; refusing it for a while"
                    );
                    self.proxy.inner.metrics.upstream_error(error.kind());
                    // Not replayed unless the nodes' crash records clear
                    // the Worker first (then it was not what killed them).
                    let replayable = attempts < MAX_ATTEMPTS
                        && error.retry_elsewhere()
                        && body.is_replayable()
                        && parts.method.is_idempotent();
                    if !replayable {
                        return Err(self.quarantined(node, retry_after));
                    }
                    if let Err(retry_after) = self.unquarantined(wait_until).await {
                        return Err(self.quarantined(node, retry_after));
                    }
                    tried.push(pick.index);
                    refused = Some((node, error));
                    continue;
                }
            }
            // Another node (or the same one after the fleet changed) may
            // serve it when this one never started it and the body was kept.
            // One that may have run on a node lost under it is replayed only
            // when its method is idempotent (RFC 9110, 9.2.2): a POST that
            // ran would run twice (a counter counted twice), so it answers
            // 502 instead, as nginx's `proxy_next_upstream` does by default.
            let retry = attempts < MAX_ATTEMPTS
                && error.retry_elsewhere()
                && body.is_replayable()
                && (!error.lost_with_node() || parts.method.is_idempotent());
            if !retry {
                return Err((node, error));
            }
            self.proxy.inner.metrics.upstream_error(error.kind());
            tried.push(pick.index);
            refused = Some((node, error));
        }
    }

    /// The nodes to leave out from the start: none, but a standby prewarm
    /// leaves out the Worker's first choice (it goes where a spill would).
    fn untried(&self, parts: &http::request::Parts, fleet: &Fleet) -> Vec<usize> {
        let standby = parts.extensions.get::<PrewarmRequest>();
        let worker_id = &self.backend.worker_id;
        (standby.is_some_and(|p| p.standby))
            .then(|| fleet.first_choice(worker_id))
            .flatten()
            .into_iter()
            .collect()
    }

    /// The node and thread for attempt `attempts + 1`, leaving out `tried`.
    /// A counted request's first placement while others of its Worker are
    /// in flight may send the Worker's standby prewarm (`prewarming.rs`).
    fn place(&self, fleet: &Fleet, tried: &[usize], attempts: u32) -> Option<crate::fleet::Pick> {
        let _placing = tracing::trace_span!("router.place", attempt = attempts + 1).entered();
        let load = self.backend.slot.load();
        let others = load.in_flight();
        let worker_id = &self.backend.worker_id;
        let factor = self.proxy.inner.config.load_factor;
        let pick = fleet
            .pick(worker_id, load, factor, tried)
            .map(|pick| self.proxy.here_if_spread(worker_id, load, pick));
        if attempts == 0 && self.record && pick.is_some() {
            let revision = self.revision.as_ref();
            self.proxy
                .standby_if_first_busy(worker_id, revision, load, others, fleet);
        }
        pick
    }

    /// `Ok` once the Worker is not quarantined: at once, or when a crash
    /// record lifts its quarantine before `until` (a suspect's request
    /// waits for the records while one may still come: `losses.rs`);
    /// otherwise how long the quarantine has left.
    async fn unquarantined(&self, until: tokio::time::Instant) -> Result<(), Duration> {
        let losses = &self.proxy.inner.losses;
        let worker_id = &self.backend.worker_id;
        loop {
            // Subscribed before checking, so a record in between wakes it.
            let mut changes = losses.subscribe();
            let Some(retry_after) = losses.quarantined_now(worker_id) else {
                return Ok(());
            };
            if !losses.awaiting_records(worker_id) || tokio::time::Instant::now() >= until {
                return Err(retry_after);
            }
            match tokio::time::timeout_at(until, changes.changed()).await {
                Ok(Ok(())) => {}
                // Timed out: the check above answers with what is left.
                Err(_) => {}
                Ok(Err(_)) => return Err(retry_after),
            }
        }
    }

    /// The failure of a request refused because its Worker is quarantined.
    fn quarantined(&self, node: String, retry_after: Duration) -> Failure {
        (
            node,
            Error::Quarantined {
                worker_id: self.backend.worker_id.clone(),
                retry_after,
            },
        )
    }

    /// What the node is asked to run for the client's request `parts`.
    fn call(&self, parts: &http::request::Parts, upgrade: bool) -> Result<Call, Failure> {
        let context = HeadContext {
            host: &self.host,
            worker_id: &self.backend.worker_id,
            revision: &self.revision,
            request_id: &self.request_id,
            client: self.client,
        };
        let mut call = call_for(parts, &context).map_err(|invalid| {
            (
                NO_NODE.to_owned(),
                Error::InvalidHost { host: invalid.host },
            )
        })?;
        // A cron tick (`run_tick`, or the test URL of a proxy that has
        // one): never from a client's own request in a cluster.
        call.scheduled = parts.extensions.get::<ScheduledTick>().cloned();
        let prewarm = parts.extensions.get::<PrewarmRequest>();
        call.prewarm = prewarm.is_some();
        call.standby = prewarm.is_some_and(|p| p.standby);
        // The Worker sees a WebSocket handshake asked for (hop-by-hop
        // headers are otherwise never forwarded).
        if upgrade {
            let headers = call.request.headers_mut();
            headers.insert(http::header::UPGRADE, HeaderValue::from_static("websocket"));
            headers.insert(
                http::header::CONNECTION,
                HeaderValue::from_static("Upgrade"),
            );
        }
        Ok(call)
    }

    /// One call to one node: `Err` before the response head is decided.
    async fn attempt<B>(
        &self,
        fleet: &Fleet,
        index: usize,
        thread: u32,
        mut call: Call,
        body: &mut Outgoing<B>,
        upgrade: bool,
    ) -> Result<Response<ResponseBody>, Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let config = &self.proxy.inner.config;
        let fleet_node = &fleet.nodes()[index];
        let node = fleet_node.member.name.as_str();
        call.thread = thread;
        // The client's side of a WebSocket the call may open (gRPC only: a
        // node in this process hands its socket over as it is).
        let mut opening = None;
        let (in_flight, exchange) = match &self.proxy.inner.local {
            // A node in this process gets no deadline of its own: the
            // `timeout_at` below and the body's deadline bound it, and
            // dropping its future cancels it, so it arms no timer.
            Some(local) => {
                let in_flight = fleet.start(index, self.backend.slot.load());
                let body = body.body();
                (
                    in_flight,
                    Either::Left(upstream::call_local(local.as_ref(), call, body, node)),
                )
            }
            None => {
                let (in_flight, exchange) =
                    self.over_grpc(fleet, index, call, body, upgrade, &mut opening)?;
                (in_flight, Either::Right(exchange))
            }
        };
        let (mut answer, mut source) = tokio::time::timeout_at(self.deadline, exchange)
            .await
            .map_err(|_| Error::Deadline {
                timeout: config.request_timeout,
            })??;
        if let Some(opening) = opening
            && answer.status == StatusCode::SWITCHING_PROTOCOLS
            && answer.outcome == Outcome::Ok
            && let Source::Frames(frames) = source
        {
            // The call now carries the socket; the 101 has no body.
            answer.upgrade = Some(opening.open(frames, config.websocket));
            source = Source::Local(Box::pin(
                http_body_util::Empty::new().map_err(|never| match never {}),
            ));
        }
        self.respond(node, answer, source, in_flight)
    }

    /// A call to node `index` over gRPC, started: its place in the node's
    /// load and the exchange that answers it. A request whose body the
    /// router holds whole, empty or at most `calls::WHOLE_REQUEST_LIMIT`
    /// bytes, goes on the node's shared `Calls` stream with it; a longer or
    /// streamed body, or a WebSocket handshake (whose client side is put in
    /// `opening`), opens its own `Execute` call.
    fn over_grpc<'f, B>(
        &self,
        fleet: &'f Fleet,
        index: usize,
        mut call: Call,
        body: &mut Outgoing<B>,
        upgrade: bool,
        opening: &mut Option<socket::Opening>,
    ) -> Result<(crate::fleet::InFlight, Exchange<'f>), Error>
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let config = &self.proxy.inner.config;
        let fleet_node = &fleet.nodes()[index];
        let node = fleet_node.member.name.as_str();
        let remaining = self
            .deadline
            .saturating_duration_since(tokio::time::Instant::now());
        call.deadline_ms = remaining.as_millis().max(1) as u64;
        let thread = call.thread;
        let endpoint = fleet_node
            .member
            .endpoint_for(thread)
            .ok_or_else(|| Error::NoEndpoint {
                node: node.to_owned(),
                thread,
            })?;
        if let Some(whole) = body.whole_for(&call).filter(|_| !upgrade) {
            // Nothing to stream (no body, or one held whole): one message
            // on the node's shared `Calls` stream, not a call of its own.
            let calls = channels::call_stream(fleet, fleet_node, endpoint, &config.channel)?;
            let in_flight = fleet.start(index, self.backend.slot.load());
            let trace = span::trace_fields();
            let exchange = upstream::call_on_stream(calls, call.encode(), trace, whole, node);
            return Ok((in_flight, Box::pin(exchange)));
        }
        let (channel, origin) = channels::channel(fleet, fleet_node, endpoint, &config.channel)?;
        let in_flight = fleet.start(index, self.backend.slot.load());
        // No `grpc-timeout` header: the node bounds the request by
        // `deadline_ms` and this side by `timeout_at`, and the header would
        // cost the node a second timer (and a self-wakeup of its runtime)
        // per request. A WebSocket's socket frames follow its end marker.
        let mut frames = body.frames(call.encode());
        if upgrade {
            let (with_socket, socket) = socket::request_frames(frames);
            frames = with_socket;
            *opening = Some(socket);
        }
        let mut request = tonic::Request::new(frames);
        span::inject_metadata(&mut request);
        let client = RuntimeClient::with_origin(channel, origin);
        // Boxed: tonic's call future is several times the size of the
        // in-process one, and unboxed it would size (and be moved with)
        // every request's future.
        Ok((
            in_flight,
            Box::pin(upstream::call_grpc(client, request, node)),
        ))
    }

    /// The client's response for a node's head; a refusal (the engine's
    /// typed outcome) is an error, retried elsewhere or rendered by
    /// `Proxy::answer_error`, as every error page is.
    fn respond(
        &self,
        node: &str,
        answer: Answer,
        source: Source,
        in_flight: crate::fleet::InFlight,
    ) -> Result<Response<ResponseBody>, Error> {
        if answer.outcome != Outcome::Ok {
            return Err(Error::Refused {
                node: node.to_owned(),
                outcome: answer.outcome,
                detail: answer.reason,
                retry_after: answer
                    .retry_after_ms
                    .map(|ms| Duration::from_millis(u64::from(ms))),
            });
        }
        let status = answer.status;
        let metrics = Arc::clone(&self.proxy.inner.metrics);
        let node_header = in_flight.node_header().cloned();
        let completion = if self.record {
            Completion::counted(
                in_flight,
                Arc::clone(&metrics),
                Arc::clone(&self.backend),
                Revision::clone(&self.revision),
                status,
                self.started,
                self.trace,
            )
        } else {
            Completion::uncounted(in_flight)
        };
        let body = UpstreamBody::new(
            source,
            self.deadline,
            answer.body_length,
            Arc::clone(&metrics),
            completion,
        );
        let mut response = Response::new(body.boxed_unsync());
        *response.status_mut() = status;
        if let Some(upgrade) = answer.upgrade {
            response.extensions_mut().insert(upgrade);
            response
                .extensions_mut()
                .insert(metrics.socket_series(self.backend.served(&self.revision)));
        }
        let mut headers = answer.headers;
        strip_hop_by_hop(&mut headers);
        // Room for the three added below at once, rather than grown into.
        headers.reserve(3);
        *response.headers_mut() = headers;
        let headers = response.headers_mut();
        if let Some(value) = node_header {
            headers.insert(name::NODE, value);
        }
        if let Ok(value) = HeaderValue::from_str(&self.revision) {
            headers.insert(name::REVISION, value);
        }
        if let Some(id) = self.request_id.header() {
            headers.insert(name::REQUEST_ID, id.clone());
        }
        Ok(response)
    }

    fn deadline_failure(&self, node: &str) -> Failure {
        (
            node.to_owned(),
            Error::Deadline {
                timeout: self.proxy.inner.config.request_timeout,
            },
        )
    }
}
