//! A Worker's static assets, answered as Cloudflare's Workers Static Assets
//! answers them, with no V8 and no I/O: every decision is made over an
//! in-memory [`Manifest`] of paths to content hashes.
//!
//! The main type is [`Assets`]: a manifest, the `_redirects` and `_headers`
//! rules and the `assets` settings of one Worker version. Its
//! [`Assets::route`] decides how a request to the Worker is answered (the
//! Worker first, an asset, a redirect, a 404), and [`Assets::fetch`] how
//! the Worker's assets binding (`env.ASSETS.fetch`) answers. The decision
//! names the asset by its content hash and says which bytes to send; the
//! server that composes this crate (`isolane dev`, the runtime node) reads
//! those bytes from wherever the bundle put them.
//!
//! One concept a module:
//! - [`manifest`]: paths to assets (hash, size, `Content-Type`);
//! - [`routing`]: `html_handling` and `not_found_handling`;
//! - [`redirects`] and [`headers`]: the `_redirects` and `_headers` files;
//! - [`conditional`]: default headers, `If-None-Match` and `Range`;
//! - [`run_worker_first`]: whether the Worker runs before assets;
//! - [`decision`]: all of them, in Cloudflare's order;
//! - [`settings`]: wrangler's `assets` keys, as the config and an artifact carry them;
//! - [`site`]: the files with their bytes, and a decision made a response.
//!
//! `docs/assets.md` says what Cloudflare does and where this differs.
#![forbid(unsafe_code)]

pub mod conditional;
pub mod decision;
pub mod headers;
pub mod manifest;
mod pattern;
pub mod redirects;
pub mod routing;
pub mod run_worker_first;
pub mod settings;
pub mod site;

pub use conditional::{Body, CachePolicy};
pub use decision::{AssetRequest, Assets, Config, Decision, Served};
pub use headers::{HeaderRules, HeadersError};
pub use manifest::{Asset, Manifest, ManifestError};
pub use pattern::PatternError;
pub use redirects::{RedirectMatch, Redirects, RedirectsError};
pub use routing::{HtmlHandling, NotFoundHandling, UnknownSetting};
pub use run_worker_first::{First, RunWorkerFirst, RunWorkerFirstError};
pub use settings::{RunWorkerFirstSetting, Settings, SettingsError};
pub use site::{Answered, AssetFiles, Site, SiteError, answer};
