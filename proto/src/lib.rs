//! The wire contract between the router and runtime nodes.
//!
//! `proto/isolane/runtime/v1/runtime.proto` defines the `Runtime` gRPC
//! service: `Execute`, one HTTP request streamed both ways (a head, body
//! chunks, an end marker), and `Stats`, a node's load per thread. This crate
//! holds the Rust generated from it by tonic and prost — committed under
//! `src/gen/`, checked against the `.proto` by `tests/generated.rs`, and
//! regenerated with `cargo run -p isolane-proto --example protogen` — plus a
//! few hand-written helpers: [`call`], one call in HTTP terms and the only
//! code that encodes it as frames (an in-process node takes it as it is);
//! [`calls`], the node's side of the shared `Calls` stream; [`frame`];
//! [`outcome`]; and [`mtls`], the router↔node mutual TLS both
//! sides configure. The router composes the
//! [`runtime::v1::runtime_client::RuntimeClient`]; runtime nodes implement
//! [`runtime::v1::runtime_server::Runtime`] and serve [`health`] beside it.
#![forbid(unsafe_code)]

pub mod call;
pub mod calls;
pub mod frame;
pub mod mtls;
pub mod outcome;
pub mod socket;
pub mod status;

/// The `isolane.runtime` protobuf packages.
pub mod runtime {
    /// `isolane.runtime.v1`: generated messages, client and server.
    pub mod v1 {
        include!("gen/isolane.runtime.v1.rs");
    }
}

/// The standard gRPC health service (`grpc.health.v1`), re-exported so nodes
/// serve it and the router probes it with the same tonic version.
pub use tonic_health as health;

pub use runtime::v1::Outcome;
