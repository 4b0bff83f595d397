//! The engine against real V8: one test binary (V8 links are expensive), one
//! module per concern under `tests/engine/`. The APIs that left the core for
//! `isolane-web` have their tests there (`crates/web/tests/web.rs`), on these
//! helpers (`engine/support.rs`).

// Helpers outside `#[test]` functions unwrap too; this is test code.
#![allow(clippy::unwrap_used)]

#[path = "engine/support.rs"]
mod support;

#[path = "engine/basics.rs"]
mod basics;
#[path = "engine/code_cache.rs"]
mod code_cache;
#[path = "engine/crypto_pool.rs"]
mod crypto_pool;
#[path = "engine/durable_alarms.rs"]
mod durable_alarms;
#[path = "engine/durable_hosted.rs"]
mod durable_hosted;
#[path = "engine/durable_life.rs"]
mod durable_life;
#[path = "engine/durable_limits.rs"]
mod durable_limits;
#[path = "engine/durable_nodes.rs"]
mod durable_nodes;
#[path = "engine/durable_objects.rs"]
mod durable_objects;
#[path = "engine/durable_sql.rs"]
mod durable_sql;
#[path = "engine/durable_threads.rs"]
mod durable_threads;
#[path = "engine/egress.rs"]
mod egress;
#[path = "engine/fairness.rs"]
mod fairness;
#[path = "engine/garbage_buffers.rs"]
mod garbage_buffers;
#[path = "engine/globals.rs"]
mod globals;
#[path = "engine/kv.rs"]
mod kv;
#[path = "engine/limits.rs"]
mod limits;
#[path = "engine/logs.rs"]
mod logs;
#[path = "engine/modules.rs"]
mod modules;
#[path = "engine/node_buffer.rs"]
mod node_buffer;
#[path = "engine/node_buffer_checks.rs"]
mod node_buffer_checks;
#[path = "engine/node_crypto.rs"]
mod node_crypto;
#[path = "engine/node_crypto_ciphers.rs"]
mod node_crypto_ciphers;
#[path = "engine/node_crypto_dh.rs"]
mod node_crypto_dh;
#[path = "engine/node_crypto_keys.rs"]
mod node_crypto_keys;
#[path = "engine/node_crypto_pkcs8.rs"]
mod node_crypto_pkcs8;
#[path = "engine/node_crypto_prime.rs"]
mod node_crypto_prime;
#[path = "engine/node_dns.rs"]
mod node_dns;
#[path = "engine/node_events.rs"]
mod node_events;
#[path = "engine/node_found.rs"]
mod node_found;
#[path = "engine/node_fs.rs"]
mod node_fs;
#[path = "engine/node_handled.rs"]
mod node_handled;
#[path = "engine/node_http.rs"]
mod node_http;
#[path = "engine/node_http_server.rs"]
mod node_http_server;
#[path = "engine/node_imports.rs"]
mod node_imports;
#[path = "engine/node_path_win32.rs"]
mod node_path_win32;
#[path = "engine/node_require.rs"]
mod node_require;
#[path = "engine/node_stream.rs"]
mod node_stream;
#[path = "engine/node_stubs.rs"]
mod node_stubs;
#[path = "engine/node_timers.rs"]
mod node_timers;
#[path = "engine/node_util.rs"]
mod node_util;
#[path = "engine/node_util_hostile.rs"]
mod node_util_hostile;
#[path = "engine/node_x509.rs"]
mod node_x509;
#[path = "engine/node_zlib.rs"]
mod node_zlib;
#[path = "engine/pool_modes.rs"]
mod pool_modes;
#[path = "engine/rejections.rs"]
mod rejections;
#[path = "engine/scheduled.rs"]
mod scheduled;
#[path = "engine/service_bindings.rs"]
mod service_bindings;
#[path = "engine/service_rpc.rs"]
mod service_rpc;
#[path = "engine/service_stubs.rs"]
mod service_stubs;
#[path = "engine/service_worker.rs"]
mod service_worker;
#[path = "engine/signal.rs"]
mod signal;
#[path = "engine/sockets.rs"]
mod sockets;
#[path = "engine/spares.rs"]
mod spares;
#[path = "engine/streaming.rs"]
mod streaming;
#[path = "engine/tail.rs"]
mod tail;
#[path = "engine/tenants.rs"]
mod tenants;
#[path = "engine/websocket.rs"]
mod websocket;
#[path = "engine/websocket_late.rs"]
mod websocket_late;
#[path = "engine/websocket_out.rs"]
mod websocket_out;
