//! How large a bundle artifact may be.

/// Bounds on a bundle artifact, checked before and while it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactLimits {
    /// The layer as pulled (tar+gzip).
    pub compressed_bytes: u64,
    /// The layer's tar once decompressed: bounds a decompression bomb.
    pub uncompressed_bytes: u64,
    /// The assets layer as pulled (tar+gzip).
    pub assets_compressed_bytes: u64,
    /// The assets layer's tar once decompressed.
    pub assets_uncompressed_bytes: u64,
}

impl ArtifactLimits {
    /// 16 MiB compressed: above Cloudflare's paid limit of 10 MB.
    pub const COMPRESSED_BYTES: u64 = 16 << 20;
    /// 64 MiB uncompressed.
    pub const UNCOMPRESSED_BYTES: u64 = 64 << 20;
    /// Static assets, compressed: assets are mostly compressed already
    /// (images, fonts), so close to what they are uncompressed.
    pub const ASSETS_COMPRESSED_BYTES: u64 = 256 << 20;
    /// Static assets, uncompressed: ten of Cloudflare's 25 MiB files.
    pub const ASSETS_UNCOMPRESSED_BYTES: u64 = 256 << 20;
    /// A manifest or config blob (a few hundred bytes in practice).
    pub const METADATA_BYTES: u64 = 1 << 20;
}

impl Default for ArtifactLimits {
    fn default() -> Self {
        Self {
            compressed_bytes: Self::COMPRESSED_BYTES,
            uncompressed_bytes: Self::UNCOMPRESSED_BYTES,
            assets_compressed_bytes: Self::ASSETS_COMPRESSED_BYTES,
            assets_uncompressed_bytes: Self::ASSETS_UNCOMPRESSED_BYTES,
        }
    }
}
