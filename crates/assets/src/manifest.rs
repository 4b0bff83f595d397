//! The manifest: every asset of a Worker by its path, with its content hash,
//! size and content type. Built in memory from what the bundle holds; the
//! bytes themselves stay with the server (it reads them by hash).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

/// The largest asset Cloudflare takes: 25 MiB per file
/// (developers.cloudflare.com/workers/static-assets/ "Limits").
pub const MAX_ASSET_BYTES: u64 = 25 * 1024 * 1024;

/// The most assets one Worker version may have: Cloudflare's documented
/// 20,000 files per version (same page); Isolane takes more, up to this.
pub const MAX_ASSETS: usize = 100_000;

/// Files of the assets directory that configure serving and are never
/// served themselves (developers.cloudflare.com/workers/static-assets/headers/
/// and .../redirects/: "This file will not itself be served as a static asset").
pub const RESERVED: &[&str] = &["/_headers", "/_redirects"];

/// Why an asset was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("asset path {path:?} must start with '/' and have no empty, '.' or '..' segment")]
    BadPath { path: String },
    #[error("asset {path} is {size} bytes, over the {MAX_ASSET_BYTES}-byte limit")]
    TooLarge { path: String, size: u64 },
    #[error("more than {MAX_ASSETS} assets")]
    TooMany,
    #[error("{path} configures asset serving and is not served as an asset")]
    Reserved { path: String },
    #[error("content hash {hash:?} of {path} is not lowercase hexadecimal")]
    BadHash { path: String, hash: String },
}

impl ManifestError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::BadPath { .. } => "bad_path",
            Self::TooLarge { .. } => "too_large",
            Self::TooMany => "too_many",
            Self::Reserved { .. } => "reserved",
            Self::BadHash { .. } => "bad_hash",
        }
    }
}

/// One asset: what a server needs to answer for it without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// Lowercase hex of the content's SHA-256: the key the bytes are stored
    /// under and the `ETag`'s value.
    pub hash: String,
    pub size: u64,
    /// The `Content-Type` sent with it.
    pub content_type: String,
}

/// The assets of one Worker version, by decoded path (`/about/index.html`).
#[derive(Debug, Clone, Default)]
pub struct Manifest {
    assets: BTreeMap<String, Asset>,
}

impl Manifest {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an asset from its bytes: hashes them and guesses its type.
    pub fn insert_bytes(&mut self, path: &str, bytes: &[u8]) -> Result<(), ManifestError> {
        let hash = hex::encode(Sha256::digest(bytes));
        self.insert(path, &hash, bytes.len() as u64)
    }

    /// Adds an asset whose hash the caller already has (a bundle's index).
    pub fn insert(&mut self, path: &str, hash: &str, size: u64) -> Result<(), ManifestError> {
        check_path(path)?;
        if !hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            || hash.is_empty()
        {
            return Err(ManifestError::BadHash {
                path: path.to_owned(),
                hash: hash.to_owned(),
            });
        }
        if size > MAX_ASSET_BYTES {
            return Err(ManifestError::TooLarge {
                path: path.to_owned(),
                size,
            });
        }
        if self.assets.len() >= MAX_ASSETS && !self.assets.contains_key(path) {
            return Err(ManifestError::TooMany);
        }
        let asset = Asset {
            hash: hash.to_owned(),
            size,
            content_type: content_type(path),
        };
        self.assets.insert(path.to_owned(), asset);
        Ok(())
    }

    /// The asset at exactly this decoded path.
    pub fn get(&self, path: &str) -> Option<&Asset> {
        self.assets.get(path)
    }

    /// Every asset by its path, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Asset)> {
        self.assets
            .iter()
            .map(|(path, asset)| (path.as_str(), asset))
    }

    pub fn len(&self) -> usize {
        self.assets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.assets.is_empty()
    }
}

