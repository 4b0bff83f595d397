//! A route: the host and path prefix a Worker answers on. Which route
//! answers a request is [`RouteIndex`]'s (`route/index.rs`); which Worker
//! holds a route is [`crate::decide`]'s.

mod index;

use std::fmt;

pub(crate) use index::normalize_name;
pub use index::{ANY_HOST, RouteIndex, normalize_host, prefix_matches};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A host and path prefix the Worker answers on.
#[derive(
    Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// A DNS name (`api.example.com`) or a wildcard of one label (`*.example.com`),
    /// lower case.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.matches('^(\\\\*\\\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
            "message": "must be a lower-case DNS name such as api.example.com, or a wildcard such as *.example.com"
        }
    ]))]
    pub host: String,

    /// The path prefix this route matches (default `/`); starts with `/`. The longest
    /// matching prefix wins.
    #[serde(default = "default_path_prefix")]
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.startsWith('/')",
            "message": "must start with /"
        }
    ]))]
    pub path_prefix: String,
}

fn default_path_prefix() -> String {
    "/".to_owned()
}

impl Route {
    /// A route from its parts.
    pub fn new(host: impl Into<String>, path_prefix: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            path_prefix: path_prefix.into(),
        }
    }

    /// The distinct routes of `routes`, in declaration order.
    pub fn distinct(routes: &[Route]) -> Vec<Route> {
        let mut distinct: Vec<Route> = Vec::with_capacity(routes.len());
        for route in routes {
            if !distinct.contains(route) {
                distinct.push(route.clone());
            }
        }
        distinct
    }
}

/// `host` then `pathPrefix`, as in messages: `api.example.com/v1`.
impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.host, self.path_prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_routes_keep_their_order() {
        let routes = [
            Route::new("b", "/"),
            Route::new("a", "/"),
            Route::new("b", "/"),
        ];
        assert_eq!(
            Route::distinct(&routes),
            [Route::new("b", "/"), Route::new("a", "/")]
        );
        assert_eq!(Route::new("a.test", "/v1").to_string(), "a.test/v1");
    }
}
