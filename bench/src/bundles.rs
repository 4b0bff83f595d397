//! Comparison 11: never-seen big bundles (issue 31), first answer through
//! router + node against workerd's in the same run.
//!
//! Each sample is a bundle no one has seen: main.js and lib/big.js, an ES
//! module of many functions (`isolane_testenv::big_module`) making the
//! bundle 8 or 64 MiB, its first line salted per sample so its digest (and
//! its code cache key) is new. For Isolane the bundle is pushed with
//! `isolane push` to a CNCF Distribution registry (untimed), then the
//! Worker it prints is applied and the clock starts: the operator pulls and
//! checks the bundle, writes the revision; the node pulls it (with the pull
//! secret), verifies and unpacks it, compiles it; the router learns the
//! route; the time is the first `200` through the router. Two cases:
//! - cold: lib/big.js never seen either (no code cache on the node);
//! - sibling: a new digest (main.js differs) whose lib/big.js is the one of
//!   the cold sample before it, whose V8 code cache the node wrote: what
//!   the code cache gives a new revision of an app.
//!
//! workerd is started on the same files (`workerd serve`, the two modules
//! embedded in its config) and timed from spawn to its first `200`; it
//! keeps no code cache between processes, so its one case is cold.
//! Samples alternate: cold, sibling, workerd. Both sides are polled every
//! [`POLL`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail};
use isolane_crds::Worker;
use isolane_testenv::Registry;
use isolane_testenv::big_module::es_module;
use isolane_testenv::workerd::{self as peer, Code, ModuleKind, Service};
use isolane_testenv::workers::apply;
use kube::Api;
use kube::api::DeleteParams;

use crate::cluster::{self, ClusterBinaries, NAMESPACE, PULL_SECRET};
use crate::report::{Section, Table, Target};
use crate::servers::{self, Binaries};
use crate::stats::{fmt_ratio, fmt_us, percentile, ratio, us};

/// How often both sides are asked for their first answer.
const POLL: Duration = Duration::from_millis(5);
/// Room left under a size for main.js, the tar headers and the generator's
/// overshoot (at most one factory).
const ROOM: usize = 64 << 10;
/// The most the code cache of a cold load may take to be written.
const CACHE_WRITTEN_WITHIN: Duration = Duration::from_secs(60);
/// The most a first answer may take.
const FIRST_ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// What is measured.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Bundle sizes, MiB (uncompressed: the artifact's tar).
    pub sizes_mib: Vec<usize>,
    /// Samples per size and case.
    pub samples: usize,
}

/// The binaries and folders of a run.
pub struct Setup<'a> {
    pub bins: &'a Binaries,
    pub cluster: &'a ClusterBinaries,
    pub work: &'a Path,
    pub plan: &'a Plan,
}

/// How one Isolane load ended.
#[derive(Debug, Clone)]
enum Load {
    /// Apply → first 200.
    Answered(Duration),
    /// No answer, and why.
    Refused(String),
}

/// One case's samples: the first answers, and the refusals.
#[derive(Debug, Default)]
struct Case {
    answered: Vec<Duration>,
    refused: Vec<String>,
}

impl Case {
    fn push(&mut self, load: Load) {
        match load {
            Load::Answered(took) => self.answered.push(took),
            Load::Refused(why) => self.refused.push(why),
        }
    }

    fn show(&self) -> String {
        match self.answered.last() {
            Some(took) if self.refused.is_empty() => format!("{:.0} ms", took.as_secs_f64() * 1e3),
            _ => format!(
                "refused: {}",
                self.refused.last().map_or("–", String::as_str)
            ),
        }
    }
}

/// The samples of one size.
#[derive(Debug, Default)]
struct Samples {
    cold: Case,
    sibling: Case,
    workerd: Case,
    /// Sibling loads that compiled lib/big.js from the code cache.
    cache_hits: u64,
    /// Bytes of lib/big.js.
    module_bytes: usize,
}

