//! Which asset answers a path: `html_handling` (the canonical URL of an
//! HTML page, and the 307 to it from the others) and `not_found_handling`
//! (what answers when nothing does).
//!
//! Source: developers.cloudflare.com/workers/static-assets/routing/advanced/
//! html-handling/ (one table of requests and answers per mode) and
//! .../routing/ (`not_found_handling`). A redirect is only made when the
//! destination would serve the very same content, so that no mode can
//! redirect in a loop.

use std::str::FromStr;

use http::StatusCode;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::manifest::{Asset, Manifest};

/// `assets.html_handling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HtmlHandling {
    /// `auto-trailing-slash`, the default: `foo.html` at `/foo`,
    /// `foo/index.html` at `/foo/`.
    #[default]
    AutoTrailingSlash,
    /// `force-trailing-slash`: every page at a path ending in `/`.
    ForceTrailingSlash,
    /// `drop-trailing-slash`: every page at a path not ending in `/`.
    DropTrailingSlash,
    /// `none`: only exact file paths.
    None,
}

/// `assets.not_found_handling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotFoundHandling {
    /// `none`, the default: no asset answers (the Worker, or a 404).
    #[default]
    None,
    /// `404-page`: the nearest `404.html` up the path, with status 404.
    Page404,
    /// `single-page-application`: `/index.html` with status 200.
    SinglePageApplication,
}

/// A configuration value that is not one of wrangler's.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{value:?} is not a valid {setting}; expected one of {expected}")]
pub struct UnknownSetting {
    pub setting: &'static str,
    pub value: String,
    pub expected: &'static str,
}

impl FromStr for HtmlHandling {
    type Err = UnknownSetting;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "auto-trailing-slash" => Ok(Self::AutoTrailingSlash),
            "force-trailing-slash" => Ok(Self::ForceTrailingSlash),
            "drop-trailing-slash" => Ok(Self::DropTrailingSlash),
            "none" => Ok(Self::None),
            _ => Err(UnknownSetting {
                setting: "html_handling",
                value: value.to_owned(),
                expected: "auto-trailing-slash, force-trailing-slash, drop-trailing-slash, none",
            }),
        }
    }
}

impl FromStr for NotFoundHandling {
    type Err = UnknownSetting;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "none" => Ok(Self::None),
            "404-page" => Ok(Self::Page404),
            "single-page-application" => Ok(Self::SinglePageApplication),
            _ => Err(UnknownSetting {
                setting: "not_found_handling",
                value: value.to_owned(),
                expected: "none, 404-page, single-page-application",
            }),
        }
    }
}

/// What answers a decoded path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intent<'a> {
    /// The asset at `path` answers, with `status` (200, or 404 for a
    /// `404.html`).
    Serve {
        path: String,
        asset: &'a Asset,
        status: StatusCode,
    },
    /// A 307 to this decoded path, the canonical URL of the same content.
    Redirect(String),
}

/// Resolves paths over one manifest with one configuration.
#[derive(Debug, Clone, Copy)]
pub struct Resolver<'a> {
    pub manifest: &'a Manifest,
    pub html: HtmlHandling,
    pub not_found: NotFoundHandling,
}

