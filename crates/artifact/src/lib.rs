//! A Worker's bundle as an OCI artifact, named by digest.
//!
//! A bundle too large to travel inline (the bundle Secret is capped at
//! 1 MiB by Kubernetes) is pushed to an OCI registry and named from the
//! Worker by digest (`spec.bundle`, `registry.example/ns/app@sha256:…`), so
//! every node runs exactly the same bytes. This crate is that artifact:
//!
//! - [`layout`]: what the artifact is made of (its media types, a config
//!   that lists the modules and their types, one tar+gzip layer of their
//!   bytes, and a second layer of static assets when there are some),
//!   [`pack`] and the bounded [`unpack`];
//! - [`BundleRef`]: a reference that must name a digest;
//! - [`AllowedRegistries`]: the registries the cluster's admin lets bundles
//!   come from;
//! - [`Registry`]: push and a verified, bounded pull over the OCI
//!   distribution protocol (the `oci-client` crate), with
//!   [`Credentials`] from a pull secret;
//! - [`Cache`]: the node's content-addressed, size-bounded disk cache of
//!   pulled blobs, so a bundle is pulled once per node.
//!
//! The operator validates with it, the runtime node pulls with it, and
//! `isolane push` pushes with it.
#![forbid(unsafe_code)]

mod allowed;
mod archive;
pub mod assets_layer;
mod cache;
mod check;
mod clients;
mod digest;
mod error;
pub mod layout;
mod limits;
mod reference;
mod registry;
mod registry_ca;
mod system_roots;

pub use allowed::AllowedRegistries;
pub use assets_layer::ASSETS_LAYER_MEDIA_TYPE;
pub use cache::Cache;
pub use check::check_wasm;
pub use error::Error;
pub use layout::{CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, Packed, pack, pack_with_assets, unpack};
pub use limits::ArtifactLimits;
pub use reference::BundleRef;
pub use registry::{Credentials, Pulled, Registry};
pub use registry_ca::RegistryCa;
