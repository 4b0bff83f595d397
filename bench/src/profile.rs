//! Where the time goes: `perf record` on a server process while wrk loads
//! it, and the hottest symbols by self time. Optional: without `perf` (or
//! without permission to use it) the section says so and moves on.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::wrk::{self, LoadSpec};

/// Profiles process `pid` for `load.duration` under `load`; returns a
/// Markdown block with the top `lines` symbols.
pub async fn hottest(
    pid: u32,
    load: &LoadSpec,
    dir: &Path,
    lines: usize,
) -> anyhow::Result<String> {
    let data = dir.join(format!("perf-{pid}.data"));
    let secs = load.duration.as_secs().max(1);
    let mut record = tokio::process::Command::new("perf");
    record
        .args(["record", "-F", "499", "-q", "-o"])
        .arg(&data)
        .args(["-p", &pid.to_string(), "--", "sleep", &secs.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let recording = record.spawn().context("starting perf record")?;
    let (recorded, loaded) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(secs + 30), recording.wait_with_output()),
        wrk::run(load)
    );
    let recorded = recorded.context("perf record did not finish")??;
    loaded?;
    if !recorded.status.success() {
        bail!("perf record failed ({})", recorded.status);
    }
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--no-children",
                "-q",
                "--sort",
                "dso,symbol",
                "-i",
            ])
            .arg(&data)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("perf report did not finish")??;
    let _ = std::fs::remove_file(&data);
    let text = String::from_utf8_lossy(&report.stdout);
    let mut out = String::from("```text\n");
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(lines)
    {
        let _ = writeln!(out, "{}", truncate(line.trim_end(), 110));
    }
    out.push_str("```\n");
    Ok(out)
}

fn truncate(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}
