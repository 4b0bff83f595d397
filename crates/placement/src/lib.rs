//! Consistent placement of workers onto nodes and threads.
#![forbid(unsafe_code)]
