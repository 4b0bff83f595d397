//! Tracing setup and the admin server (/live, /ready, /metrics).
#![forbid(unsafe_code)]
