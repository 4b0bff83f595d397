//! The host state a node makes, and its removal: the bridge, the containers'
//! processes, mounts and cgroups, and the iptables chains of kube-proxy and the
//! kubelet. One node runs on a machine at a time (a lock file): iptables and the
//! bridge are the host's.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tracing::{debug, warn};

use super::{BRIDGE, CGROUP_ROOT, NODE_IP, POD_PREFIX_LEN};
use crate::Error;

/// Held while a node runs: one node per machine (in the temporary directory).
const LOCK_FILE: &str = "isolane-testenv-node.lock";
/// Where the kubelet links each container's log (a fixed path in the kubelet).
const CONTAINER_LOG_LINKS: &str = "/var/log/containers";
/// Host directories the kubelet and containerd write to whatever their
/// configuration says: the device-plugin socket directory, the container log
/// links, the shims' sockets and ctr's fifos. What a node adds there is removed.
const FIXED_DIRS: [&str; 6] = [
    "/var/lib/kubelet",
    CONTAINER_LOG_LINKS,
    "/var/log/pods",
    "/run/containerd",
    "/run/containerd/s",
    "/run/containerd/fifo",
];

/// What [`FIXED_DIRS`] held before the node started.
#[derive(Debug)]
pub(crate) struct FixedDirs(Vec<(PathBuf, Option<BTreeSet<OsString>>)>);

impl FixedDirs {
    pub(crate) fn snapshot() -> Self {
        Self(
            FIXED_DIRS
                .iter()
                .map(|dir| {
                    let entries = std::fs::read_dir(dir)
                        .ok()
                        .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect());
                    (PathBuf::from(dir), entries)
                })
                .collect(),
        )
    }

    /// Removes what was added since the snapshot (a directory that did not
    /// exist, or the new entries of one that did).
    pub(crate) fn restore(&self) {
        for (dir, before) in &self.0 {
            let remove = |path: &Path| {
                let result = if path.is_dir() {
                    std::fs::remove_dir_all(path)
                } else {
                    std::fs::remove_file(path)
                };
                if let Err(error) = result {
                    debug!(path = %path.display(), %error, "could not remove");
                }
            };
            match before {
                None if dir.exists() => remove(dir),
                None => {}
                Some(before) => {
                    let Ok(entries) = std::fs::read_dir(dir) else {
                        continue;
                    };
                    for entry in entries.flatten() {
                        if !before.contains(&entry.file_name()) {
                            remove(&entry.path());
                        }
                    }
                }
            }
        }
    }
}
/// The iptables tables kube-proxy and the kubelet write chains into.
const TABLES: [&str; 3] = ["filter", "nat", "mangle"];

/// The machine-wide lock; released when dropped.
#[derive(Debug)]
pub(crate) struct NodeLock {
    _file: File,
}

