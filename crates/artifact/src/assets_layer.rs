//! The artifact's assets layer: a Worker's static assets folder as a
//! gzip-compressed tar, each file at its path without the leading `/`
//! (`_headers` and `_redirects` included), in the order given. Read back
//! within [`ArtifactLimits::assets_uncompressed_bytes`] whatever the gzip
//! headers claim, regular files only; the files become a
//! [`isolane_assets::Site`] where the node serves them, which checks each
//! asset's size and their count.

use std::io::Read;

use bytes::Bytes;
use flate2::read::GzDecoder;
use std::sync::Arc;

use isolane_assets::{AssetFiles, Settings, Site};

use crate::archive::{Bounded, tar_gz};
use crate::{ArtifactLimits, Error};

/// The assets layer's media type.
pub const ASSETS_LAYER_MEDIA_TYPE: &str = "application/vnd.isolane.bundle.assets.v1.tar+gzip";

/// The layer of `assets` (deterministic).
pub fn pack(assets: &AssetFiles) -> Vec<u8> {
    tar_gz(
        assets
            .files
            .iter()
            .map(|(path, bytes)| (path.trim_start_matches('/'), bytes.as_ref())),
    )
}

/// The files of an assets layer (verified against its digest already),
/// with the config's `settings`, within `limits`.
pub fn unpack(
    reference: &str,
    settings: Settings,
    layer: &[u8],
    limits: &ArtifactLimits,
) -> Result<AssetFiles, Error> {
    let mut archive = tar::Archive::new(Bounded {
        inner: GzDecoder::new(layer),
        left: limits.assets_uncompressed_bytes,
        exceeded: false,
    });
    let read = read_files(reference, &mut archive);
    if archive.into_inner().exceeded {
        return Err(Error::TooLarge {
            reference: reference.to_owned(),
            what: "the uncompressed assets layer",
            actual: limits.assets_uncompressed_bytes + 1,
            limit: limits.assets_uncompressed_bytes,
        });
    }
    Ok(AssetFiles {
        settings,
        files: read?,
        has_worker: true,
    })
}

/// The site of an artifact's assets for a Worker version of these
/// compatibility settings: what the node serves, and what the operator
/// builds once to refuse a bundle whose settings, `_headers` or
/// `_redirects` are bad, or whose assets are over Cloudflare's limits.
pub fn site(
    reference: &str,
    files: &AssetFiles,
    (date, flags): (Option<&str>, &[String]),
) -> Result<Arc<Site>, Error> {
    let assets = |why: String| Error::malformed(reference, format!("its assets: {why}"));
    let config = files
        .config(date, flags)
        .map_err(|error| assets(error.to_string()))?;
    Site::new(files, config).map_err(|error| assets(error.to_string()))
}

fn read_files<R: Read>(
    reference: &str,
    archive: &mut tar::Archive<R>,
) -> Result<Vec<(String, Bytes)>, Error> {
    let broken = |error: std::io::Error| {
        Error::malformed(
            reference,
            format!("its assets layer is not a tar+gzip: {error}"),
        )
    };
    let mut files = Vec::new();
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        let path = entry.path().map_err(broken)?;
        let name = path.to_str().map(str::to_owned).ok_or_else(|| {
            Error::malformed(reference, "a file name in its assets layer is not UTF-8")
        })?;
        if !kind.is_file() {
            return Err(Error::malformed(
                reference,
                format!("{name:?} in its assets layer is not a regular file"),
            ));
        }
        let mut content = Vec::new();
        entry.read_to_end(&mut content).map_err(broken)?;
        files.push((format!("/{name}"), Bytes::from(content)));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assets() -> AssetFiles {
        AssetFiles {
            settings: Settings {
                not_found_handling: Some("single-page-application".into()),
                ..Settings::default()
            },
            files: vec![
                ("/index.html".into(), Bytes::from_static(b"<h1>hi</h1>")),
                ("/a/b.css".into(), Bytes::from_static(b"b{}")),
                ("/_headers".into(), Bytes::from_static(b"/*\n  X-A: 1\n")),
            ],
            has_worker: true,
        }
    }

    #[test]
    fn packing_is_deterministic_and_unpacks_to_the_same_files() {
        let layer = pack(&assets());
        assert_eq!(pack(&assets()), layer);
        let limits = ArtifactLimits::default();
        let settings = assets().settings;
        assert_eq!(unpack("r", settings, &layer, &limits).unwrap(), assets());
    }

    #[test]
    fn a_layer_over_its_uncompressed_limit_is_too_large_and_garbage_is_malformed() {
        let mut big = assets();
        big.files
            .push(("/zeros.bin".into(), Bytes::from(vec![0u8; 1 << 20])));
        let layer = pack(&big);
        let tight = ArtifactLimits {
            assets_uncompressed_bytes: 64 << 10,
            ..ArtifactLimits::default()
        };
        let error = unpack("r", Settings::default(), &layer, &tight).unwrap_err();
        assert_eq!(error.kind(), "too_large", "{error}");
        let limits = ArtifactLimits::default();
        let error = unpack("r", Settings::default(), b"not gzip", &limits).unwrap_err();
        assert_eq!(error.kind(), "malformed", "{error}");
    }
}
