//! The load generator: `wrk` (Debian's package) as a separate process, one
//! thread, keep-alive connections; its summary parsed into a [`Load`].

use std::time::Duration;

use anyhow::{Context as _, bail};

/// One wrk run against one URL.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub url: String,
    /// A `Host:` header (the router routes by host).
    pub host: Option<String>,
    pub connections: usize,
    pub duration: Duration,
    /// POSTs with a body of this many bytes instead of GETs (0: GETs).
    pub post_bytes: usize,
    /// The CPUs wrk runs on (`taskset -c`), or any.
    pub cpus: Option<String>,
    /// More request headers, each `Name: value`.
    pub headers: Vec<String>,
}

/// What wrk measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    pub requests: u64,
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Non-2xx/3xx responses plus socket errors.
    pub errors: u64,
    /// CPU time the server's process used per request during the run (µs;
    /// 0: not measured): how much of a core a request costs, which other
    /// work on a shared machine moves far less than the throughput.
    pub cpu_us: f64,
}

/// A wrk script that makes every request a POST with a JSON-typed body of
/// `bytes` bytes; none for 0 (GETs).
fn post_script(bytes: usize) -> anyhow::Result<Option<tempfile::NamedTempFile>> {
    if bytes == 0 {
        return Ok(None);
    }
    let mut file = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::io::Write::write_all(
        &mut file,
        format!(
            "wrk.method = \"POST\"\nwrk.body = string.rep(\"x\", {bytes})\n\
             wrk.headers[\"Content-Type\"] = \"application/json\"\n"
        )
        .as_bytes(),
    )?;
    Ok(Some(file))
}

/// Runs wrk and parses its summary. wrk stops itself after `duration`; the
/// process is killed if it has not exited 20 s after that.
pub async fn run(spec: &LoadSpec) -> anyhow::Result<Load> {
    let secs = spec.duration.as_secs().max(1);
    let mut command = match &spec.cpus {
        Some(cpus) => {
            let mut taskset = tokio::process::Command::new("taskset");
            taskset.arg("-c").arg(cpus).arg("wrk");
            taskset
        }
        None => tokio::process::Command::new("wrk"),
    };
    command
        .arg("-t1")
        .arg(format!("-c{}", spec.connections))
        .arg(format!("-d{secs}s"))
        .arg("--timeout")
        .arg("10s")
        .arg("--latency");
    if let Some(host) = &spec.host {
        command.arg("-H").arg(format!("Host: {host}"));
    }
    for header in &spec.headers {
        command.arg("-H").arg(header);
    }
    // Kept until wrk has exited.
    let script = post_script(spec.post_bytes)?;
    if let Some(script) = &script {
        command.arg("-s").arg(script.path());
    }
    command.arg(&spec.url).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(secs + 20), command.output())
        .await
        .context("wrk did not finish in time")?
        .context("running wrk (apt-get install wrk)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "wrk failed ({}): {}{}",
            output.status,
            text,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let load = parse(&text).with_context(|| format!("unexpected wrk output:\n{text}"))?;
    if load.errors > 0 {
        // What kind of errors, in the step's log.
        eprintln!("wrk counted {} errors:\n{text}", load.errors);
    }
    Ok(load)
}

/// Parses wrk's `--latency` summary.
pub fn parse(text: &str) -> Option<Load> {
    let mut load = Load::default();
    let mut in_distribution = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Latency Distribution") {
            in_distribution = true;
            continue;
        }
        if in_distribution {
            if let Some(value) = line.strip_prefix("50%") {
                load.p50_us = parse_time_us(value.trim())?;
                continue;
            }
            if let Some(value) = line.strip_prefix("99%") {
                load.p99_us = parse_time_us(value.trim())?;
                continue;
            }
            if line.starts_with("75%") || line.starts_with("90%") {
                continue;
            }
            in_distribution = false;
        }
        if let Some(value) = line.strip_prefix("Requests/sec:") {
            load.rps = value.trim().parse().ok()?;
        } else if line.contains(" requests in ") {
            load.requests = line.split_whitespace().next()?.parse().ok()?;
        } else if let Some(value) = line.strip_prefix("Non-2xx or 3xx responses:") {
            load.errors += value.trim().parse::<u64>().ok()?;
        } else if let Some(value) = line.strip_prefix("Socket errors:") {
            // "connect 0, read 0, write 0, timeout 0"
            load.errors += value
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    (load.requests > 0).then_some(load)
}

/// `470.00us`, `1.57ms`, `2.01s` → µs.
fn parse_time_us(value: &str) -> Option<f64> {
    let split = value.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => number,
        "ms" => number * 1e3,
        "s" => number * 1e6,
        "m" => number * 60e6,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Running 5s test @ http://127.0.0.1:8787/
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   538.34us  312.21us  10.01ms   92.61%
    Req/Sec    30.36k     1.91k   33.40k    76.00%
  Latency Distribution
     50%  470.00us
     75%  570.00us
     90%  720.00us
     99%    1.57ms
  151043 requests in 5.00s, 19.30MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 12
Requests/sec:  30203.69
Transfer/sec:      3.86MB
";

    #[test]
    fn parses_the_summary() {
        let load = parse(SAMPLE).expect("parses");
        assert_eq!(load.requests, 151_043);
        assert!((load.rps - 30_203.69).abs() < 1e-6);
        assert!((load.p50_us - 470.0).abs() < 1e-6);
        assert!((load.p99_us - 1570.0).abs() < 1e-6);
        assert_eq!(load.errors, 15);
    }
}
