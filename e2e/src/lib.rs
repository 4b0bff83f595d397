//! End-to-end tests against a real kube-apiserver: the whole system, as users run it.
#![forbid(unsafe_code)]