pub async fn section(setup: &Setup<'_>) -> anyhow::Result<Section> {
    std::fs::create_dir_all(setup.work)?;
    let registry = Registry::start("bench", "bench-pull")
        .context("starting the registry (hack/install-deps.sh builds it)")?;
    let cache = format!(
        "--bundle-cache-dir={}",
        setup.work.join("bundle-cache").display()
    );
    let cluster =
        cluster::start_with_registry(setup.cluster, setup.work, &registry, &[cache.as_str()])
            .await?;
    let client = cluster.control_plane.client();
    // A run's salts differ from every earlier run's.
    let run = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut measured = Vec::new();
    for &mib in &setup.plan.sizes_mib {
        let mut samples = Samples::default();
        for i in 0..setup.plan.samples {
            let sample = Sample {
                setup,
                registry: &registry,
                cluster: &cluster,
                client: &client,
                mib,
                index: i,
                run,
                salt: format!("{run}-{mib}-{i}"),
            };
            let (cold, sibling, hit, bytes) = sample.isolane().await?;
            samples.cold.push(cold);
            samples.sibling.push(sibling);
            samples.cache_hits += u64::from(hit);
            samples.module_bytes = bytes;
            if setup.bins.workerd.is_some() {
                samples.workerd.push(sample.workerd().await?);
            }
            eprintln!(
                "bundles {mib} MiB #{i}: cold {}, sibling {} (code cache {}), workerd {}",
                samples.cold.show(),
                samples.sibling.show(),
                if hit { "hit" } else { "missed" },
                samples.workerd.show(),
            );
        }
        measured.push((mib, samples));
    }
    drop(cluster);
    Ok(render(setup.plan, &measured))
}

/// One sample of one size: its two Isolane bundles and workerd's start.
struct Sample<'a> {
    setup: &'a Setup<'a>,
    registry: &'a Registry,
    cluster: &'a cluster::Cluster,
    client: &'a kube::Client,
    mib: usize,
    index: usize,
    run: u128,
    salt: String,
}

