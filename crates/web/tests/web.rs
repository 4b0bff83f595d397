//! `isolane-web`'s APIs against real V8, through a whole engine with every
//! family of units, as the binaries run it: one test binary (V8 links are
//! expensive), one module per API under `tests/web/`. They moved here from
//! the engine's tests (`crates/engine/tests/engine.rs`) with their APIs,
//! unchanged.

// Helpers outside `#[test]` functions unwrap too; this is test code.
#![allow(clippy::unwrap_used)]

// The engine tests' helpers (one engine per test, bundles, requests,
// bodies, the benign neighbour), shared rather than copied; this binary
// uses some of them.
#[allow(dead_code)]
#[path = "../../engine/tests/engine/support.rs"]
mod support;

#[path = "web/cache.rs"]
mod cache;
#[path = "web/codecs.rs"]
mod codecs;
#[path = "web/console.rs"]
mod console;
#[path = "web/crypto.rs"]
mod crypto;
#[path = "web/form_data.rs"]
mod form_data;
#[path = "web/html_rewriter.rs"]
mod html_rewriter;
#[path = "web/message_channel.rs"]
mod message_channel;
#[path = "web/url.rs"]
mod url;
#[path = "web/url_pattern.rs"]
mod url_pattern;
