//! The `isolane-node` binary against a real kube-apiserver.
