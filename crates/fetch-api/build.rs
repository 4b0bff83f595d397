//! The Fetch Standard's classes (`js/NN_*.js`) embedded as `RUNTIME_JS`, and
//! `ISOLANE_FETCH_API_FINGERPRINT` for the snapshot's disk cache key: the
//! shared build step of the engine's crates (`crates/jsbuild`).

fn main() {
    isolane_jsbuild::build("ISOLANE_FETCH_API_FINGERPRINT", None);
}
