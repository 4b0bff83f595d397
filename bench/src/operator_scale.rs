//! Comparison 7: the operator bringing N Workers to Ready. For each N, a fresh
//! control plane (etcd + kube-apiserver) and a fresh operator process from
//! `target/release`; the Workers are applied with kube-rs, 16 at a time; a
//! watch counts them Ready ([`probe::ready_count`]). Then the operator is
//! stopped and started again: the time until it has reconciled every Worker
//! once more, and the writes that took. Beside each row, where the time
//! went: the apiserver's writes by resource and each process's CPU seconds.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use isolane_crds::Worker;
use isolane_testenv::workers::{apply, hello_script, inline_worker};
use isolane_testenv::{ControlPlane, Process};
use kube::Api;

use crate::cluster::{self, NAMESPACE};
use crate::report::{Section, Table, Target};
use crate::stats::fmt_rate;

mod probe;

use probe::{Writes, cpu_seconds};

/// How many Workers, and how long to wait for each count.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The release `isolane-operator`.
    pub operator: std::path::PathBuf,
    pub counts: Vec<usize>,
    pub deadline: Duration,
}

/// The operator's CPU seconds beside the control plane's.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    operator: f64,
    apiserver: f64,
    etcd: f64,
}

impl Cpu {
    fn read(control_plane: &ControlPlane, operator: &Process) -> Self {
        let ids = control_plane.process_ids();
        let of = |index: usize| ids.get(index).copied().map_or(0.0, cpu_seconds);
        Self {
            operator: cpu_seconds(operator.pid()),
            etcd: of(0),
            apiserver: of(1),
        }
    }

    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            operator: self.operator - before.operator,
            apiserver: self.apiserver - before.apiserver,
            etcd: self.etcd - before.etcd,
        }
    }

    fn describe(self) -> String {
        format!(
            "operator {:.1} s, kube-apiserver {:.1} s, etcd {:.1} s",
            self.operator, self.apiserver, self.etcd
        )
    }
}

/// An operator restarted over Workers it had made Ready.
struct Restart {
    /// Until the new operator had reconciled every Worker.
    reconciled: Option<Duration>,
    writes: Writes,
    peak_kib: u64,
}

struct Outcome {
    count: usize,
    applied: Duration,
    ready: usize,
    all_ready: Option<Duration>,
    idle_kib: u64,
    peak_kib: u64,
    writes: Writes,
    cpu: Cpu,
    restart: Restart,
}

pub async fn run(plan: &Plan, dir: &Path) -> anyhow::Result<Section> {
    let mut outcomes = Vec::new();
    for &count in &plan.counts {
        let outcome = one(
            &plan.operator,
            count,
            plan.deadline,
            &dir.join(format!("operator-{count}")),
        )
        .await?;
        outcomes.push(outcome);
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 7. Operator: Workers to Ready\n\n\
         For each count a fresh etcd + kube-apiserver (isolane-testenv) and the release \
         operator as a process; Workers (inline hello script, one route each) applied by \
         server-side apply, 16 in flight; time from the first apply until every Worker reports \
         `Ready=True` for its generation (counted from a watch of the Workers, deadline {:.0} s). \
         etcd, the apiserver and the operator share the machine's 2 cores. Peak memory is the \
         operator's `VmHWM`. Then the operator is stopped (SIGTERM) and started again: the time \
         from its start until it has reconciled every Worker once, and its writes to Workers \
         and bundle Secrets meanwhile (none when nothing changed; host-owner ConfigMaps the \
         stopped operator had not recorded yet are written on and not counted).\n",
        plan.deadline.as_secs_f64()
    );
    md.push_str(&table(&outcomes));
    md.push_str("\nWhere the time went, from the first apply until all were Ready: the apiserver's writes by resource (its `apiserver_request_total`; the bench's own applies are the `workers` APPLYs, one per Worker) and each process's CPU seconds.\n\n");
    for o in &outcomes {
        let _ = writeln!(
            md,
            "- {} Workers: writes {}; CPU {}.",
            o.count,
            o.writes.describe(),
            o.cpu.describe()
        );
    }
    md.push('\n');
    Ok(Section {
        markdown: md,
        targets: outcomes.iter().map(target).collect(),
    })
}

fn table(outcomes: &[Outcome]) -> String {
    let mut table = Table::new(&[
        ">Workers",
        ">applied in",
        ">all Ready after",
        ">Workers Ready / s",
        ">operator peak RSS",
        ">operator RSS before",
        ">restart: all reconciled after",
        ">restart: Worker and bundle writes",
        ">restart: peak RSS",
    ]);
    for o in outcomes {
        table.row(vec![
            o.count.to_string(),
            format!("{:.1} s", o.applied.as_secs_f64()),
            match o.all_ready {
                Some(d) => format!("{:.1} s", d.as_secs_f64()),
                None => format!("not all: {}/{} by the deadline", o.ready, o.count),
            },
            o.all_ready
                .map_or("–".into(), |d| fmt_rate(o.count as f64 / d.as_secs_f64())),
            format!("{:.1} MiB", o.peak_kib as f64 / 1024.0),
            format!("{:.1} MiB", o.idle_kib as f64 / 1024.0),
            o.restart
                .reconciled
                .map_or("not by the deadline".into(), |d| {
                    format!("{:.1} s", d.as_secs_f64())
                }),
            o.restart.writes.of_workers_and_bundles().to_string(),
            format!("{:.1} MiB", o.restart.peak_kib as f64 / 1024.0),
        ]);
    }
    table.render()
}

