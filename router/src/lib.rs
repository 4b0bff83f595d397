//! HTTP ingress, placement and gRPC client to runtime nodes.
#![forbid(unsafe_code)]
