//! The idle watchdog: a connection with no request in flight for the idle
//! timeout is closed gracefully (HTTP/2: GOAWAY, then the close), whether or
//! not its client answers keep-alive pings. Pings only tell that the peer is
//! alive; an attacker's client answers them and otherwise sends nothing, and
//! each such connection would hold a socket and its buffers for ever.
//!
//! A request is in flight from the moment its head reaches the service until
//! its response body has been sent or dropped ([`Tracked`] counts it, in
//! [`Activity`]); [`Activity::idle`] resolves once none has been for the
//! timeout. HTTP/1 connections go through it too, where it closes what
//! hyper's header-read timeout would close anyway.
//!
//! An HTTP/2 CONNECT stream (a WebSocket over HTTP/2, RFC 8441) outlives
//! its response: such a request carries a [`Tunnel`], and the connection
//! counts as busy for as long as the front end keeps it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body, Frame, SizeHint};
use hyper::service::Service;
use pin_project_lite::pin_project;
use tokio::time::MissedTickBehavior;

/// How many checks one idle timeout is split into: a connection is closed
/// between one and 1 + 1/`CHECKS` idle timeouts after its last request ended.
const CHECKS: u32 = 4;

/// The shortest time between two checks.
const MIN_CHECK: Duration = Duration::from_millis(1);

/// The requests of one connection: how many are in flight, and how many
/// have ended (so a request that came and went between two checks is seen).
#[derive(Debug, Default)]
pub(super) struct Activity {
    in_flight: AtomicUsize,
    ended: AtomicU64,
    /// The server is shutting down: HTTP/1 answers say `connection: close`.
    closing: AtomicBool,
}

impl Activity {
    /// Resolves once no request has been in flight for `timeout` (checked
    /// `CHECKS` times per timeout, so within a fraction more).
    pub(super) async fn idle(&self, timeout: Duration) {
        let mut checks = tokio::time::interval((timeout / CHECKS).max(MIN_CHECK));
        checks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // The first tick is now.
        checks.tick().await;
        let mut seen = self.ended.load(Ordering::Relaxed);
        let mut quiet = 0;
        while quiet < CHECKS {
            checks.tick().await;
            // Relaxed: a request that starts just as this decides is
            // still served (a graceful close lets it finish).
            let ended = self.ended.load(Ordering::Relaxed);
            let none_now = self.in_flight.load(Ordering::Relaxed) == 0;
            // No request in flight now and none ended since the last check:
            // none was in flight at any time in between.
            quiet = if none_now && ended == seen {
                quiet + 1
            } else {
                0
            };
            seen = ended;
        }
    }
}

