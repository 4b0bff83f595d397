//! Route matching: which route answers a request's host and path. One
//! implementation for the router's route table and `isolane dev` (which
//! runs the router's table). Which Worker may hold a route is decided
//! before, by [`crate::decide`].
//!
//! 1. The host is normalised: lower case, port and a trailing dot removed.
//! 2. The routes of the exact host are tried, longest `pathPrefix` first.
//! 3. If none matches, the routes of the wildcard one label up
//!    (`*.example.com` for `api.example.com`, never for `example.com` or
//!    `a.b.example.com`) are tried the same way.
//! 4. If none matches, the routes of [`ANY_HOST`] (`*`, any host) are tried:
//!    `isolane dev <script>` serves its one Worker this way. A Worker's
//!    routes cannot name it (the CRD allows DNS names and `*.` wildcards).
//! 5. Nothing matched: no route.
//!
//! A prefix matches whole path segments: `/api` matches `/api`, `/api/` and
//! `/api/v1` but not `/apix`; a prefix ending in `/` (such as `/`) matches
//! every path that starts with it. Paths are compared raw (not
//! percent-decoded); the query is not part of the path. The first value
//! inserted for a host and prefix keeps it.

use std::borrow::Cow;

// Looked up per request: foldhash (seeded per process) rather than SipHash.
use foldhash::HashMap;

/// The host of routes that answer every host no other route does.
pub const ANY_HOST: &str = "*";

/// An index from host and path prefix to a value.
#[derive(Debug, Clone)]
pub struct RouteIndex<T> {
    exact: HashMap<String, Vec<(String, T)>>,
    /// Keyed by the suffix after `*.`.
    wildcard: HashMap<String, Vec<(String, T)>>,
    /// The routes of [`ANY_HOST`].
    any: Vec<(String, T)>,
}

impl<T> Default for RouteIndex<T> {
    fn default() -> Self {
        Self {
            exact: HashMap::default(),
            wildcard: HashMap::default(),
            any: Vec::new(),
        }
    }
}

impl<T> RouteIndex<T> {
    /// Adds `value` for `host` (exact or `*.` wildcard, normalised here) and
    /// `prefix`; `false` (and nothing added) when that host and prefix are
    /// taken already.
    pub fn insert(&mut self, host: &str, prefix: &str, value: T) -> bool {
        let host = normalize_host(host);
        let routes = match host.strip_prefix("*.") {
            _ if host == ANY_HOST => &mut self.any,
            Some(suffix) => self.wildcard.entry(suffix.to_owned()).or_default(),
            None => self.exact.entry(host).or_default(),
        };
        if routes.iter().any(|(taken, _)| taken == prefix) {
            return false;
        }
        // Longest prefix first; equal lengths by text, so the order is stable.
        let at = routes
            .iter()
            .position(|(other, _)| {
                other.len() < prefix.len()
                    || (other.len() == prefix.len() && other.as_str() > prefix)
            })
            .unwrap_or(routes.len());
        routes.insert(at, (prefix.to_owned(), value));
        true
    }

    /// The value for a request to `host` (as in the Host header or
    /// `:authority`, port allowed) and `path`.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&T> {
        let host = host_key(host);
        if let Some(found) = self
            .exact
            .get(host.as_ref())
            .and_then(|r| first_match(r, path))
        {
            return Some(found);
        }
        if let Some(found) = host
            .split_once('.')
            .and_then(|(_, parent)| self.wildcard.get(parent))
            .and_then(|r| first_match(r, path))
        {
            return Some(found);
        }
        first_match(&self.any, path)
    }
}

fn first_match<'a, T>(routes: &'a [(String, T)], path: &str) -> Option<&'a T> {
    routes
        .iter()
        .find(|(prefix, _)| prefix_matches(prefix, path))
        .map(|(_, value)| value)
}

/// Lower case, without port or trailing dot. Bracketed IPv6 literals keep
/// their brackets.
pub fn normalize_host(host: &str) -> String {
    host_key(host).into_owned()
}

