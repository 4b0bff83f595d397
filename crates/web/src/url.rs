//! URL and URLSearchParams (`js/06_url.js`, the URL Standard's objects):
//! JavaScript only. Parsing and the setters are the core's host functions
//! (`urlParse`, `urlSet`, by `ada-url`), which its `Request`, `Response`
//! and `fetch` parse with through `internal.parseURL`. The core reaches the
//! objects only when a body is made from one (`internal.isURLSearchParams`,
//! which `00_internal.js` answers `false` for an engine without this
//! family) or a value is cloned (`internal.isURL`), never at load time;
//! FormData, the console and the bindings' RPC use the same hooks.

use isolane_engine::api::Unit;

pub(crate) fn unit() -> Unit {
    Unit::new("url").js(&["06_url.js"])
}