impl Activity {
    /// Resolves once a request is in flight or one has ended since the call,
    /// or after `within`: when a connection should be closed without racing
    /// its client's next request (see `accept.rs`, shutdown).
    pub(super) async fn next_request(&self, within: Duration) {
        self.closing.store(true, Ordering::Relaxed);
        let seen = self.ended.load(Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + within;
        let mut checks = tokio::time::interval(NEXT_REQUEST_CHECK);
        checks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let started = self.in_flight.load(Ordering::Relaxed) > 0;
            if started || self.ended.load(Ordering::Relaxed) != seen {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            checks.tick().await;
        }
    }
}

/// How often a closing connection looks for its next request.
const NEXT_REQUEST_CHECK: Duration = Duration::from_millis(5);

/// One request in flight, until dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl InFlight {
    fn start(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.ended.fetch_add(1, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A CONNECT request's stream, on the request's extensions: its connection
/// is not idle while this (or a clone) lives. A front end that goes on
/// using the stream after the response (an HTTP/2 WebSocket) keeps it
/// until it is done.
#[derive(Debug, Clone)]
pub struct Tunnel {
    _in_flight: Arc<InFlight>,
}

// === impl Tracked ===

/// A connection's service, counting its requests in [`Activity`].
#[derive(Debug)]
pub(super) struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub(super) fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S, B, R> Service<Request<R>> for Tracked<S>
where
    S: Service<Request<R>, Response = Response<B>>,
{
    type Response = Response<TrackedBody<B>>;
    type Error = S::Error;
    type Future = TrackedFuture<S::Future>;

    fn call(&self, mut request: Request<R>) -> Self::Future {
        if request.method() == http::Method::CONNECT {
            let tunnel = Tunnel {
                _in_flight: Arc::new(InFlight::start(&self.activity)),
            };
            request.extensions_mut().insert(tunnel);
        }
        TrackedFuture {
            in_flight: Some(InFlight::start(&self.activity)),
            http1: request.version() < http::Version::HTTP_2,
            inner: self.inner.call(request),
        }
    }
}

pin_project! {
    /// A response on its way: the request is in flight until its body is
    /// done (or this is dropped, the client having gone).
    pub(super) struct TrackedFuture<F> {
        #[pin]
        inner: F,
        in_flight: Option<InFlight>,
        http1: bool,
    }
}

impl<F, B, E> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TrackedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = std::task::ready!(this.inner.poll(cx))?;
        let in_flight = this.in_flight.take();
        // Shutting down: the client must not send another request on this
        // HTTP/1 connection (it would race the close).
        if *this.http1
            && in_flight
                .as_ref()
                .is_some_and(|f| f.0.closing.load(Ordering::Relaxed))
        {
            response.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
        }
        Poll::Ready(Ok(response.map(|inner| TrackedBody { inner, in_flight })))
    }
}

pin_project! {
    /// A response body; its request is in flight until it ends or is dropped.
    pub(super) struct TrackedBody<B> {
        #[pin]
        inner: B,
        in_flight: Option<InFlight>,
    }
}

impl<B: Body> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        if frame.is_none() {
            this.in_flight.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_waits_for_the_last_request_to_end() {
        let activity = Arc::new(Activity::default());
        let timeout = Duration::from_secs(8);
        let request = InFlight::start(&activity);
        let start = tokio::time::Instant::now();
        let idle = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.idle(timeout).await }
        });
        // In flight for three timeouts: not idle.
        tokio::time::sleep(timeout * 3).await;
        assert!(!idle.is_finished());
        drop(request);
        idle.await.unwrap();
        let after_end = start.elapsed() - timeout * 3;
        assert!(
            after_end >= timeout && after_end <= timeout + timeout / CHECKS * 2,
            "{after_end:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_between_two_checks_is_activity() {
        let activity = Arc::new(Activity::default());
        let timeout = Duration::from_secs(8);
        let start = tokio::time::Instant::now();
        let idle = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.idle(timeout).await }
        });
        // Short requests, each between two checks, every half timeout.
        for _ in 0..6 {
            tokio::time::sleep(timeout / 2).await;
            drop(InFlight::start(&activity));
        }
        assert!(!idle.is_finished());
        idle.await.unwrap();
        assert!(start.elapsed() >= timeout * 4, "{:?}", start.elapsed());
    }

    #[tokio::test]
    async fn a_connect_stream_is_in_flight_while_its_tunnel_lives() {
        use http_body_util::BodyExt as _;
        let activity = Arc::new(Activity::default());
        let kept = Arc::new(std::sync::Mutex::new(None));
        let service = Tracked::new(
            hyper::service::service_fn({
                let kept = Arc::clone(&kept);
                move |mut request: Request<http_body_util::Empty<bytes::Bytes>>| {
                    *kept.lock().unwrap() = request.extensions_mut().remove::<Tunnel>();
                    async {
                        Ok::<_, std::convert::Infallible>(Response::new(http_body_util::Empty::<
                            bytes::Bytes,
                        >::new(
                        )))
                    }
                }
            }),
            Arc::clone(&activity),
        );
        let in_flight = || activity.in_flight.load(Ordering::Relaxed);
        for (method, tunnel) in [(http::Method::GET, false), (http::Method::CONNECT, true)] {
            let request = Request::builder()
                .method(method)
                .body(http_body_util::Empty::new())
                .unwrap();
            let response = service.call(request).await.unwrap();
            response.into_body().collect().await.unwrap();
            // The response is done: only a CONNECT's stream is still busy.
            assert_eq!(kept.lock().unwrap().is_some(), tunnel);
            assert_eq!(in_flight(), usize::from(tunnel));
        }
        kept.lock().unwrap().take();
        assert_eq!(in_flight(), 0);
    }
}