/// [`normalize_host`], borrowing `host` when it is normal already (as
/// nearly every request's is), so a lookup allocates nothing.
fn host_key(host: &str) -> Cow<'_, str> {
    let host = host.trim();
    let without_port = if host.starts_with('[') {
        match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        }
    } else {
        match host.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        }
    };
    name_key(without_port)
}

/// A host name without port, as in routes and reservations: lower case,
/// without a trailing dot.
pub(crate) fn normalize_name(name: &str) -> String {
    name_key(name).into_owned()
}

/// [`normalize_name`], borrowing `name` when it is normal already.
fn name_key(name: &str) -> Cow<'_, str> {
    let name = name.trim_end_matches('.');
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Whether `prefix` matches `path` on a segment boundary.
pub fn prefix_matches(prefix: &str, path: &str) -> bool {
    path.starts_with(prefix)
        && (prefix.ends_with('/')
            || path.len() == prefix.len()
            || path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(routes: &[(&str, &str, &'static str)]) -> RouteIndex<&'static str> {
        let mut index = RouteIndex::default();
        for (host, prefix, value) in routes {
            index.insert(host, prefix, *value);
        }
        index
    }

    #[test]
    fn the_exact_host_is_tried_before_the_wildcard_longest_prefix_first() {
        let index = index(&[
            ("api.example.com", "/", "root"),
            ("api.example.com", "/v2", "v2"),
            ("*.example.com", "/v2/users", "wild"),
        ]);
        let at = |host, path| index.lookup(host, path).copied();
        assert_eq!(at("api.example.com", "/x"), Some("root"));
        assert_eq!(at("API.example.com:8787", "/v2/x"), Some("v2"));
        // The exact host matches: its routes answer, the wildcard's do not.
        assert_eq!(at("api.example.com", "/v2/users/1"), Some("v2"));
        assert_eq!(at("other.example.com", "/v2/users"), Some("wild"));
        assert_eq!(at("other.example.com", "/v2"), None);
        assert_eq!(at("a.b.example.com", "/v2/users"), None);
        assert_eq!(at("example.com", "/v2/users"), None);
        assert_eq!(at("example.org", "/"), None);
    }

    #[test]
    fn any_host_answers_last() {
        let index = index(&[
            (ANY_HOST, "/", "any"),
            ("a.test", "/api", "a"),
            ("*.b.test", "/", "wild"),
        ]);
        let at = |host, path| index.lookup(host, path).copied();
        assert_eq!(at("a.test", "/api/x"), Some("a"));
        assert_eq!(at("a.test", "/other"), Some("any"));
        assert_eq!(at("x.b.test", "/"), Some("wild"));
        assert_eq!(at("", "/"), Some("any"));
        assert_eq!(at("localhost:8787", "/anything"), Some("any"));
        // Only the any-host routes' prefixes match there.
        let index = super::tests::index(&[(ANY_HOST, "/api", "api")]);
        assert_eq!(index.lookup("localhost", "/apix"), None);
    }

    #[test]
    fn prefixes_match_whole_segments() {
        let index = index(&[("a.test", "/api", "api"), ("a.test", "/", "root")]);
        let at = |path| index.lookup("a.test", path).copied();
        assert_eq!(at("/api"), Some("api"));
        assert_eq!(at("/api/"), Some("api"));
        assert_eq!(at("/api/v1"), Some("api"));
        assert_eq!(at("/apix"), Some("root"));
    }

    #[test]
    fn the_first_claim_of_a_host_and_prefix_keeps_it() {
        let mut index = RouteIndex::default();
        assert!(index.insert("a.test", "/", "first"));
        assert!(!index.insert("A.test.", "/", "second"));
        assert_eq!(index.lookup("a.test", "/"), Some(&"first"));
    }

    #[test]
    fn hosts_are_normalised() {
        assert_eq!(normalize_host("API.Example.com:8080"), "api.example.com");
        assert_eq!(normalize_host("example.com."), "example.com");
        assert_eq!(normalize_host("[::1]:8080"), "[::1]");
    }
}