impl NodeLock {
    /// Waits until no other node runs on this machine.
    pub(crate) fn acquire() -> Result<Self, Error> {
        let path = std::env::temp_dir().join(LOCK_FILE);
        let error = |source| Error::WriteFile {
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(error)?;
        file.lock().map_err(error)?;
        Ok(Self { _file: file })
    }
}

/// Runs a host command that must succeed.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<(), Error> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| Error::HostCommand {
            command: format!("{program} {}", args.join(" ")),
            detail: source.to_string(),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::HostCommand {
            command: format!("{program} {}", args.join(" ")),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// Runs a cleanup command; a failure is logged, not returned.
fn run_quietly(program: &str, args: &[&str]) -> Option<String> {
    match Command::new(program).args(args).output() {
        Ok(output) if output.status.success() => {
            Some(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        Ok(output) => {
            debug!(program, ?args, stderr = %String::from_utf8_lossy(&output.stderr), "cleanup command failed");
            None
        }
        Err(error) => {
            debug!(program, ?args, %error, "cleanup command did not run");
            None
        }
    }
}

/// Creates the node's bridge with the node's address, before the apiserver
/// binds that address. A bridge left by a killed test is replaced.
pub(crate) fn create_bridge() -> Result<(), Error> {
    let _ = run_quietly("ip", &["link", "del", BRIDGE]);
    run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
    let address = format!("{NODE_IP}/{POD_PREFIX_LEN}");
    run("ip", &["addr", "add", &address, "dev", BRIDGE])?;
    run("ip", &["link", "set", BRIDGE, "up"])
}

/// Removes everything the node made outside `dir`, and the mounts inside it.
/// Call after the node's own processes (kubelet, kube-proxy, containerd) are dead.
pub(crate) fn clean(dir: &Path, runc_root: &Path, kube_proxy: Option<&Path>, fixed: &FixedDirs) {
    stop_containers(runc_root);
    kill_processes_matching(dir, None);
    unmount_under(dir);
    remove_links_into(Path::new(CONTAINER_LOG_LINKS), dir);
    if let Some(kube_proxy) = kube_proxy {
        // kube-proxy's own cleanup of its iptables chains.
        let _ = Command::new(kube_proxy).arg("--cleanup").output();
    }
    delete_kube_chains();
    remove_cgroups();
    let _ = run_quietly("ip", &["link", "del", BRIDGE]);
    fixed.restore();
}

/// Removes the symlinks in `links` that point into `dir`.
fn remove_links_into(links: &Path, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(links) else {
        return;
    };
    for entry in entries.flatten() {
        if std::fs::read_link(entry.path()).is_ok_and(|target| target.starts_with(dir)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes what the node of a killed test left: its containers, shims and
/// mounts (in any `isolane-testenv-*` directory's `node/`), the `KUBE-*`
/// chains, the pods' cgroups and the bridge. Only shims are killed: other
/// control planes' etcd and apiservers name their directories too.
pub(crate) fn clean_stale(kube_proxy: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let node = entry.path().join("node");
        let is_test_dir = entry
            .file_name()
            .to_string_lossy()
            .starts_with("isolane-testenv-");
        if !is_test_dir || !node.is_dir() {
            continue;
        }
        stop_containers(&node.join("runc"));
        kill_processes_matching(&node, Some("containerd-shim"));
        unmount_under(&node);
    }
    if let Some(kube_proxy) = kube_proxy {
        let _ = Command::new(kube_proxy).arg("--cleanup").output();
    }
    delete_kube_chains();
    remove_cgroups();
    let _ = run_quietly("ip", &["link", "del", BRIDGE]);
}

/// Kills and deletes every container runc knows in containerd's namespaces.
fn stop_containers(runc_root: &Path) {
    let Ok(namespaces) = std::fs::read_dir(runc_root) else {
        return;
    };
    for namespace in namespaces.flatten() {
        let root = namespace.path();
        let root = root.to_string_lossy();
        let Some(list) = run_quietly("runc", &["--root", &root, "list", "-q"]) else {
            continue;
        };
        for id in list.lines().filter(|id| !id.is_empty()) {
            let _ = run_quietly("runc", &["--root", &root, "delete", "--force", id]);
        }
    }
}

/// SIGKILLs every process whose command line names `dir` (and `program`, when
/// given): containerd's shims, which outlive containerd.
fn kill_processes_matching(dir: &Path, program: Option<&str>) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if u32::try_from(pid).is_ok_and(|pid| pid == own) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains(&needle) && program.is_none_or(|program| cmdline.contains(program)) {
            debug!(pid, "killing a node process left behind");
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Unmounts (lazily) every mount point under `dir`, deepest first: overlay
/// roots, shm, network namespaces, the kubelet's secret and token volumes.
fn unmount_under(dir: &Path) {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let prefix = dir.to_string_lossy().into_owned();
    let mut points: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        // mountinfo escapes spaces as \040; the test's paths have none.
        .filter(|point| point.starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    points.sort_by_key(|point| std::cmp::Reverse(point.len()));
    points.dedup();
    for point in points {
        if run_quietly("umount", &["--lazy", &point]).is_none() {
            warn!(point, "failed to unmount");
        }
    }
}

/// The chains named `KUBE-*` in `table`, and the rules elsewhere that jump to them.
fn kube_rules(iptables: &str, table: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let Some(rules) = run_quietly(iptables, &["-w", "-t", table, "-S"]) else {
        return (Vec::new(), Vec::new());
    };
    let mut chains = Vec::new();
    let mut jumps = Vec::new();
    for line in rules.lines() {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        match words.first().map(String::as_str) {
            Some("-N") if words.get(1).is_some_and(|chain| chain.starts_with("KUBE-")) => {
                chains.push(words[1].clone());
            }
            Some("-A")
                if !words.get(1).is_some_and(|chain| chain.starts_with("KUBE-"))
                    && words.iter().any(|word| word.starts_with("KUBE-")) =>
            {
                jumps.push(words[1..].to_vec());
            }
            _ => {}
        }
    }
    (chains, jumps)
}

/// Deletes what is left of the `KUBE-*` chains in every table, IPv4 and IPv6.
fn delete_kube_chains() {
    for iptables in ["iptables", "ip6tables"] {
        for table in TABLES {
            let (chains, jumps) = kube_rules(iptables, table);
            for rule in jumps {
                let mut args = vec!["-w", "-t", table, "-D"];
                args.extend(rule.iter().map(String::as_str));
                let _ = run_quietly(iptables, &args);
            }
            for chain in &chains {
                let _ = run_quietly(iptables, &["-w", "-t", table, "-F", chain]);
            }
            for chain in &chains {
                let _ = run_quietly(iptables, &["-w", "-t", table, "-X", chain]);
            }
        }
    }
}

/// The `KUBE-*` chains left in any table.
fn kube_chains_left() -> Vec<String> {
    let mut left = Vec::new();
    for iptables in ["iptables", "ip6tables"] {
        for table in TABLES {
            let (chains, _) = kube_rules(iptables, table);
            left.extend(
                chains
                    .into_iter()
                    .map(|chain| format!("{iptables} -t {table} {chain}")),
            );
        }
    }
    left
}

/// The cgroup directories of `CGROUP_ROOT` in every hierarchy.
pub(crate) fn cgroup_dirs() -> Vec<PathBuf> {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return Vec::new();
    };
    let root = CGROUP_ROOT.trim_start_matches('/');
    let mut dirs: Vec<PathBuf> = hierarchies
        .flatten()
        .map(|hierarchy| hierarchy.path().join(root))
        .filter(|dir| dir.is_dir())
        .collect();
    let top = Path::new("/sys/fs/cgroup").join(root);
    if top.is_dir() && !dirs.contains(&top) {
        dirs.push(top);
    }
    dirs
}

/// Removes the pods' cgroups, children first (cgroup directories are removed
/// with rmdir, and only once their processes are gone).
fn remove_cgroups() {
    for dir in cgroup_dirs() {
        remove_cgroup_tree(&dir);
    }
}

fn remove_cgroup_tree(dir: &Path) {
    if let Ok(children) = std::fs::read_dir(dir) {
        for child in children.flatten() {
            if child.file_type().is_ok_and(|kind| kind.is_dir()) {
                remove_cgroup_tree(&child.path());
            }
        }
    }
    if let Err(error) = std::fs::remove_dir(dir) {
        warn!(dir = %dir.display(), %error, "failed to remove a cgroup");
    }
}

/// What a node left on this machine: the bridge, `KUBE-*` chains, pod
/// cgroups, mounts of a test directory. Empty after a clean teardown.
pub fn leftovers() -> Vec<String> {
    let mut left = Vec::new();
    if Path::new("/sys/class/net").join(BRIDGE).exists() {
        left.push(format!("bridge {BRIDGE}"));
    }
    left.extend(kube_chains_left());
    left.extend(
        cgroup_dirs()
            .into_iter()
            .map(|dir| format!("cgroup {}", dir.display())),
    );
    if let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") {
        let tmp = std::env::temp_dir().join("isolane-testenv-");
        let tmp = tmp.to_string_lossy();
        left.extend(
            mountinfo
                .lines()
                .filter_map(|line| line.split(' ').nth(4))
                .filter(|point| point.starts_with(tmp.as_ref()))
                .map(|point| format!("mount {point}")),
        );
    }
    left
}
