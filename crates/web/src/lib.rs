//! The Web platform's APIs for the Isolane engine, as they leave its core
//! (docs/adr/0002-engine-crates.md): today TextEncoder, TextDecoder and
//! atob/btoa (`encoding.rs`, `encoding/decoder.rs`, `js/04_encoding.js`,
//! `js/05_base64.js`) with TextEncoderStream and TextDecoderStream
//! (`js/08_encoding_streams.js`), `URL` and `URLSearchParams` (`url.rs`,
//! `js/06_url.js`; the parser stays the core's), Blob and File (`blob.rs`,
//! `js/09_blob.js`), `fetch()` (`fetch.rs`, `fetch/data_url.rs`,
//! `js/13_fetch.js`; Request and Response stay the core's, which makes and
//! answers them for every request it runs), Web Crypto (`crypto.rs`,
//! `crypto/*`, `js/14_crypto.js`; its parts Node's `node:crypto` is built
//! on are public here, [`crypto`], for `isolane-nodejs`), the timers
//! (`timers.rs`, `js/15_timers.js`; the table of a request's timers stays
//! the core's), `Date` and `performance` on the core's coarse clock
//! (`clock.rs`, `js/16_clock.js`), `structuredClone` (`clone.rs`,
//! `js/18_structured_clone.js`; V8's serializer stays the core's),
//! `URLPattern`
//! (`url_pattern.rs`, `js/21_urlpattern.js`), the Cache API (`cache.rs`,
//! its store `cache/store.rs`, `js/22_cache.js`), `FormData`
//! (`form_data.rs`, `js/24_form_data.js`), the console's formatting
//! (`console.rs`, `js/17_console.js`; its lines go to the core's `log`
//! unit), `MessageChannel` and
//! `MessagePort` (`message_channel.rs`, `js/29_message_channel.js`),
//! `HTMLRewriter`
//! (`html_rewriter.rs`, `html_rewriter/session.rs`,
//! `js/23_html_rewriter.js`) and the compression streams with their codecs
//! (`compression.rs`, `compression/*`, `js/24_compression.js`; `node:zlib`
//! uses the same host functions), and WebSocket: `WebSocketPair`, the `101`
//! that hands a socket over, outbound sockets and Durable Objects'
//! hibernatable ones (`websocket.rs`, `websocket/*`, `js/26_websocket.js`;
//! [`websocket::hibernation`] is public for `isolane-bindings`' object
//! unit, which registers its host functions; the socket's contract with the
//! front end, its per-thread count and the thread's `socket_event` hook
//! stay the core's). What of the Web platform the core keeps (the URL parser its Request and
//! Response use, the console's `log` unit with the tail's store) stays
//! there for the reasons docs/engine.md gives.
//!
//! The main item is [`family`]: the units, in order, that a binary hands
//! the engine (`EngineConfig::families`), first of the families. It
//! depends on the core only through its door, `isolane_engine::api`.
//!
//! `unsafe` is allowed here, as in the engine: `encodeInto`'s copy into
//! its destination's bytes (`encoding.rs`), AWS-LC's C API
//! (`crypto/aws_lc.rs`), a digest over a view's bytes in place
//! (`crypto.rs`), and HTMLRewriter's coroutine bridge
//! (`html_rewriter/session.rs`), which reaches its yielder through a raw
//! pointer; each block says why it is sound.
#![allow(unsafe_code)]

#[macro_use]
extern crate isolane_engine;

mod blob;
mod cache;
mod clock;
mod clone;
mod compression;
mod console;
pub mod crypto;
mod encoding;
mod fetch;
mod form_data;
mod html_rewriter;
mod message_channel;
pub mod offload;
mod timers;
mod url;
mod url_pattern;
pub mod websocket;

use isolane_engine::Family;
use isolane_engine::api::Unit;

include!(concat!(env!("OUT_DIR"), "/runtime_js.rs"));

/// The Web platform's units as the engine registers them: their units, in
/// order (which host functions come first), and their runtime JavaScript.
pub fn family() -> Family {
    Family {
        name: "web",
        fingerprint: env!("ISOLANE_WEB_FINGERPRINT"),
        units,
        js: RUNTIME_JS,
    }
}

fn units() -> Vec<Unit> {
    vec![
        encoding::unit(),
        url::unit(),
        encoding::streams(),
        blob::unit(),
        fetch::unit(),
        crypto::unit(),
        timers::unit(),
        clock::unit(),
        console::unit(),
        clone::unit(),
        url_pattern::unit(),
        cache::unit(),
        html_rewriter::unit(),
        compression::unit(),
        form_data::unit(),
        websocket::unit(),
        websocket::connect::unit(),
        message_channel::unit(),
    ]
}
