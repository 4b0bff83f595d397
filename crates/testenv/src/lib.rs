//! A real local Kubernetes control plane (etcd + kube-apiserver) for tests.
#![forbid(unsafe_code)]
