//! The runtime's JavaScript (`js/NN_*.js`) embedded as `RUNTIME_JS`, and
//! `ISOLANE_ENGINE_FINGERPRINT` for the snapshot's disk cache: the shared
//! build step of the engine's crates (`crates/jsbuild`).

fn main() {
    isolane_jsbuild::build("ISOLANE_ENGINE_FINGERPRINT", Some("99_finalize.js"));
}
