//! Runs workers: pinned threads, V8 isolate pools, gRPC server, lease heartbeat.
#![forbid(unsafe_code)]