fn check_path(path: &str) -> Result<(), ManifestError> {
    if RESERVED.contains(&path) {
        return Err(ManifestError::Reserved {
            path: path.to_owned(),
        });
    }
    let bad = !path.starts_with('/')
        || path.len() == 1
        || path[1..]
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        return Err(ManifestError::BadPath {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// The `Content-Type` of a path, from its extension (`mime_guess`'s table),
/// `application/octet-stream` when unknown; text types get
/// `; charset=utf-8` (docs/assets.md "Content types").
pub fn content_type(path: &str) -> String {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    if mime.type_() == mime_guess::mime::TEXT && mime.get_param("charset").is_none() {
        format!("{}; charset=utf-8", mime.essence_str())
    } else {
        mime.essence_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asset_is_hashed_sized_and_typed() {
        let mut m = Manifest::new();
        m.insert_bytes("/index.html", b"<p>hi</p>").unwrap();
        let a = m.get("/index.html").unwrap();
        assert_eq!(a.size, 9);
        assert_eq!(a.hash.len(), 64);
        // Source: developers.cloudflare.com/workers/static-assets/headers/
        // ("Wrangler automatically determines the MIME type of the file,
        // based on its extension").
        assert_eq!(a.content_type, "text/html; charset=utf-8");
    }

    #[test]
    fn types_come_from_the_extension() {
        assert_eq!(content_type("/a.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("/a.png"), "image/png");
        assert_eq!(content_type("/a.json"), "application/json");
        assert_eq!(content_type("/a.wasm"), "application/wasm");
        assert_eq!(content_type("/a.unknownext"), "application/octet-stream");
        assert_eq!(content_type("/LICENSE"), "application/octet-stream");
    }

    #[test]
    fn the_same_bytes_have_the_same_hash() {
        let mut m = Manifest::new();
        m.insert_bytes("/a.txt", b"x").unwrap();
        m.insert_bytes("/b.txt", b"x").unwrap();
        assert_eq!(m.get("/a.txt").unwrap().hash, m.get("/b.txt").unwrap().hash);
    }

    #[test]
    fn bad_paths_and_hashes_are_refused() {
        let mut m = Manifest::new();
        for path in ["a.txt", "/", "//a", "/a/../b", "/a/./b", "/a/"] {
            assert_eq!(
                m.insert(path, "ab", 1).unwrap_err().kind(),
                "bad_path",
                "{path}"
            );
        }
        assert_eq!(m.insert("/a", "XY", 1).unwrap_err().kind(), "bad_hash");
        assert_eq!(m.insert("/a", "", 1).unwrap_err().kind(), "bad_hash");
    }

    #[test]
    fn config_files_are_not_assets() {
        let mut m = Manifest::new();
        assert_eq!(
            m.insert_bytes("/_headers", b"").unwrap_err().kind(),
            "reserved"
        );
        assert_eq!(
            m.insert_bytes("/_redirects", b"").unwrap_err().kind(),
            "reserved"
        );
    }

    #[test]
    fn more_than_max_assets_are_refused_and_a_replaced_one_is_no_more() {
        let mut m = Manifest::new();
        for i in 0..MAX_ASSETS {
            m.insert(&format!("/f/{i}.txt"), "ab", 0).unwrap();
        }
        assert_eq!(m.len(), MAX_ASSETS, "the limit itself is taken");
        m.insert("/f/0.txt", "cd", 1).unwrap();
        assert_eq!(m.get("/f/0.txt").unwrap().hash, "cd");
        let err = m.insert("/one-more.txt", "ab", 0).unwrap_err();
        assert_eq!(err, ManifestError::TooMany);
        assert_eq!(err.kind(), "too_many");
        assert_eq!(err.to_string(), "more than 100000 assets");
        assert_eq!(m.len(), MAX_ASSETS);
        assert!(m.get("/one-more.txt").is_none());
    }

    #[test]
    fn files_over_25_mib_are_refused() {
        // Source: developers.cloudflare.com/workers/static-assets/ (25 MiB per file).
        let mut m = Manifest::new();
        assert!(m.insert("/big.bin", "ab", MAX_ASSET_BYTES).is_ok());
        let err = m
            .insert("/bigger.bin", "ab", MAX_ASSET_BYTES + 1)
            .unwrap_err();
        assert_eq!(err.kind(), "too_large");
        assert!(err.to_string().contains("/bigger.bin"));
    }
}
