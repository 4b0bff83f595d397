//! `ISOLANE_NODEJS_FINGERPRINT` for the snapshot's disk cache key (this
//! crate's units are part of every snapshot that includes them): the
//! shared build step of the engine's crates (`crates/jsbuild`).

fn main() {
    isolane_jsbuild::fingerprint_only("ISOLANE_NODEJS_FINGERPRINT");
}
