//! The node-router wire contract (generated gRPC code).
#![forbid(unsafe_code)]
