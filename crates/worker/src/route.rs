//! A route: the host and path prefix a Worker answers on (matching is
//! `isolane_hosts::RouteIndex`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A host and path prefix the Worker answers on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
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
