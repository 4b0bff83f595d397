//! [`WebSocketArgs`]: the flags of a Worker's WebSocket limits.

use std::time::Duration;

use clap::Args;

/// WebSocket limits (docs/websockets.md), the same flags for a node and
/// `isolane dev`: each charged to the Worker that holds the sockets.
#[derive(Debug, Clone, Args)]
pub struct WebSocketArgs {
    /// The largest WebSocket message either side may send, in KiB
    /// (Cloudflare's: 1024); a client's larger one closes its socket with 1009.
    #[arg(long, value_name = "KIB", default_value_t = 1024, env = "ISOLANE_WEBSOCKET_MAX_MESSAGE_KIB", value_parser = clap::value_parser!(u32).range(1..=(8 << 10)))]
    pub websocket_max_message_kib: u32,
    /// Messages buffered each way per socket; a client that lets its queue
    /// fill is dropped (1011) rather than buffered for.
    #[arg(long, value_name = "N", default_value_t = 16, env = "ISOLANE_WEBSOCKET_BUFFERED_MESSAGES", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub websocket_buffered_messages: u32,
    /// Seconds a socket may carry no message before it is closed (1001).
    #[arg(long, value_name = "SECS", default_value_t = 100, env = "ISOLANE_WEBSOCKET_IDLE_SECS", value_parser = clap::value_parser!(u32).range(1..))]
    pub websocket_idle_secs: u32,
    /// Open sockets one Worker may hold per engine thread.
    #[arg(long, value_name = "N", default_value_t = 128, env = "ISOLANE_WEBSOCKET_MAX_SOCKETS", value_parser = clap::value_parser!(u32).range(1..))]
    pub websocket_max_sockets: u32,
    /// Open sockets one client (by address) may hold of one Worker per
    /// engine thread, its share of `--websocket-max-sockets`, held once half
    /// of that budget is taken; past it that client's upgrade is answered
    /// 429 while others still get sockets.
    #[arg(long, value_name = "N", default_value_t = 16, env = "ISOLANE_WEBSOCKET_MAX_SOCKETS_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub websocket_max_sockets_per_client: u32,
}

impl WebSocketArgs {
    pub fn config(&self) -> isolane_engine::WebSocketConfig {
        let to_usize = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        isolane_engine::WebSocketConfig {
            max_message_bytes: to_usize(self.websocket_max_message_kib).saturating_mul(1 << 10),
            buffered_messages: to_usize(self.websocket_buffered_messages),
            idle_timeout: Duration::from_secs(u64::from(self.websocket_idle_secs)),
            max_sockets_per_worker: to_usize(self.websocket_max_sockets),
            max_sockets_per_client: to_usize(self.websocket_max_sockets_per_client),
            max_sockets_per_object: isolane_engine::DEFAULT_MAX_SOCKETS_PER_OBJECT,
        }
    }
}
