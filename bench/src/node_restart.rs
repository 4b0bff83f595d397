//! Section 2's node restarts (issue 35, "a node ready faster after a
//! restart"): the node of the distributed cluster killed (SIGKILL, as a
//! crash) and started again at once with the same flags, alternately with
//! its startup snapshot cached on disk (the default folder, which its first
//! start wrote) and with an empty cache folder (it builds the snapshot, as
//! every start did before the cache). Each start is timed to its `/ready`
//! (V8 and the snapshot, one spare per thread, the listeners, its Lease
//! written, the bundles listed) and on to the first `200` through the
//! router (which learns the new endpoints from the Lease).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::cluster::Cluster;
use crate::report::{Table, Target};
use crate::servers::wait_ok_at;
use crate::stats::{fmt_us, percentile, us};

/// How long one start may take to answer.
const DEADLINE: Duration = Duration::from_secs(60);

/// The two ways a node starts.
const HOW: [&str; 2] = [
    "snapshot cached on disk",
    "snapshot built at start (empty cache folder)",
];

/// Spawn → `/ready` and spawn → first answer through the router, per way.
#[derive(Default)]
struct Starts {
    ready: [Vec<Duration>; 2],
    answer: [Vec<Duration>; 2],
}

/// Restarts the cluster's node `rounds` times each way, alternating; the
/// markdown of the measurement and its target.
pub async fn measure(
    cluster: &mut Cluster,
    work: &Path,
    rounds: usize,
) -> anyhow::Result<(String, Target)> {
    let mut starts = Starts::default();
    for round in 0..rounds {
        for (way, how) in HOW.iter().enumerate() {
            let extra = match way {
                0 => Vec::new(),
                _ => vec![
                    "--snapshot-cache-dir".to_owned(),
                    empty_dir(work, round)?.display().to_string(),
                ],
            };
            let (ready, answer) = restart(cluster, &extra)
                .await
                .with_context(|| format!("node restart {round}, {how}"))?;
            starts.ready[way].push(ready);
            starts.answer[way].push(answer);
        }
    }
    Ok((report(&starts, rounds), target(&starts)))
}

/// A folder that holds no snapshot.
fn empty_dir(work: &Path, round: usize) -> anyhow::Result<std::path::PathBuf> {
    let dir = work.join(format!("node-restart-no-snapshot-{round}"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// One restart: spawn → `/ready`, and spawn → first `200` through the
/// router (polled only once the node is ready, every millisecond).
async fn restart(cluster: &mut Cluster, extra: &[String]) -> anyhow::Result<(Duration, Duration)> {
    let started = Instant::now();
    cluster.restart_node(extra)?;
    let every = Duration::from_millis(1);
    wait_ok_at(cluster.node_admin, None, "/ready", DEADLINE, every)
        .await
        .context("the restarted node's /ready")?;
    let ready = started.elapsed();
    cluster.router.wait_ok(DEADLINE).await?;
    Ok((ready, started.elapsed()))
}

fn report(starts: &Starts, rounds: usize) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "A node restarted in place: the node above killed (SIGKILL, as a crash) and started \
         again at once with the same flags, {rounds} times each way, alternating: its startup \
         snapshot read from the cache folder its first start wrote, or built at start from an \
         empty one. Timed from the spawn to its `/ready` (V8, the snapshot, one spare isolate \
         per thread, the listeners, its Lease written, the bundles listed), and on to the first \
         `200` through the router, which learns the new endpoints from the Lease (polled every \
         millisecond once the node is ready).\n"
    );
    let mut table = Table::new(&[
        "node start",
        ">to /ready, p50",
        ">max",
        ">to the first answer through the router, p50",
        ">max",
    ]);
    for (way, how) in HOW.iter().enumerate() {
        let cell = |samples: &[Duration], p| fmt_us(us(percentile(samples, p)));
        table.row(vec![
            (*how).to_owned(),
            cell(&starts.ready[way], 0.5),
            cell(&starts.ready[way], 1.0),
            cell(&starts.answer[way], 0.5),
            cell(&starts.answer[way], 1.0),
        ]);
    }
    md.push_str(&table.render());
    md.push('\n');
    md
}

/// Issue 35: a node ready faster after a restart than when it builds its
/// snapshot.
fn target(starts: &Starts) -> Target {
    let p50 = |samples: &[Duration]| us(percentile(samples, 0.5));
    let (cached, built) = (p50(&starts.ready[0]), p50(&starts.ready[1]));
    Target::new(
        "a node ready faster after a restart: spawn → `/ready` with the snapshot cached < built \
         at start (issue 35)",
        format!(
            "{} vs {} ({:.2}×)",
            fmt_us(cached),
            fmt_us(built),
            cached / built
        ),
        cached < built,
    )
}
