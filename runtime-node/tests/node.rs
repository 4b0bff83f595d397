//! The runtime node's tests, in one binary (V8 links are expensive), one
//! module per concern under `tests/node/`:
//!
//! - `service`: the gRPC service against a real engine (real V8), bundles
//!   put straight into the index, over real local sockets;
//! - `apiserver`: the `isolane-node` binary against a real kube-apiserver
//!   (isolane-testenv): bundle Secrets in, Lease out, drain on SIGTERM;
//! - `mtls`: a node serving mutual TLS refuses every client but the router;
//! - `fairness`: slow readers of several namespaces cannot lock another
//!   namespace out of a thread (admission by namespace), and a flood of
//!   long turns delays a neighbour's request by about one turn;
//! - `calls`: bodyless calls on the shared `Calls` stream;
//! - `socket`: a Worker's WebSocket as the service's socket frames, and
//!   the drain closing it with 1012;
//! - `bench`: the listener-mode measurement behind docs/node.md (ignored;
//!   run it with `--release -- --ignored --nocapture bench`).

// Helpers outside `#[test]` functions unwrap too; this is test code.
#![allow(clippy::unwrap_used)]

#[path = "node/support.rs"]
mod support;

#[path = "node/apiserver.rs"]
mod apiserver;
#[path = "node/bench.rs"]
mod bench;
#[path = "node/calls.rs"]
mod calls;
#[path = "node/fairness.rs"]
mod fairness;
#[path = "node/mtls.rs"]
mod mtls;
#[path = "node/service.rs"]
mod service;
#[path = "node/socket.rs"]
mod socket;
#[path = "node/whole.rs"]
mod whole;
