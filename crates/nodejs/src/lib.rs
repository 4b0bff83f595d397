//! Node.js compatibility for the Isolane engine: Node's built-in modules
//! (`node:buffer`, `node:crypto`, …), one unit each: the module's
//! JavaScript (`js/<name>.js`, loaded lazily, see the engine's
//! `modules/node.rs`) and the host functions it calls. Which ones a Worker
//! may import is its compatibility settings' business (docs/nodejs.md).
//!
//! The main item is [`family`]: the units, in order, that a binary hands
//! the engine (`EngineConfig::families`). It depends on the core
//! (`isolane_engine::api`), and on the Web platform's crate for Web
//! Crypto's parts `node:crypto`'s keys and digests are built on
//! (`isolane_web::crypto`).
//!
//! `unsafe` is allowed here, as in the engine: `node:crypto`'s ciphers,
//! Diffie-Hellman, primes, RSA padding and SPKAC call AWS-LC's C API
//! (`aws-lc-sys`) directly; each block says why it is sound.
#![allow(unsafe_code)]

#[macro_use]
extern crate isolane_engine;

mod async_hooks;
mod buffer;
mod crypto;
mod crypto_cipher;
mod crypto_dh;
mod crypto_keys;
mod crypto_pkcs8;
mod crypto_prime;
mod crypto_rsa;
mod crypto_spkac;
mod crypto_x509;
pub(crate) mod dns;
mod fs;
mod http;
mod process;
mod punycode;
mod stubs;
mod util;
mod zlib;

pub(crate) use stubs::{
    child_process, cluster, dgram, domain, inspector, perf_hooks, readline, repl, sqlite, test,
    trace_events, tty, v8, wasi, worker_threads,
};

use isolane_engine::Family;
use isolane_engine::api::Unit;

/// `node:internal/errors`: Node's coded errors and the "not implemented"
/// stubs the other node modules share (hidden from Workers).
pub(crate) fn internal_errors() -> Unit {
    Unit::new("node:internal/errors")
        .node_module("internal/errors", include_str!("../js/internal_errors.js"))
}

/// `node:buffer`: `Buffer` and its encodings.
pub(crate) fn buffer() -> Unit {
    Unit::new("node:buffer")
        .node_module("buffer", include_str!("../js/buffer.js"))
        .function("bufferFromString", buffer::from_string)
        .function("bufferToString", buffer::to_string)
}

/// `node:events`: EventEmitter (JavaScript only).
pub(crate) fn events() -> Unit {
    Unit::new("node:events")
        .node_module("events", include_str!("../js/events.js"))
        .node_module("internal/events_on", include_str!("../js/events_on.js"))
}

/// `node:async_hooks`: AsyncLocalStorage and AsyncResource on V8's
/// continuation-preserved embedder data.
pub(crate) fn async_hooks() -> Unit {
    Unit::new("node:async_hooks")
        .node_module("async_hooks", include_str!("../js/async_hooks.js"))
        .function("asyncContextGet", async_hooks::context_get)
        .function("asyncContextSet", async_hooks::context_set)
}

/// `node:path`, `node:path/posix` and `node:path/win32`: POSIX and
/// Windows paths (JavaScript only).
pub(crate) fn path() -> Unit {
    Unit::new("node:path")
        .node_module("path", include_str!("../js/path.js"))
        .node_module("internal/path_win32", include_str!("../js/path_win32.js"))
        .node_module("path/posix", "module.exports = require('node:path').posix;")
        .node_module("path/win32", "module.exports = require('node:path').win32;")
}

/// `node:string_decoder`: StringDecoder over `node:buffer`.
pub(crate) fn string_decoder() -> Unit {
    Unit::new("node:string_decoder")
        .node_module("string_decoder", include_str!("../js/string_decoder.js"))
}

/// `node:querystring`: parse and stringify (JavaScript only).
pub(crate) fn querystring() -> Unit {
    Unit::new("node:querystring").node_module("querystring", include_str!("../js/querystring.js"))
}

