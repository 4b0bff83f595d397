//! Comparison 7: the operator bringing N Workers to Ready. For each N, a fresh
//! control plane (etcd + kube-apiserver) and a fresh operator process from
//! `target/release`; the Workers are applied with kube-rs, 16 at a time;
//! their status is listed every 500 ms until all are Ready or the deadline.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use isolane_crds::Worker;
use isolane_testenv::workers::{apply, has_condition, hello_script, inline_worker};
use kube::Api;
use kube::api::ListParams;

use crate::cluster::{self, NAMESPACE};
use crate::report::{Section, Table, Target};
use crate::stats::fmt_rate;

/// How many Workers, and how long to wait for each count.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The release `isolane-operator`.
    pub operator: std::path::PathBuf,
    pub counts: Vec<usize>,
    pub deadline: Duration,
}

struct Outcome {
    count: usize,
    applied: Duration,
    ready: usize,
    all_ready: Option<Duration>,
    idle_kib: u64,
    peak_kib: u64,
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
         `Ready=True` for its generation (status listed every 500 ms, deadline {:.0} s). \
         etcd, the apiserver and the operator share the machine's 2 cores. Peak memory is the \
         operator's `VmHWM`.\n",
        plan.deadline.as_secs_f64()
    );
    let mut table = Table::new(&[
        ">Workers",
        ">applied in",
        ">all Ready after",
        ">Workers Ready / s",
        ">operator peak RSS",
        ">operator RSS before",
    ]);
    for o in &outcomes {
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
        ]);
    }
    md.push_str(&table.render());
    md.push('\n');
    let targets = outcomes
        .iter()
        .map(|o| {
            Target::new(
                format!("{} Workers Ready (no numeric target; reported)", o.count),
                match o.all_ready {
                    Some(d) => format!(
                        "{:.1} s, operator peak {:.0} MiB",
                        d.as_secs_f64(),
                        o.peak_kib as f64 / 1024.0
                    ),
                    None => format!("only {}/{} before the deadline", o.ready, o.count),
                },
                o.all_ready.is_some(),
            )
        })
        .collect();
    Ok(Section {
        markdown: md,
        targets,
    })
}

async fn one(
    binary: &Path,
    count: usize,
    deadline: Duration,
    dir: &Path,
) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(dir)?;
    let (control_plane, operator) = cluster::control_plane_with_operator(binary, dir, &[]).await?;
    let idle_kib = operator.peak_rss_kib().unwrap_or(0);
    let client = control_plane.client();
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
    let workers: Api<Worker> = Api::namespaced(client.clone(), NAMESPACE);
    let mut ready = 0;
    let mut all_ready = None;
    while started.elapsed() < deadline {
        if let Ok(list) = workers.list(&ListParams::default()).await {
            ready = list
                .items
                .iter()
                .filter(|w| has_condition(w, "Ready", "True", None))
                .count();
            if ready == count {
                all_ready = Some(started.elapsed());
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let peak_kib = operator.peak_rss_kib().unwrap_or(0);
    eprintln!(
        "operator: {count} Workers applied in {:.1} s, {ready} Ready after {:.1} s, peak {peak_kib} KiB",
        applied.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    drop(operator);
    drop(control_plane);
    Ok(Outcome {
        count,
        applied,
        ready,
        all_ready,
        idle_kib,
        peak_kib,
    })
}
