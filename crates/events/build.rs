//! The events' runtime JavaScript (`js/NN_*.js`) embedded as `RUNTIME_JS`,
//! and `ISOLANE_EVENTS_FINGERPRINT` for the snapshot's disk cache key: the
//! shared build step of the engine's crates (`crates/jsbuild`).

fn main() {
    isolane_jsbuild::build("ISOLANE_EVENTS_FINGERPRINT", None);
}
