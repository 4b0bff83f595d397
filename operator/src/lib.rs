//! Reconciles Worker resources into bundles and status.
#![forbid(unsafe_code)]
