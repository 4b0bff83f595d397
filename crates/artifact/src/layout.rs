//! The artifact's layout (documented for users in docs/bundles.md).
//!
//! An OCI image manifest (`application/vnd.oci.image.manifest.v1+json`)
//! with:
//! - a config blob of media type [`CONFIG_MEDIA_TYPE`]: JSON
//!   `{"main": "main.js", "modules": [{"name": "main.js", "type": "ESModule"}, …]}`,
//!   the module types being wrangler's;
//! - a layer of media type [`LAYER_MEDIA_TYPE`]: a gzip-compressed tar
//!   holding each module's bytes as a regular file at its name;
//! - when the Worker has static assets, a second layer of media type
//!   [`crate::ASSETS_LAYER_MEDIA_TYPE`] (`assets_layer.rs`), and the
//!   config's `assets` holds their settings (wrangler's keys), and its
//!   `assets_only` whether they answer every request with no Worker.
//!
//! [`unpack`] reads at most [`ArtifactLimits::uncompressed_bytes`] out of the
//! gzip stream whatever its headers claim, takes nothing but regular files,
//! and builds the modules through [`Modules::new`], so names are checked the
//! same way as for inline bundles.

use std::collections::BTreeMap;
use std::io::Read;

use flate2::read::GzDecoder;
use isolane_assets::AssetFiles;

use crate::archive::{Bounded, tar_gz};
use isolane_worker::{Module, ModuleKind, Modules};
use serde::{Deserialize, Serialize};

use crate::{ArtifactLimits, Error};

/// The config blob's media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.isolane.bundle.config.v1+json";
/// The one layer's media type.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.isolane.bundle.layer.v1.tar+gzip";

/// The config blob: which module is the main one, and each module's type.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct BundleConfig {
    pub main: String,
    pub modules: Vec<ModuleEntry>,
    /// The `assets` settings, when the artifact has an assets layer
    /// (`assets_layer.rs`); absent otherwise, so an artifact without
    /// assets has the bytes (and the digest) it had before assets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assets: Option<isolane_assets::Settings>,
    /// The assets are all there is: no request reaches the modules (a
    /// wrangler project with `assets` and no `main`). Absent when false,
    /// so every other artifact keeps its bytes and digest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub assets_only: bool,
}

/// One module in the config blob.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ModuleEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ModuleKind,
}

/// An artifact's blobs, ready to push.
#[derive(Debug, Clone)]
pub struct Packed {
    pub config: Vec<u8>,
    pub layer: Vec<u8>,
    /// The assets layer, when there are assets.
    pub assets: Option<Vec<u8>>,
}

/// The artifact of `modules` (deterministic: the same modules make the same
/// bytes, so pushing twice names the same digest).
pub fn pack(modules: &Modules) -> Packed {
    pack_with_assets(modules, None)
}

/// The artifact of `modules` and, in a second layer, `assets`.
pub fn pack_with_assets(modules: &Modules, assets: Option<&AssetFiles>) -> Packed {
    let config = BundleConfig {
        main: modules.main_name().to_owned(),
        modules: modules
            .iter()
            .map(|module| ModuleEntry {
                name: module.name.clone(),
                kind: module.kind,
            })
            .collect(),
        assets: assets.map(|assets| assets.settings.clone()),
        assets_only: assets.is_some_and(|assets| !assets.has_worker),
    };
    // invariant: a struct of strings and enums always serialises.
    let config = serde_json::to_vec(&config).expect("invariant: the config serialises");
    let layer = tar_gz(
        modules
            .iter()
            .map(|module| (module.name.as_str(), module.content.as_slice())),
    );
    Packed {
        config,
        layer,
        assets: assets.map(crate::assets_layer::pack),
    }
}

/// The `assets` settings of an artifact's config, `Some` when it has an
/// assets layer, and whether a Worker stands behind them.
pub fn assets_settings(
    reference: &str,
    config: &[u8],
) -> Result<Option<(isolane_assets::Settings, bool)>, Error> {
    let config: BundleConfig = serde_json::from_slice(config)
        .map_err(|error| Error::malformed(reference, format!("its config: {error}")))?;
    if config.assets_only && config.assets.is_none() {
        return Err(Error::malformed(
            reference,
            "its config says assets only, with no assets",
        ));
    }
    Ok(config
        .assets
        .map(|settings| (settings, !config.assets_only)))
}

/// The modules of an artifact's config and layer (already verified against
/// their digests), within `limits`.
pub fn unpack(
    reference: &str,
    config: &[u8],
    layer: &[u8],
    limits: &ArtifactLimits,
) -> Result<Modules, Error> {
    let config: BundleConfig = serde_json::from_slice(config)
        .map_err(|error| Error::malformed(reference, format!("its config: {error}")))?;
    let mut kinds: BTreeMap<String, ModuleKind> = BTreeMap::new();
    for entry in config.modules {
        if kinds.insert(entry.name.clone(), entry.kind).is_some() {
            return Err(Error::malformed(
                reference,
                format!("its config lists {:?} twice", entry.name),
            ));
        }
    }
    let mut archive = tar::Archive::new(Bounded {
        inner: GzDecoder::new(layer),
        left: limits.uncompressed_bytes,
        exceeded: false,
    });
    let read = read_modules(reference, &mut archive, &mut kinds);
    if archive.into_inner().exceeded {
        return Err(Error::TooLarge {
            reference: reference.to_owned(),
            what: "the uncompressed layer",
            actual: limits.uncompressed_bytes + 1,
            limit: limits.uncompressed_bytes,
        });
    }
    let modules = read?;
    if let Some(missing) = kinds.keys().next() {
        return Err(Error::malformed(
            reference,
            format!("module {missing:?} of its config is not in its layer"),
        ));
    }
    Modules::new(config.main, modules)
        .map_err(|error| Error::malformed(reference, error.to_string()))
}

