//! The router tested in process: the HTTP application as a function, in front
//! of fake runtime nodes that are real gRPC servers on loopback sockets; the
//! HTTP server on a real socket; and the watches against a real apiserver.
// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

mod apiserver;
mod binary;
mod calls;
mod fake_node;
mod overhead;
mod proxy;
mod server;
mod support;
mod tail;
mod worker_series;