impl Sample<'_> {
    fn dir(&self, case: &str) -> PathBuf {
        self.setup
            .work
            .join("bundles")
            .join(format!("{}-{case}", self.salt))
    }

    /// The cold bundle, then its sibling: first answers, whether the
    /// sibling compiled lib/big.js from the code cache, lib/big.js's bytes.
    async fn isolane(&self) -> anyhow::Result<(Load, Load, bool, usize)> {
        let big = es_module((self.mib << 20) - ROOM, &self.salt);
        let cold = self.dir("cold");
        write_bundle(&cold, &big, "cold")?;
        let sibling = self.dir("sibling");
        write_bundle(&sibling, &big, "sibling")?;
        let written = self.code_cache("written").await;
        let cold_took = self.first_answer(&cold, "c").await?;
        if let Load::Refused(why) = &cold_took {
            let why = format!("no code cache to start from (the cold load was refused: {why})");
            return Ok((cold_took, Load::Refused(why), false, big.len()));
        }
        // The sibling needs the cache the cold load makes after its first
        // request, off the request path; one never written (a failed or
        // dropped write) shows as a miss.
        let deadline = Instant::now() + CACHE_WRITTEN_WITHIN;
        while self.code_cache("written").await <= written && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let consumed = self.code_cache("consumed").await;
        let sibling_took = self.first_answer(&sibling, "s").await?;
        let hit = self.code_cache("consumed").await > consumed;
        Ok((cold_took, sibling_took, hit, big.len()))
    }

    /// Pushes `dir`, applies its Worker and times apply → first 200 through
    /// the router (or learns from the node's log why it will not answer);
    /// then deletes the Worker.
    async fn first_answer(&self, dir: &Path, case: &str) -> anyhow::Result<Load> {
        let name = format!(
            "big{}-{}-{case}-{:08}",
            self.mib,
            self.index,
            self.run % 100_000_000
        );
        let host = format!("{name}.bundles.bench.test");
        let mut worker = self.push(dir, &name, &host)?;
        // A 64 MiB module's functions and source take more than the
        // default 128 MiB.
        worker.spec.limits.memory_mib = isolane_worker::Limits::MEMORY_MIB.end().to_owned();
        let started = Instant::now();
        apply(self.client, NAMESPACE, &worker).await;
        let took = self.answer_or_refusal(&name, &host, started).await;
        Api::<Worker>::namespaced(self.client.clone(), NAMESPACE)
            .delete(&name, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting {name}"))?;
        Ok(took)
    }

    /// Polls the router every [`POLL`] until `host` answers 200; stops
    /// early once the node logs that the Worker cannot start (its load
    /// fails the same way at every attempt).
    async fn answer_or_refusal(&self, name: &str, host: &str, started: Instant) -> Load {
        let worker = format!("bench/{name}");
        let mut checked = Instant::now();
        loop {
            let status = servers::get_status(self.cluster.router.addr, Some(host)).await;
            if status == Some(200) {
                return Load::Answered(started.elapsed());
            }
            if started.elapsed() > FIRST_ANSWER_WITHIN {
                return Load::Refused(format!(
                    "no 200 within {} s (last status {status:?})",
                    FIRST_ANSWER_WITHIN.as_secs()
                ));
            }
            if checked.elapsed() > Duration::from_secs(1) {
                checked = Instant::now();
                let log = self.cluster.node.log();
                let failed = log
                    .lines()
                    .find(|line| line.contains(&worker) && line.contains("worker unavailable"));
                if let Some(line) = failed {
                    let why = line.rsplit_once("error=").map_or(line, |(_, why)| why);
                    return Load::Refused(why.trim().to_owned());
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `isolane push` of `dir`: the Worker it prints.
    fn push(&self, dir: &Path, name: &str, host: &str) -> anyhow::Result<Worker> {
        let output = Command::new(&self.setup.bins.isolane)
            .arg("push")
            .arg(dir)
            .args([
                "--repository",
                &format!("{}/bench/big", self.registry.host()),
            ])
            .args(["--name", name, "-n", NAMESPACE, "--route", host])
            .args(["--plain-http", "--pull-secret", PULL_SECRET])
            .env("ISOLANE_REGISTRY_USERNAME", self.registry.username())
            .env("ISOLANE_REGISTRY_PASSWORD", self.registry.password())
            .output()
            .context("running isolane push")?;
        if !output.status.success() {
            bail!(
                "isolane push failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        serde_yaml::from_slice(&output.stdout).context("isolane push prints a Worker")
    }

    /// The node's code cache events of `event`.
    async fn code_cache(&self, event: &str) -> f64 {
        isolane_testenv::http_probe::metric_sum(
            self.cluster.node_admin,
            "isolane_node_code_cache_total",
            &format!("event=\"{event}\""),
        )
        .await
        .unwrap_or(0.0)
    }

    /// workerd started on the cold bundle's files: spawn → first 200.
    async fn workerd(&self) -> anyhow::Result<Load> {
        let dir = self.dir("cold");
        let service = Service {
            code: Code::Modules(vec![
                ("main.js".to_owned(), ModuleKind::EsModule),
                ("lib/big.js".to_owned(), ModuleKind::EsModule),
            ]),
            ..Service::module(
                "main",
                "main.js",
                "2024-09-23",
                ([127, 0, 0, 1], 8080).into(),
            )
        };
        let config = peer::write_config(&dir, "config.capnp", &[service])?;
        let mut server = servers::workerd(self.setup.bins, &config, self.setup.work)?;
        let took = servers::wait_ok_every(server.addr, None, FIRST_ANSWER_WITHIN, POLL).await;
        let exited = server.process.as_mut().and_then(|p| p.try_exit());
        let load = match (took, exited) {
            (Ok(took), _) => Load::Answered(took),
            (Err(_), Some(status)) => Load::Refused(format!(
                "workerd exited ({status}): {}",
                server
                    .process
                    .as_ref()
                    .map(|p| p.log_tail(3))
                    .unwrap_or_default()
            )),
            (Err(error), None) => Load::Refused(format!("{error:#}")),
        };
        if let Some(mut process) = server.process.take() {
            process.kill();
        }
        Ok(load)
    }
}

/// A bundle folder: lib/big.js, and main.js importing it (`case` makes the
/// sibling's main.js, so its digest, differ).
fn write_bundle(dir: &Path, big: &str, case: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("lib"))?;
    std::fs::write(dir.join("lib").join("big.js"), big)?;
    std::fs::write(
        dir.join("main.js"),
        format!(
            "// {case}\nimport big, {{ total }} from './lib/big.js';\ntotal();\n\
             export default {{ fetch(request, env, ctx) {{ return big.fetch(request, env, ctx); }} }};\n"
        ),
    )?;
    Ok(())
}

/// The `p`-quantile of `samples` in µs; `NaN` (shown as –) when none.
fn quantile(samples: &[Duration], p: f64) -> f64 {
    if samples.is_empty() {
        f64::NAN
    } else {
        us(percentile(samples, p))
    }
}

fn render(plan: &Plan, measured: &[(usize, Samples)]) -> Section {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 12. Never-seen big bundles: first answer through router + node vs workerd\n\n\
         Each sample is a bundle never seen before: `lib/big.js`, an ES module shaped as a \
         bundler's output (`isolane_testenv::big_module`: factories of 100 small functions \
         each, a tenth of them run at load, more by `fetch`) filling the bundle to its size \
         less at most 64 KiB, salted per sample, and a `main.js` importing it. Isolane: `isolane push` to a \
         local CNCF Distribution registry (untimed), then the Worker it prints (by digest, with \
         a pull secret, `memoryMiB: 1024`) is applied and timed from the apply to the first \
         `200` through the router: the operator pulls and checks the bundle and writes the \
         revision, the node pulls, verifies, unpacks and compiles it, the router learns the \
         route. *Cold*: `lib/big.js` never seen either. *Sibling*: a new digest (another \
         `main.js`) whose `lib/big.js` is the previous cold sample's, whose V8 code cache the \
         node wrote (what a new revision of an app gets). workerd: `workerd serve` on the same \
         two files, timed from spawn to its first `200` (it keeps no code cache between \
         processes). The two intervals are what each user waits for a new version: Isolane's \
         holds a control plane's work (two pulls, the operator's check, two watches) that \
         workerd's has no equivalent of, and workerd's holds a process start (tens of ms, \
         section 3) that Isolane's does not. {} samples per size and case, alternating cold, \
         sibling, workerd; both \
         sides polled every {} ms; etcd, the apiserver, the operator and the registry run on \
         the same 2 cores. p99 of so few samples is their maximum.\n",
        plan.samples,
        POLL.as_millis()
    );
    let mut table = Table::new(&[
        ">bundle",
        "what",
        ">p50",
        ">p99",
        ">p50 ÷ workerd",
        ">p99 ÷ workerd",
        ">samples",
    ]);
    let mut targets = Vec::new();
    let mut refusals = Vec::new();
    for (mib, samples) in measured {
        let w50 = quantile(&samples.workerd.answered, 0.5);
        let w99 = quantile(&samples.workerd.answered, 0.99);
        let rows: [(&str, &Case); 3] = [
            ("Isolane, cold (apply → first answer)", &samples.cold),
            (
                "Isolane, sibling digest, code cache of `lib/big.js` (apply → first answer)",
                &samples.sibling,
            ),
            ("workerd (spawn → first answer)", &samples.workerd),
        ];
        for (what, case) in rows {
            let answered = &case.answered;
            let (p50, p99) = (quantile(answered, 0.5), quantile(answered, 0.99));
            table.row(vec![
                format!("{mib} MiB"),
                what.to_owned(),
                fmt_us(p50),
                fmt_us(p99),
                fmt_ratio(ratio(p50, w50)),
                fmt_ratio(ratio(p99, w99)),
                format!(
                    "{} of {}",
                    answered.len(),
                    answered.len() + case.refused.len()
                ),
            ]);
            if let Some(why) = case.refused.first() {
                refusals.push(format!(
                    "{mib} MiB, {what}: {} refused; the first: {why}",
                    case.refused.len()
                ));
            }
        }
        let _ = writeln!(
            md,
            "{mib} MiB: `lib/big.js` is {} bytes; {} of {} sibling loads compiled it from the \
             code cache.\n",
            samples.module_bytes,
            samples.cache_hits,
            samples.sibling.answered.len() + samples.sibling.refused.len()
        );
        let cold = quantile(&samples.cold.answered, 0.5);
        let measured = match samples.cold.refused.first() {
            Some(why) if samples.cold.answered.is_empty() => {
                format!("never answered ({why}); workerd {}", fmt_us(w50))
            }
            _ => format!(
                "{} vs {} ({}); with the code cache of a sibling: {}",
                fmt_us(cold),
                fmt_us(w50),
                fmt_ratio(ratio(cold, w50)),
                fmt_us(quantile(&samples.sibling.answered, 0.5))
            ),
        };
        targets.push(Target::new(
            format!(
                "never-seen {mib} MiB bundle, first answer through router + node ≤ workerd's (p50)"
            ),
            measured,
            cold <= w50,
        ));
    }
    md.push_str(&table.render());
    md.push('\n');
    if !refusals.is_empty() {
        md.push_str(
            "Loads that never answered (counted in *samples*, not in the percentiles):\n\n",
        );
        for refusal in refusals {
            let _ = writeln!(md, "- {refusal}");
        }
        md.push('\n');
    }
    Section {
        markdown: md,
        targets,
    }
}
