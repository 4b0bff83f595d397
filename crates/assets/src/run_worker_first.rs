//! `assets.run_worker_first`: whether a request goes to the Worker before
//! any asset is looked for.
//!
//! Source: developers.cloudflare.com/workers/static-assets/binding/
//! `run_worker_first` and the changelog of 2025-06-17 ("Control which routes
//! invoke your Worker script"): `true`, `false` (the default) or a list of
//! route patterns such as `["/api/*", "!/api/docs/*"]`, where `*` matches
//! any characters and a `!` pattern excludes what it matches.

use regex::Regex;

/// A `run_worker_first` pattern that cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RunWorkerFirstError {
    #[error("run_worker_first route {route:?} must start with '/' or '!/'")]
    NotAPath { route: String },
}

impl RunWorkerFirstError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotAPath { .. } => "not_a_path",
        }
    }
}

/// The setting, read.
#[derive(Debug, Clone, Default)]
pub enum RunWorkerFirst {
    /// `false`: assets first, the Worker when none answers.
    #[default]
    Never,
    /// `true`: the Worker first, always.
    Always,
    /// A list: the Worker first for paths that match a pattern and no
    /// `!` pattern.
    Routes {
        include: Vec<Regex>,
        exclude: Vec<Regex>,
    },
}

impl RunWorkerFirst {
    pub fn from_bool(value: bool) -> Self {
        if value { Self::Always } else { Self::Never }
    }

    /// Reads a list of route patterns.
    pub fn from_routes<S: AsRef<str>>(routes: &[S]) -> Result<Self, RunWorkerFirstError> {
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        for route in routes {
            let route = route.as_ref();
            let (list, pattern) = match route.strip_prefix('!') {
                Some(pattern) => (&mut exclude, pattern),
                None => (&mut include, route),
            };
            if !pattern.starts_with('/') {
                return Err(RunWorkerFirstError::NotAPath {
                    route: route.to_owned(),
                });
            }
            list.push(glob(pattern, route)?);
        }
        Ok(Self::Routes { include, exclude })
    }

    /// Where a request for this path (as it arrived, percent-encoded) goes
    /// first. A `!` pattern is looked at before the others: what it matches
    /// goes to the assets, whatever else matches.
    pub fn first(&self, path: &str) -> First {
        match self {
            Self::Never => First::Either,
            Self::Always => First::Worker,
            Self::Routes { include, exclude } => {
                if exclude.iter().any(|r| r.is_match(path)) {
                    First::Assets
                } else if include.iter().any(|r| r.is_match(path)) {
                    First::Worker
                } else {
                    First::Either
                }
            }
        }
    }

    /// Whether it is a list of routes ("static routing": what no route
    /// sends to the Worker gets the assets with `not_found_handling`, in
    /// place of the navigation request rule: developers.cloudflare.com/
    /// workers/static-assets/routing/single-page-application/ "Advanced
    /// routing control").
    pub fn is_routes(&self) -> bool {
        matches!(self, Self::Routes { .. })
    }
}

/// Where a request goes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// The Worker, whatever the assets hold.
    Worker,
    /// The assets alone (a `!` route), `not_found_handling` included.
    Assets,
    /// An asset if one answers, else the Worker.
    Either,
}

fn glob(pattern: &str, route: &str) -> Result<Regex, RunWorkerFirstError> {
    let body: Vec<String> = pattern.split('*').map(regex::escape).collect();
    Regex::new(&format!("^{}$", body.join(".*"))).map_err(|_| RunWorkerFirstError::NotAPath {
        route: route.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans() {
        assert_eq!(RunWorkerFirst::default().first("/a"), First::Either);
        assert_eq!(RunWorkerFirst::from_bool(false).first("/a"), First::Either);
        assert_eq!(RunWorkerFirst::from_bool(true).first("/a"), First::Worker);
        assert!(!RunWorkerFirst::from_bool(true).is_routes());
    }

    #[test]
    fn the_documented_routes() {
        // Source: the changelog of 2025-06-17 and .../single-page-application/:
        // `["/api/*", "!/api/docs/*"]`.
        let r = RunWorkerFirst::from_routes(&["/api/*", "!/api/docs/*"]).unwrap();
        assert!(r.is_routes());
        assert_eq!(r.first("/api/name"), First::Worker);
        assert_eq!(r.first("/api/a/b"), First::Worker);
        assert_eq!(r.first("/api/docs/intro"), First::Assets);
        assert_eq!(r.first("/about"), First::Either);
        // `*` is `.*`, anchored at both ends (workers-sdk's router-worker).
        assert_eq!(r.first("/api"), First::Either);
    }

    #[test]
    fn an_exclusion_sends_to_the_assets() {
        let r = RunWorkerFirst::from_routes(&["!/static/*"]).unwrap();
        assert_eq!(r.first("/page"), First::Either);
        assert_eq!(r.first("/static/a.css"), First::Assets);
        let r = RunWorkerFirst::from_routes(&["/*", "!/_astro/*", "!/*.js"]).unwrap();
        assert_eq!(r.first("/page"), First::Worker);
        assert_eq!(r.first("/_astro/x.css"), First::Assets);
        assert_eq!(r.first("/a/b.js"), First::Assets);
    }

    #[test]
    fn literal_characters_are_literal() {
        let r = RunWorkerFirst::from_routes(&["/a.b", "/c+(d)"]).unwrap();
        assert_eq!(r.first("/a.b"), First::Worker);
        assert_eq!(r.first("/axb"), First::Either);
        assert_eq!(r.first("/c+(d)"), First::Worker);
    }

    #[test]
    fn a_route_must_be_a_path() {
        let err = RunWorkerFirst::from_routes(&["api/*"]).unwrap_err();
        assert_eq!(err.kind(), "not_a_path");
        assert!(RunWorkerFirst::from_routes(&["!api"]).is_err());
    }
}