fn target(o: &Outcome) -> Target {
    let goal = if o.count >= 10_000 {
        format!(
            "{} Workers Ready < 60 s, operator peak < 256 MiB, a restart rewrites nothing",
            o.count
        )
    } else {
        format!("{} Workers Ready (no numeric target; reported)", o.count)
    };
    let met = match o.all_ready {
        Some(d) if o.count >= 10_000 => {
            d < Duration::from_secs(60)
                && o.peak_kib.max(o.restart.peak_kib) < 256 * 1024
                && o.restart.writes.of_workers_and_bundles() == 0
        }
        Some(_) => true,
        None => false,
    };
    let measured = match o.all_ready {
        Some(d) => format!(
            "{:.1} s, operator peak {:.0} MiB; restart: {} writes",
            d.as_secs_f64(),
            o.peak_kib.max(o.restart.peak_kib) as f64 / 1024.0,
            o.restart.writes.of_workers_and_bundles()
        ),
        None => format!("only {}/{} before the deadline", o.ready, o.count),
    };
    Target::new(goal, measured, met)
}

async fn one(
    binary: &Path,
    count: usize,
    deadline: Duration,
    dir: &Path,
) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    let (control_plane, mut operator) =
        cluster::control_plane_with_operator(binary, dir, &[]).await?;
    let idle_kib = operator.peak_rss_kib().unwrap_or(0);
    let client = control_plane.client();
    let workers: Api<Worker> = Api::namespaced(client.clone(), NAMESPACE);
    let mut ready_count = probe::ready_count(workers);
    let (writes_before, cpu_before) = (
        Writes::read(&client).await?,
        Cpu::read(&control_plane, &operator),
    );
    let started = Instant::now();
    futures::stream::iter(0..count)
        .for_each_concurrent(16, |i| {
            let client = client.clone();
            async move {
                let name = format!("w{i:05}");
                let host = format!("{name}.bench.test");
                apply(
                    &client,
                    NAMESPACE,
                    &inline_worker(&name, &hello_script(&name), &[&host]),
                )
                .await;
            }
        })
        .await;
    let applied = started.elapsed();
    let left = deadline.saturating_sub(started.elapsed());
    let all_ready = tokio::time::timeout(left, ready_count.count.wait_for(|ready| *ready >= count))
        .await
        .is_ok_and(|seen| seen.is_ok())
        .then(|| started.elapsed());
    let ready = *ready_count.count.borrow();
    let peak_kib = operator.peak_rss_kib().unwrap_or(0);
    let writes = Writes::read(&client).await?.since(&writes_before);
    let cpu = Cpu::read(&control_plane, &operator).since(cpu_before);
    eprintln!(
        "operator: {count} Workers applied in {:.1} s, {ready} Ready after {:.1} s, peak {peak_kib} KiB\n  writes: {}\n  CPU: {}",
        applied.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        writes.describe(),
        cpu.describe()
    );
    operator.terminate(Duration::from_secs(10));
    let restart = restart(binary, &control_plane, count, deadline, dir).await?;
    drop(ready_count);
    drop(control_plane);
    Ok(Outcome {
        count,
        applied,
        ready,
        all_ready,
        idle_kib,
        peak_kib,
        writes,
        cpu,
        restart,
    })
}

/// A new operator over the `count` Ready Workers: until it has reconciled
/// each once, and what it wrote meanwhile.
async fn restart(
    binary: &Path,
    control_plane: &ControlPlane,
    count: usize,
    deadline: Duration,
    dir: &Path,
) -> anyhow::Result<Restart> {
    let client = control_plane.client();
    let before = Writes::read(&client).await?;
    let started = Instant::now();
    let (operator, admin) = cluster::spawn_operator(
        control_plane,
        binary,
        &dir.join("operator-restart.log"),
        &[],
        &[],
    )
    .await?;
    let reconciled = loop {
        if probe::reconciles(admin)
            .await
            .is_some_and(|done| done >= count as u64)
        {
            break Some(started.elapsed());
        }
        if started.elapsed() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let writes = Writes::read(&client).await?.since(&before);
    let peak_kib = operator.peak_rss_kib().unwrap_or(0);
    eprintln!(
        "operator restarted: every Worker reconciled after {:?}, writes: {}",
        reconciled,
        writes.describe()
    );
    Ok(Restart {
        reconciled,
        writes,
        peak_kib,
    })
}
