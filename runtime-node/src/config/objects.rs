//! [`ObjectArgs`]: the flags of Durable Objects' life in memory, the same
//! for a node and `isolane dev`.

use std::time::Duration;

use clap::Args;

/// How long Durable Objects stay in memory (docs/durable-objects.md).
#[derive(Debug, Clone, Args)]
pub struct ObjectArgs {
    /// Seconds a Durable Object may sit idle (no event, no storage
    /// operation, no accepted non-hibernatable WebSocket) before it is
    /// dropped from memory; the next call makes it again from its storage,
    /// and its hibernatable WebSockets stay open meanwhile. Cloudflare's is
    /// about 70 s; an object goes within twice this.
    #[arg(long, value_name = "SECS", default_value_t = 70, env = "ISOLANE_OBJECT_IDLE_SECS", value_parser = clap::value_parser!(u32).range(1..))]
    pub object_idle_secs: u32,
}

impl ObjectArgs {
    /// `EngineConfig::object_idle`.
    pub fn idle(&self) -> Duration {
        Duration::from_secs(u64::from(self.object_idle_secs))
    }
}