/// Every regular file of the layer, each a module its config lists (and
/// removes from `kinds`).
fn read_modules<R: Read>(
    reference: &str,
    archive: &mut tar::Archive<R>,
    kinds: &mut BTreeMap<String, ModuleKind>,
) -> Result<Vec<Module>, Error> {
    let broken = |error: std::io::Error| {
        Error::malformed(reference, format!("its layer is not a tar+gzip: {error}"))
    };
    let mut modules = Vec::with_capacity(kinds.len());
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let kind = entry.header().entry_type();
        let path = entry.path().map_err(broken)?;
        let name = path
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::malformed(reference, "a file name in its layer is not UTF-8"))?;
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(Error::malformed(
                reference,
                format!("{name:?} in its layer is not a regular file"),
            ));
        }
        let Some(module_kind) = kinds.remove(&name) else {
            return Err(Error::malformed(
                reference,
                format!("{name:?} in its layer is not in its config (or is there twice)"),
            ));
        };
        let mut content = Vec::new();
        entry.read_to_end(&mut content).map_err(broken)?;
        modules.push(Module::new(name, module_kind, content));
    }
    Ok(modules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules() -> Modules {
        Modules::new(
            "src/main.js",
            vec![
                Module::new(
                    "src/main.js",
                    ModuleKind::ESModule,
                    "import t from './t.txt';",
                ),
                Module::new("src/t.txt", ModuleKind::Text, "hello"),
                Module::new(
                    "add.wasm",
                    ModuleKind::CompiledWasm,
                    vec![0, 97, 115, 109, 1, 0, 0, 0],
                ),
            ],
        )
        .unwrap()
    }

    #[test]
    fn packing_is_deterministic_and_unpacks_to_the_same_modules() {
        let packed = pack(&modules());
        assert_eq!(pack(&modules()).layer, packed.layer);
        let limits = ArtifactLimits::default();
        assert_eq!(
            unpack("r", &packed.config, &packed.layer, &limits).unwrap(),
            modules()
        );
    }

    #[test]
    fn the_config_says_assets_only_and_nothing_else_changes_for_other_artifacts() {
        let files = |has_worker| AssetFiles {
            files: vec![("/index.html".into(), bytes::Bytes::from_static(b"hi"))],
            has_worker,
            ..AssetFiles::default()
        };
        let settings = |config: &[u8]| assets_settings("r", config).unwrap();
        let alone = pack_with_assets(&modules(), Some(&files(false)));
        assert!(String::from_utf8_lossy(&alone.config).contains("\"assets_only\":true"));
        assert_eq!(
            settings(&alone.config).map(|(_, worker)| worker),
            Some(false)
        );
        let fronted = pack_with_assets(&modules(), Some(&files(true)));
        assert!(!String::from_utf8_lossy(&fronted.config).contains("assets_only"));
        assert_eq!(
            settings(&fronted.config).map(|(_, worker)| worker),
            Some(true)
        );
        assert_eq!(settings(&pack(&modules()).config), None);
        let lying = br#"{"main":"a.js","modules":[],"assets_only":true}"#;
        assert!(assets_settings("r", lying).is_err());
    }

    #[test]
    fn a_layer_that_disagrees_with_its_config_is_malformed() {
        let packed = pack(&modules());
        let limits = ArtifactLimits::default();
        let mut config: BundleConfig = serde_json::from_slice(&packed.config).unwrap();
        config.modules.pop();
        let fewer = serde_json::to_vec(&config).unwrap();
        let error = unpack("r", &fewer, &packed.layer, &limits).unwrap_err();
        assert_eq!(error.kind(), "malformed", "{error}");
        let mut config: BundleConfig = serde_json::from_slice(&packed.config).unwrap();
        config.modules.push(ModuleEntry {
            name: "gone.js".into(),
            kind: ModuleKind::ESModule,
        });
        let more = serde_json::to_vec(&config).unwrap();
        let error = unpack("r", &more, &packed.layer, &limits).unwrap_err();
        assert!(error.to_string().contains("gone.js"), "{error}");
        let error = unpack("r", &packed.config, b"not gzip", &limits).unwrap_err();
        assert_eq!(error.kind(), "malformed", "{error}");
        let error = unpack("r", b"{", &packed.layer, &limits).unwrap_err();
        assert_eq!(error.kind(), "malformed", "{error}");
    }

    #[test]
    fn a_layer_over_the_uncompressed_limit_is_too_large() {
        let packed = pack(&modules());
        let tight = ArtifactLimits {
            uncompressed_bytes: 600,
            ..ArtifactLimits::default()
        };
        let error = unpack("r", &packed.config, &packed.layer, &tight).unwrap_err();
        assert_eq!(error.kind(), "too_large", "{error}");
    }
}