impl<'a> Resolver<'a> {
    /// The intent for a decoded path, or `None` when no asset answers.
    pub fn resolve(&self, path: &str) -> Option<Intent<'a>> {
        self.intent(path, true)
    }

    fn intent(&self, path: &str, redirects: bool) -> Option<Intent<'a>> {
        let found = match self.html {
            HtmlHandling::AutoTrailingSlash => self.auto(path, redirects),
            HtmlHandling::ForceTrailingSlash => self.force(path, redirects),
            HtmlHandling::DropTrailingSlash => self.drop(path, redirects),
            HtmlHandling::None => self.serve(path),
        };
        found.or_else(|| self.not_found(path))
    }

    fn auto(&self, path: &str, r: bool) -> Option<Intent<'a>> {
        let special = if let Some(base) = path.strip_suffix("/index") {
            self.serve(path)
                .or_else(|| self.redirect(&format!("{path}.html"), &format!("{base}/"), r))
                .or_else(|| self.redirect(&format!("{base}.html"), base, r))
        } else if let Some(base) = path.strip_suffix("/index.html") {
            self.redirect(path, &format!("{base}/"), r)
                .or_else(|| self.redirect(&format!("{base}.html"), base, r))
        } else if let Some(base) = path.strip_suffix('/') {
            self.serve(&format!("{path}index.html"))
                .or_else(|| self.redirect(&format!("{base}.html"), base, r))
        } else if let Some(base) = path.strip_suffix(".html") {
            self.redirect(path, base, r)
                .or_else(|| self.redirect(&format!("{base}/index.html"), &format!("{base}/"), r))
        } else {
            None
        };
        special
            .or_else(|| self.serve(path))
            .or_else(|| self.serve(&format!("{path}.html")))
            .or_else(|| self.redirect(&format!("{path}/index.html"), &format!("{path}/"), r))
    }

    fn force(&self, path: &str, r: bool) -> Option<Intent<'a>> {
        let special = if let Some(base) = path.strip_suffix("/index") {
            self.serve(path)
                .or_else(|| self.redirect(&format!("{path}.html"), &format!("{base}/"), r))
                .or_else(|| self.redirect(&format!("{base}.html"), &format!("{base}/"), r))
        } else if let Some(base) = path.strip_suffix("/index.html") {
            self.redirect(path, &format!("{base}/"), r)
                .or_else(|| self.redirect(&format!("{base}.html"), &format!("{base}/"), r))
        } else if let Some(base) = path.strip_suffix('/') {
            self.serve(&format!("{path}index.html"))
                .or_else(|| self.serve(&format!("{base}.html")))
        } else if let Some(base) = path.strip_suffix(".html") {
            self.redirect(path, &format!("{base}/"), r)
                .or_else(|| self.redirect(&format!("{base}/index.html"), &format!("{base}/"), r))
        } else {
            None
        };
        special
            .or_else(|| self.serve(path))
            .or_else(|| self.redirect(&format!("{path}.html"), &format!("{path}/"), r))
            .or_else(|| self.redirect(&format!("{path}/index.html"), &format!("{path}/"), r))
    }

    fn drop(&self, path: &str, r: bool) -> Option<Intent<'a>> {
        let special = if path == "/" {
            self.serve("/index.html")
        } else if let Some(base) = path.strip_suffix("/index") {
            self.serve(path)
                .or_else(|| self.redirect(&format!("{path}.html"), base, r))
                .or_else(|| self.redirect(&format!("{base}.html"), base, r))
        } else if let Some(base) = path.strip_suffix("/index.html") {
            self.redirect(path, base, r)
                .or_else(|| self.redirect(&format!("{base}.html"), base, r))
        } else if let Some(base) = path.strip_suffix('/') {
            self.redirect(&format!("{base}.html"), base, r)
                .or_else(|| self.redirect(&format!("{path}index.html"), base, r))
        } else if let Some(base) = path.strip_suffix(".html") {
            self.redirect(path, base, r)
                .or_else(|| self.redirect(&format!("{base}/index.html"), base, r))
        } else {
            None
        };
        special
            .or_else(|| self.serve(path))
            .or_else(|| self.serve(&format!("{path}.html")))
            .or_else(|| self.serve(&format!("{path}/index.html")))
    }

    fn serve(&self, file: &str) -> Option<Intent<'a>> {
        self.serve_with(file, StatusCode::OK)
    }

    fn serve_with(&self, file: &str, status: StatusCode) -> Option<Intent<'a>> {
        let asset = self.manifest.get(file)?;
        Some(Intent::Serve {
            path: file.to_owned(),
            asset,
            status,
        })
    }

    /// A redirect to `destination` when `file` exists, `destination` is
    /// not a file of its own and resolves (without redirects) to the same
    /// content.
    fn redirect(&self, file: &str, destination: &str, allowed: bool) -> Option<Intent<'a>> {
        if !allowed {
            return None;
        }
        let destination = if destination.is_empty() {
            "/"
        } else {
            destination
        };
        let wanted = self.manifest.get(file)?;
        if self.manifest.get(destination).is_some() {
            return None;
        }
        match self.intent(destination, false)? {
            Intent::Serve { asset, .. } if asset.hash == wanted.hash => {
                Some(Intent::Redirect(destination.to_owned()))
            }
            _ => None,
        }
    }

    fn not_found(&self, path: &str) -> Option<Intent<'a>> {
        match self.not_found {
            NotFoundHandling::None => None,
            NotFoundHandling::SinglePageApplication => self.serve("/index.html"),
            NotFoundHandling::Page404 => {
                let mut dir = path;
                while let Some(slash) = dir.rfind('/') {
                    dir = &dir[..slash];
                    let page = format!("{dir}/404.html");
                    if let Some(found) = self.serve_with(&page, StatusCode::NOT_FOUND) {
                        return Some(found);
                    }
                }
                None
            }
        }
    }
}

/// The characters `encodeURIComponent` leaves alone, which the canonical
/// form of a path segment keeps as they are.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// A request path as the manifest names files: each segment
/// percent-decoded (left as it is when it is not UTF-8), runs of `/` made
/// one.
pub fn decode_path(path: &str) -> String {
    let decoded: Vec<String> = path
        .split('/')
        .map(|segment| match percent_decode_str(segment).decode_utf8() {
            Ok(text) => text.into_owned(),
            Err(_) => segment.to_owned(),
        })
        .collect();
    let mut joined = decoded.join("/");
    while joined.contains("//") {
        joined = joined.replace("//", "/");
    }
    joined
}

/// The canonical (encoded) form of a decoded path; a request whose path
/// differs from it is redirected to it.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|segment| utf8_percent_encode(segment, COMPONENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
}
