//! The test node's network: its name, its address on its bridge, the pods'
//! subnet and the cgroup every pod sits under.

/// The node's name (the kubelet's `--hostname-override`, kube-proxy's).
pub const NODE_NAME: &str = "isolane-test-node";
/// The node's address, on its bridge; the apiserver listens there too.
pub const NODE_IP: &str = "10.87.0.1";
/// The pods' network: one bridge, host-local addresses.
pub const POD_SUBNET: &str = "10.87.0.0/24";
pub(crate) const POD_PREFIX_LEN: u8 = 24;
pub(crate) const POD_RANGE_START: &str = "10.87.0.10";
/// The bridge's interface name.
pub const BRIDGE: &str = "isolane0";
/// Every pod's cgroup parent, in each cgroup hierarchy.
pub const CGROUP_ROOT: &str = "/isolane-test-node";