/// `node:util` and `node:util/types`: format, inspect, promisify, types,
/// MIMEType, parseArgs, parseEnv, diff, ...; the host tells a promise's state and a Proxy apart.
pub(crate) fn util() -> Unit {
    Unit::new("node:util")
        .node_module("util", include_str!("../js/util.js"))
        .node_module(
            "internal/util_inspect",
            include_str!("../js/util_inspect.js"),
        )
        .node_module("internal/util_mime", include_str!("../js/util_mime.js"))
        .node_module("internal/util_args", include_str!("../js/util_args.js"))
        .node_module("internal/util_env", include_str!("../js/util_env.js"))
        .node_module("internal/util_diff", include_str!("../js/util_diff.js"))
        .node_module("internal/util_errors", include_str!("../js/util_errors.js"))
        .function("utilPromiseState", util::promise_state)
        .function("utilPromiseResult", util::promise_result)
        .function("utilIsProxy", util::is_proxy)
        .function("utilProxyDetails", util::proxy_details)
        .function("utilFunctionKind", util::function_kind)
        .node_module("util/types", "module.exports = require('node:util').types;")
        .node_module("sys", "module.exports = require('node:util');")
}

/// `node:process`: workerd's `process`, its `env` from the Worker's text
/// bindings when its settings say so; the `process` global under
/// nodejs_compat_v2.
pub(crate) fn process() -> Unit {
    Unit::new("node:process")
        .node_module("process", include_str!("../js/process.js"))
        .function("processEnv", process::process_env)
}

/// `node:url`: WHATWG URL, file: URL helpers, legacy parse/format/resolve.
pub(crate) fn url() -> Unit {
    Unit::new("node:url").node_module("url", include_str!("../js/url.js"))
}

/// `node:diagnostics_channel`: channels and tracing channels.
pub(crate) fn diagnostics_channel() -> Unit {
    Unit::new("node:diagnostics_channel").node_module(
        "diagnostics_channel",
        include_str!("../js/diagnostics_channel.js"),
    )
}

/// `node:crypto`: hashes, HMAC, random values, PBKDF2, AES ciphers, key
/// objects, signatures, X.509 certificates and `webcrypto`, on the crypto unit's hashers, keys
/// and crates (`crypto.rs`, `crypto_keys.rs`).
pub(crate) fn crypto() -> Unit {
    Unit::new("node:crypto")
        .node_module("crypto", include_str!("../js/crypto.js"))
        .node_module(
            "internal/crypto_cipher",
            include_str!("../js/crypto_cipher.js"),
        )
        .function("nodeCipherInfo", crypto_cipher::cipher_info)
        .function("nodeCipherNames", crypto_cipher::cipher_names)
        .function("nodeCipherNew", crypto_cipher::cipher_new)
        .function("nodeCipherUpdate", crypto_cipher::cipher_update)
        .function("nodeCipherFinal", crypto_cipher::cipher_final)
        .function("nodeCipherSetTag", crypto_cipher::cipher_set_tag)
        .function("nodeCipherPadding", crypto_cipher::cipher_padding)
        .function("nodeCipherCcm", crypto_cipher::cipher_ccm)
        .function("hmacNew", crypto::hmac_new)
        .function("digestCopy", crypto::digest_copy)
        .function("pbkdf2Sync", crypto::pbkdf2_sync)
        .function("scryptSync", crypto::scrypt_sync)
        .node_module("internal/crypto_keys", include_str!("../js/crypto_keys.js"))
        .function("nodeKeyImport", crypto_keys::key_import)
        .function("nodeKeyPublic", crypto_keys::key_public)
        .function("nodeKeyExport", crypto_keys::key_export)
        .function("nodeRsaGenerateSync", crypto_keys::rsa_generate_sync)
        .function("nodeEcdsaSignature", crypto_keys::ecdsa_signature)
        .function("nodeRsaPkcs1", crypto_keys::rsa_pkcs1)
        .function("nodeRsaRaw", crypto_rsa::rsa_raw)
        .function("nodeSpkac", crypto_spkac::spkac)
        .node_module("internal/crypto_dh", include_str!("../js/crypto_dh.js"))
        .function("nodeDhNew", crypto_dh::dh_new)
        .function("nodeDhGenerate", crypto_dh::dh_generate)
        .function("nodeDhGet", crypto_dh::dh_get)
        .function("nodeDhSetKey", crypto_dh::dh_set_key)
        .function("nodeDhGenerateKeys", crypto_dh::dh_generate_keys)
        .function("nodeDhCompute", crypto_dh::dh_compute)
        .node_module(
            "internal/crypto_prime",
            include_str!("../js/crypto_prime.js"),
        )
        .function("nodePrimeCheck", crypto_prime::prime_check)
        .function("nodePrimeGenerate", crypto_prime::prime_generate)
        .node_module("internal/crypto_x509", include_str!("../js/crypto_x509.js"))
        .function("nodeX509Parse", crypto_x509::x509_parse)
        .function("nodeX509Check", crypto_x509::x509_check)
        .function("nodeX509Issued", crypto_x509::x509_issued)
}

