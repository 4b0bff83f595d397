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

    /// Whether a request for this (decoded) path goes to the Worker first.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            Self::Never => false,
            Self::Always => true,
            Self::Routes { include, exclude } => {
                include.iter().any(|r| r.is_match(path))
                    && !exclude.iter().any(|r| r.is_match(path))
            }
        }
    }

    /// Whether it is a list of routes (which turns off the navigation
    /// request rule: developers.cloudflare.com/workers/static-assets/routing/
    /// single-page-application/ "Advanced routing control").
    pub fn is_routes(&self) -> bool {
        matches!(self, Self::Routes { .. })
    }
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
        assert!(!RunWorkerFirst::default().matches("/a"));
        assert!(!RunWorkerFirst::from_bool(false).matches("/a"));
        assert!(RunWorkerFirst::from_bool(true).matches("/a"));
        assert!(!RunWorkerFirst::from_bool(true).is_routes());
    }

    #[test]
    fn the_documented_routes() {
        // Source: the changelog of 2025-06-17 and .../single-page-application/:
        // `["/api/*", "!/api/docs/*"]`.
        let r = RunWorkerFirst::from_routes(&["/api/*", "!/api/docs/*"]).unwrap();
        assert!(r.is_routes());
        assert!(r.matches("/api/name"));
        assert!(r.matches("/api/a/b"));
        assert!(!r.matches("/api/docs/intro"));
        assert!(!r.matches("/about"));
        assert!(!r.matches("/api"));
    }

    #[test]
    fn an_exclusion_alone_matches_nothing() {
        let r = RunWorkerFirst::from_routes(&["!/static/*"]).unwrap();
        assert!(!r.matches("/page"));
        let r = RunWorkerFirst::from_routes(&["/*", "!/_astro/*", "!/*.js"]).unwrap();
        assert!(r.matches("/page"));
        assert!(!r.matches("/_astro/x.css"));
        assert!(!r.matches("/a/b.js"));
    }

    #[test]
    fn literal_characters_are_literal() {
        let r = RunWorkerFirst::from_routes(&["/a.b", "/c+(d)"]).unwrap();
        assert!(r.matches("/a.b"));
        assert!(!r.matches("/axb"));
        assert!(r.matches("/c+(d)"));
    }

    #[test]
    fn a_route_must_be_a_path() {
        let err = RunWorkerFirst::from_routes(&["api/*"]).unwrap_err();
        assert_eq!(err.kind(), "not_a_path");
        assert!(RunWorkerFirst::from_routes(&["!api"]).is_err());
    }
}
