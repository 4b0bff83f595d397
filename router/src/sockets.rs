//! What the router keeps of WebSockets outside the front end that pumps
//! them (`websocket.rs`): the limits a client's socket is held to, the set
//! of open sockets a shutdown closes, and the mark on a request the front
//! end will upgrade. The proxy holds these; the front end uses the proxy.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::debug;

/// The limits the router holds a client's socket to, before its Worker's
/// node holds the Worker to its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLimits {
    /// The largest message a client may send (1009 past it).
    pub max_message_bytes: usize,
    /// How long a write to the client may wait (a client that never reads).
    pub write_timeout: Duration,
    /// How long, once the router stops, open sockets keep working before
    /// they close with 1012 (`--websocket-drain-grace`).
    pub drain_grace: Duration,
}

impl Default for SocketLimits {
    /// Cloudflare's 1 MiB message, the engine's 100 s idle timeout; at a
    /// stop, sockets close at once (`isolane dev`, tests).
    fn default() -> Self {
        Self {
            max_message_bytes: 1 << 20,
            write_timeout: Duration::from_secs(100),
            drain_grace: Duration::ZERO,
        }
    }
}

/// The router's open sockets, so a shutdown can close them (1012) and wait
/// for their close frames to go out.
#[derive(Debug, Clone, Default)]
pub struct Sockets {
    pub(crate) closing: CancellationToken,
    pub(crate) tasks: TaskTracker,
}

impl Sockets {
    /// Lets open sockets work on for up to `drain_grace` (or until none is
    /// left), then closes the rest with 1012 and waits, up to `grace`, for
    /// their pumps to end. Sockets opened after the grace are closed at once.
    pub async fn close_all(&self, drain_grace: Duration, grace: Duration) {
        self.tasks.close();
        if tokio::time::timeout(drain_grace, self.tasks.wait())
            .await
            .is_ok()
        {
            return;
        }
        debug!(
            open = self.tasks.len(),
            "WebSocket grace over: closing with 1012"
        );
        self.closing.cancel();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            debug!(
                open = self.tasks.len(),
                "sockets still closing after the grace period"
            );
        }
    }
}

/// On a request the front end will upgrade if its Worker accepts: the call
/// keeps its `Upgrade: websocket` header for the Worker to see.
#[derive(Debug, Clone, Copy)]
pub struct ClientUpgrade;