/// `node:zlib`: gzip, deflate, raw deflate and brotli, sync, callback and
/// stream forms, on the compression unit's codecs; `crc32`.
pub(crate) fn zlib() -> Unit {
    Unit::new("node:zlib")
        .node_module("zlib", include_str!("../js/zlib.js"))
        .function("zlibCrc32", zlib::crc32)
}

/// `node:stream` and its parts: `stream/promises`, `stream/web`,
/// `stream/consumers` (JavaScript only).
pub(crate) fn stream() -> Unit {
    Unit::new("node:stream")
        .node_module("stream", include_str!("../js/stream.js"))
        .node_module(
            "stream/promises",
            "module.exports = require('node:stream').promises;",
        )
        .node_module("stream/web", include_str!("../js/stream_web.js"))
        .node_module(
            "stream/consumers",
            include_str!("../js/stream_consumers.js"),
        )
        .node_modules(&STREAM_LEGACY)
}

/// `node:assert` and `node:assert/strict` (JavaScript only).
pub(crate) fn assert() -> Unit {
    Unit::new("node:assert")
        .node_module("assert", include_str!("../js/assert.js"))
        .node_module(
            "assert/strict",
            "module.exports = require('node:assert').strict;",
        )
}

/// `node:timers` and `node:timers/promises` over the runtime's timers
/// (JavaScript only).
pub(crate) fn timers() -> Unit {
    Unit::new("node:timers")
        .node_module("timers", include_str!("../js/timers.js"))
        .node_module(
            "timers/promises",
            "module.exports = require('node:timers').promises;",
        )
}

/// `node:console`: the runtime's console under Node's module name, with
/// Node's `Console` class.
pub(crate) fn console() -> Unit {
    Unit::new("node:console").node_module("console", include_str!("../js/console.js"))
}

/// `node:os` and the legacy `node:constants` (JavaScript only: os's,
/// fs's and crypto's constants).
pub(crate) fn os() -> Unit {
    Unit::new("node:os")
        .node_module("os", include_str!("../js/os.js"))
        .node_module(
            "constants",
            "const os = require('node:os').constants; module.exports = { ...os.dlopen, ...os.errno, \
             ...os.priority, ...os.signals, ...require('node:fs').constants, \
             ...require('node:crypto').constants };",
        )
}

/// `node:module`: createRequire for built-ins, builtinModules, isBuiltin.
pub(crate) fn module() -> Unit {
    Unit::new("node:module").node_module("module", include_str!("../js/module.js"))
}

/// `node:fs` and `node:fs/promises`: workerd's in-memory file system
/// (`/bundle` the Worker's modules, read-only; `/tmp` per request; `/dev`).
pub(crate) fn fs() -> Unit {
    Unit::new("node:fs")
        .node_module("fs", include_str!("../js/fs.js"))
        .function("fsContext", fs::context)
        .function("fsBundleList", fs::bundle_list)
        .function("fsBundleRead", fs::bundle_read)
        .node_module(
            "fs/promises",
            "module.exports = require('node:fs').promises;",
        )
}

/// `node:http`, `node:https`: Agent, data and the client over the Worker's
/// fetch (`http_client.js`); `node:http`'s server under its flag
/// (`http_server.js`, served through `cloudflare:node`); `node:http2`
/// importable.
pub(crate) fn http() -> Unit {
    Unit::new("node:http")
        .node_module("http", include_str!("../js/http.js"))
        .node_module("internal/http_client", include_str!("../js/http_client.js"))
        .node_module("internal/http_server", include_str!("../js/http_server.js"))
        .function("nodeHttpServer", http::server_enabled)
        .node_module("https", include_str!("../js/https.js"))
        .node_module("http2", include_str!("../js/http2.js"))
        .node_module("internal/http_legacy", include_str!("../js/http_legacy.js"))
        .node_modules(&HTTP_LEGACY)
}

/// Node's old internal module names that packages still require
/// (`_http_agent`, ...), as workerd keeps them: parts of `node:http`.
const HTTP_LEGACY: [(&str, &str); 6] = [
    (
        "_http_agent",
        "module.exports = require('node:internal/http_legacy').agent;",
    ),
    (
        "_http_client",
        "module.exports = require('node:internal/http_legacy').client;",
    ),
    (
        "_http_common",
        "module.exports = require('node:internal/http_legacy').common;",
    ),
    (
        "_http_incoming",
        "module.exports = require('node:internal/http_legacy').incoming;",
    ),
    (
        "_http_outgoing",
        "module.exports = require('node:internal/http_legacy').outgoing;",
    ),
    (
        "_http_server",
        "module.exports = require('node:internal/http_legacy').server;",
    ),
];

