//! The watches against a real apiserver.
