//! Generates Rust from the `.proto` files, with the protoc that the
//! `protoc-bin-vendored` crate ships (no system install). Shared by the
//! `protogen` example, which writes `src/gen/`, and `tests/generated.rs`,
//! which fails if `src/gen/` differs from a fresh generation.

use std::io;
use std::path::{Path, PathBuf};

/// The `.proto` files, relative to [`proto_root`].
pub const PROTOS: &[&str] = &["isolane/runtime/v1/runtime.proto"];

/// The command that regenerates the committed code.
pub const REGENERATE: &str = "cargo run -p isolane-proto --example protogen";

/// The `proto/` folder: the include root of the `.proto` files.
pub fn proto_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the generated code is committed.
pub fn committed_dir() -> PathBuf {
    proto_root().join("src").join("gen")
}

/// Generates the Rust code for [`PROTOS`] into `out_dir`.
pub fn generate(out_dir: &Path) -> io::Result<()> {
    let protoc = protoc_bin_vendored::protoc_bin_path().map_err(io::Error::other)?;
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc);
    // Bodies and header values as `bytes::Bytes`: decoding slices the
    // received buffer instead of copying each chunk.
    config.bytes(["."]);
    let root = proto_root();
    let protos: Vec<PathBuf> = PROTOS.iter().map(|p| root.join(p)).collect();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .emit_rerun_if_changed(false)
        .out_dir(out_dir)
        .compile_with_config(config, &protos, &[root])
}
