//! The streams' runtime JavaScript (`js/08_streams/`, one file of joined
//! parts) embedded as `RUNTIME_JS`, and `ISOLANE_STREAMS_FINGERPRINT` for
//! the snapshot's disk cache key: the shared build step of the engine's
//! crates (`crates/jsbuild`).

fn main() {
    isolane_jsbuild::build("ISOLANE_STREAMS_FINGERPRINT", None);
}
