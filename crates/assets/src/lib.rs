//! A Worker's static assets, answered as Cloudflare's Workers Static Assets
//! answers them, with no V8 and no I/O: every decision is made over an
//! in-memory [`Manifest`].
#![forbid(unsafe_code)]

pub mod headers;
pub mod manifest;
mod pattern;
pub mod redirects;
pub mod routing;

pub use headers::{HeaderRules, HeadersError};
pub use manifest::{Asset, Manifest, ManifestError};
pub use pattern::PatternError;
pub use redirects::{RedirectMatch, Redirects, RedirectsError};
