//! Per-request limits of a Worker, with their defaults and bounds.

use std::ops::RangeInclusive;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Limits applied to every request a Worker serves. Each has a default and
/// bounds enforced by the apiserver.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// CPU time one request may use, in milliseconds (1 to 30000, default 30000,
    /// Cloudflare's default). Each node caps it (its --max-cpu-ms, 5000 by default),
    /// because a turn of JavaScript cannot be preempted. A request that uses more is
    /// stopped and answered with 503; the Worker's other requests go on. Past wallMs
    /// the request ends anyway.
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
    pub const DEFAULT_CPU_MS: u32 = 30_000;
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

/// A limit outside the bounds the CRD's schema allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("{name} must be between {min} and {max}, not {value}")]
    OutOfRange {
        name: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
}

impl Limits {
    /// Bounds of `cpuMs` (the schema's).
    pub const CPU_MS: RangeInclusive<u32> = 1..=30_000;
    /// Bounds of `wallMs`.
    pub const WALL_MS: RangeInclusive<u32> = 1..=300_000;
    /// Bounds of `memoryMiB`.
    pub const MEMORY_MIB: RangeInclusive<u32> = 16..=1024;
    /// Bounds of `subrequests`.
    pub const SUBREQUESTS: RangeInclusive<u32> = 0..=1000;

    /// [`Limits::cpu_ms`] as a duration.
    pub fn cpu(&self) -> Duration {
        Duration::from_millis(u64::from(self.cpu_ms))
    }

    /// [`Limits::wall_ms`] as a duration.
    pub fn wall(&self) -> Duration {
        Duration::from_millis(u64::from(self.wall_ms))
    }

    /// [`Limits::memory_mib`] in bytes.
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(u64::from(self.memory_mib) << 20).unwrap_or(usize::MAX)
    }

    /// Checks the limits as the apiserver does for a Worker (for limits that
    /// come from elsewhere, such as `isolane dev`'s flags).
    pub fn validate(&self) -> Result<(), LimitError> {
        let fields = [
            ("cpuMs", self.cpu_ms, Self::CPU_MS),
            ("wallMs", self.wall_ms, Self::WALL_MS),
            ("memoryMiB", self.memory_mib, Self::MEMORY_MIB),
            ("subrequests", self.subrequests, Self::SUBREQUESTS),
        ];
        for (name, value, range) in fields {
            if !range.contains(&value) {
                return Err(LimitError::OutOfRange {
                    name,
                    value,
                    min: *range.start(),
                    max: *range.end(),
                });
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds `validate` checks are the ones the schema gives the apiserver.
    #[test]
    fn validate_checks_the_schema_s_bounds() {
        let schema = serde_json::to_value(schemars::schema_for!(Limits)).unwrap();
        for (field, range) in [
            ("cpuMs", Limits::CPU_MS),
            ("wallMs", Limits::WALL_MS),
            ("memoryMiB", Limits::MEMORY_MIB),
            ("subrequests", Limits::SUBREQUESTS),
        ] {
            let property = &schema["properties"][field];
            assert_eq!(property["minimum"], *range.start(), "{field}");
            assert_eq!(property["maximum"], *range.end(), "{field}");
        }
        assert_eq!(Limits::default().validate(), Ok(()));
        let too_much = Limits {
            memory_mib: 2048,
            ..Limits::default()
        };
        assert!(matches!(
            too_much.validate(),
            Err(LimitError::OutOfRange {
                name: "memoryMiB",
                ..
            })
        ));
        // A CPU limit above the wall limit is allowed: the request ends at
        // whichever it reaches first (the default CPU limit is the wall's).
        let over_wall = Limits {
            cpu_ms: 200,
            wall_ms: 100,
            ..Limits::default()
        };
        assert_eq!(over_wall.validate(), Ok(()));
    }
}
