//! Per-request limits of a Worker, with their defaults and bounds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Limits applied to every request a Worker serves. Each has a default and
/// bounds enforced by the apiserver.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "self.cpuMs <= self.wallMs",
        "message": "limits.cpuMs must not exceed limits.wallMs",
        "fieldPath": ".cpuMs"
    }
]))]
pub struct Limits {
    /// CPU time one request may use, in milliseconds (1 to 30000, default 50).
    /// A request that uses more is terminated and answered with 503.
    #[serde(default = "Limits::default_cpu_ms")]
    #[schemars(range(min = 1, max = 30000))]
    pub cpu_ms: u32,

    /// Wall-clock time one request may take, including waiting on I/O, in
    /// milliseconds (1 to 300000, default 30000). Past it the request is answered with 504.
    #[serde(default = "Limits::default_wall_ms")]
    #[schemars(range(min = 1, max = 300000))]
    pub wall_ms: u32,

    /// All the memory the Worker's isolate may hold, in MiB (16 to 1024, default 128):
    /// its JavaScript heap plus ArrayBuffers, Blobs, bodies read whole and response
    /// bytes not yet sent. An isolate that reaches it is terminated and discarded; the
    /// request is answered with 503.
    #[serde(default = "Limits::default_memory_mib", rename = "memoryMiB")]
    #[schemars(range(min = 16, max = 1024))]
    pub memory_mib: u32,

    /// Outbound `fetch` calls one request may make (0 to 1000, default 50).
    #[serde(default = "Limits::default_subrequests")]
    #[schemars(range(min = 0, max = 1000))]
    pub subrequests: u32,
}

impl Limits {
    /// Default CPU milliseconds per request.
    pub const DEFAULT_CPU_MS: u32 = 50;
    /// Default wall-clock milliseconds per request.
    pub const DEFAULT_WALL_MS: u32 = 30_000;
    /// Default isolate heap in MiB.
    pub const DEFAULT_MEMORY_MIB: u32 = 128;
    /// Default outbound fetches per request.
    pub const DEFAULT_SUBREQUESTS: u32 = 50;

    fn default_cpu_ms() -> u32 {
        Self::DEFAULT_CPU_MS
    }
    fn default_wall_ms() -> u32 {
        Self::DEFAULT_WALL_MS
    }
    fn default_memory_mib() -> u32 {
        Self::DEFAULT_MEMORY_MIB
    }
    fn default_subrequests() -> u32 {
        Self::DEFAULT_SUBREQUESTS
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_ms: Self::DEFAULT_CPU_MS,
            wall_ms: Self::DEFAULT_WALL_MS,
            memory_mib: Self::DEFAULT_MEMORY_MIB,
            subrequests: Self::DEFAULT_SUBREQUESTS,
        }
    }
}
