//! The node's configuration files: containerd's, the CNI network's, the
//! kubelet's and kube-proxy's. Every path points into the test's directory, so
//! nothing is written to the host's own configuration.

use std::path::Path;

use super::{BRIDGE, CGROUP_ROOT, NODE_IP, NODE_NAME, POD_RANGE_START, POD_SUBNET};

/// Paths of the node's state, all under the test's directory.
#[derive(Debug, Clone)]
pub(crate) struct NodeDirs {
    pub(crate) containerd_config: std::path::PathBuf,
    pub(crate) containerd_socket: std::path::PathBuf,
    pub(crate) containerd_root: std::path::PathBuf,
    pub(crate) containerd_state: std::path::PathBuf,
    /// runc's state (`--root`) for containerd's shims.
    pub(crate) runc_root: std::path::PathBuf,
    pub(crate) cni_conf_dir: std::path::PathBuf,
    pub(crate) cni_ipam_dir: std::path::PathBuf,
    pub(crate) kubelet_root: std::path::PathBuf,
    pub(crate) kubelet_config: std::path::PathBuf,
    pub(crate) kube_proxy_config: std::path::PathBuf,
}

impl NodeDirs {
    pub(crate) fn new(dir: &Path) -> Self {
        let node = dir.join("node");
        Self {
            containerd_config: node.join("containerd.toml"),
            containerd_socket: node.join("containerd.sock"),
            containerd_root: node.join("containerd-root"),
            containerd_state: node.join("containerd-state"),
            runc_root: node.join("runc"),
            cni_conf_dir: node.join("cni"),
            cni_ipam_dir: node.join("cni-ipam"),
            kubelet_root: node.join("kubelet"),
            kubelet_config: node.join("kubelet.yaml"),
            kube_proxy_config: node.join("kube-proxy.yaml"),
        }
    }
}

/// containerd 1.6's config (version 2): its own root, state and socket; the
/// CRI plugin with the project's pause image, overlayfs, runc with its own
/// state directory and cgroupfs, network namespaces under the state directory,
/// and no negative oom_score_adj (see below).
pub(crate) fn containerd(dirs: &NodeDirs, pause_image: &str) -> String {
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_image}"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # Test machines may lack CAP_SYS_RESOURCE (a container's root), without which
  # runc cannot give the sandbox the CRI's oom_score_adj of -998; keep every
  # container's at or above containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{runc_root}"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni_conf_dir}"
"#,
        root = dirs.containerd_root.display(),
        state = dirs.containerd_state.display(),
        socket = dirs.containerd_socket.display(),
        runc_root = dirs.runc_root.display(),
        cni_conf_dir = dirs.cni_conf_dir.display(),
    )
}

/// One bridge network: the bridge holds the node's address (the apiserver
/// listens there), pods get addresses from `POD_RANGE_START` on and a default
/// route through the node (ClusterIPs are outside the pod subnet).
pub(crate) fn cni(dirs: &NodeDirs) -> String {
    format!(
        r#"{{
  "cniVersion": "0.4.0",
  "name": "isolane-test",
  "plugins": [
    {{
      "type": "bridge",
      "bridge": "{BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {{
        "type": "host-local",
        "dataDir": "{ipam}",
        "ranges": [[{{"subnet": "{POD_SUBNET}", "rangeStart": "{POD_RANGE_START}", "gateway": "{NODE_IP}"}}]],
        "routes": [{{"dst": "0.0.0.0/0"}}]
      }}
    }}
  ]
}}
"#,
        ipam = dirs.cni_ipam_dir.display(),
    )
}

/// The kubelet: cgroupfs, no QoS cgroup tree (every pod under `CGROUP_ROOT`,
/// which teardown removes), no eviction or image GC (the machine is shared),
/// its API on 127.0.0.1 only.
pub(crate) fn kubelet(dirs: &NodeDirs, port: u16, pod_logs: &Path) -> String {
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: {port}
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupRoot: {CGROUP_ROOT}
containerRuntimeEndpoint: unix://{socket}
failSwapOn: false
failCgroupV1: false
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
maxPods: 30
oomScoreAdj: 0
podLogsDir: {pod_logs}
"#,
        socket = dirs.containerd_socket.display(),
        pod_logs = pod_logs.display(),
    )
}

/// kube-proxy in iptables mode; it changes no sysctl (no conntrack sizing or
/// timeouts, no route_localnet for localhost NodePorts).
pub(crate) fn kube_proxy(kubeconfig: &Path, healthz_port: u16, metrics_port: u16) -> String {
    format!(
        r#"apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
hostnameOverride: {NODE_NAME}
bindAddress: {NODE_IP}
mode: iptables
clusterCIDR: {POD_SUBNET}
healthzBindAddress: 127.0.0.1:{healthz_port}
metricsBindAddress: 127.0.0.1:{metrics_port}
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
oomScoreAdj: 0
"#,
        kubeconfig = kubeconfig.display(),
    )
}
