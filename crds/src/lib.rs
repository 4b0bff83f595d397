//! The Worker custom resource.
#![forbid(unsafe_code)]
