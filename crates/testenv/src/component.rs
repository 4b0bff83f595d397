//! Which part of the control plane a process is.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Etcd,
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Containerd,
    Kubelet,
    KubeProxy,
    Postgres,
    Registry,
    Collector,
    Pebble,
    PebbleDns,
    CertManager,
    SeaweedFs,
    Traefik,
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Etcd => "etcd",
            Self::KubeApiserver => "kube-apiserver",
            Self::KubeControllerManager => "kube-controller-manager",
            Self::KubeScheduler => "kube-scheduler",
            Self::Containerd => "containerd",
            Self::Kubelet => "kubelet",
            Self::KubeProxy => "kube-proxy",
            Self::Postgres => "postgres",
            Self::Registry => "registry",
            Self::Collector => "otelcol",
            Self::Pebble => "pebble",
            Self::PebbleDns => "pebble-challtestsrv",
            Self::CertManager => "cert-manager",
            Self::SeaweedFs => "seaweedfs",
            Self::Traefik => "traefik",
        })
    }
}