/// `node:stream`'s parts under their old module names (`_stream_readable`,
/// ...), as workerd keeps them; `_stream_wrap` is a stub with its own date.
const STREAM_LEGACY: [(&str, &str); 6] = [
    (
        "_stream_duplex",
        "module.exports = require('node:stream').Duplex;",
    ),
    (
        "_stream_passthrough",
        "module.exports = require('node:stream').PassThrough;",
    ),
    (
        "_stream_readable",
        "module.exports = require('node:stream').Readable;",
    ),
    (
        "_stream_transform",
        "module.exports = require('node:stream').Transform;",
    ),
    (
        "_stream_writable",
        "module.exports = require('node:stream').Writable;",
    ),
    (
        "_stream_wrap",
        "module.exports = require('node:internal/errors').stubClass('_stream_wrap.JSStreamSocket');",
    ),
];

/// `node:tls`'s parts under their old module names, as workerd keeps them.
const TLS_LEGACY: [(&str, &str); 2] = [
    (
        "_tls_common",
        "const tls = require('node:tls'); module.exports = { SecureContext: tls.SecureContext, \
         createSecureContext: tls.createSecureContext, translatePeerCertificate: (c) => c };",
    ),
    (
        "_tls_wrap",
        "const tls = require('node:tls'); module.exports = { TLSSocket: tls.TLSSocket, connect: tls.connect };",
    ),
];

/// `node:net` (Socket, connect, isIP and friends) and `node:tls`
/// (connect, TLSSocket), over `cloudflare:sockets`' `connect()`
/// (`isolane-bindings`' `tcp.rs`), as workerd builds them; no servers.
pub(crate) fn net() -> Unit {
    Unit::new("node:net")
        .node_module("net", include_str!("../js/net.js"))
        .node_module("tls", include_str!("../js/tls.js"))
        .node_modules(&TLS_LEGACY)
}

/// `node:dns` and `node:dns/promises`: lookups and queries asked of the
/// node's resolver (held to the egress policy, `dns::query`), or over
/// DNS-over-HTTPS, the Worker's own fetches, when the node names a server.
pub(crate) fn dns() -> Unit {
    Unit::new("node:dns")
        .node_module("dns", include_str!("../js/dns.js"))
        .function("nodeDnsServer", dns::server)
        .function("nodeDnsQuery", dns::query)
        .state::<dns::DnsState>()
        .node_module(
            "dns/promises",
            "module.exports = require('node:dns').promises;",
        )
}

/// `node:punycode`: RFC 3492 and Node's domain helpers (2025-12-04).
pub(crate) fn punycode() -> Unit {
    Unit::new("node:punycode")
        .node_module("punycode", include_str!("../js/punycode.js"))
        .function("punycodeEncode", punycode::encode)
        .function("punycodeDecode", punycode::decode)
}

/// `node:vm`: importable, nothing compiles at run time.
pub(crate) fn vm() -> Unit {
    Unit::new("node:vm").node_module("vm", include_str!("../js/vm.js"))
}

/// Node.js compatibility as the engine registers it: every `node:` built-in,
/// in the order of their units (which host functions come first).
pub fn family() -> Family {
    Family {
        name: "nodejs",
        fingerprint: env!("ISOLANE_NODEJS_FINGERPRINT"),
        units,
        js: &[],
    }
}

/// Node's built-in modules, one unit each.
fn units() -> Vec<Unit> {
    vec![
        internal_errors(),
        buffer(),
        events(),
        async_hooks(),
        path(),
        string_decoder(),
        querystring(),
        util(),
        process(),
        url(),
        diagnostics_channel(),
        crypto(),
        zlib(),
        stream(),
        assert(),
        timers(),
        console(),
        os(),
        module(),
        fs(),
        http(),
        net(),
        dns(),
        vm(),
        punycode(),
        child_process(),
        cluster(),
        dgram(),
        domain(),
        inspector(),
        perf_hooks(),
        readline(),
        repl(),
        sqlite(),
        trace_events(),
        tty(),
        v8(),
        wasi(),
        worker_threads(),
        test(),
    ]
}
