//! Workflow step overhead: instances of `Steps`, each running N empty
//! `step.do`s and returning `Date.now()` before the first and after each
//! (the engine's clock, whole milliseconds, moving at each step's I/O):
//! each step's time from the instance's own timing, and the mean per step
//! (the instance's first to last, over N); the client's create → complete
//! seen (status polled every 20 ms) over N as a cross-check.

use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::servers::Server;
use crate::state::Client;

#[derive(Debug, Default)]
pub struct Steps {
    /// Each step's time, ms (whole milliseconds).
    pub step_ms: Vec<f64>,
    /// Per instance, its first to last timestamp over its steps, ms.
    pub mean_ms: Vec<f64>,
    /// Per instance, the client's create → complete seen, over its steps.
    pub client_mean: Vec<Duration>,
}

/// Runs `instances` instances of `steps` steps, one after another.
pub async fn run(
    server: &Server,
    instances: usize,
    steps: usize,
    into: &mut Steps,
) -> anyhow::Result<()> {
    let mut client = Client::connect(server).await?;
    for _ in 0..instances {
        let started = Instant::now();
        let (_, id) = client
            .get_body(&format!("/wf/create?steps={steps}"))
            .await?;
        let id = String::from_utf8_lossy(&id).into_owned();
        let at = complete(&mut client, &id).await?;
        let took = started.elapsed();
        anyhow::ensure!(
            at.len() == steps + 1,
            "instance {id} returned {} timestamps for {steps} steps",
            at.len()
        );
        into.step_ms.extend(at.windows(2).map(|w| w[1] - w[0]));
        into.mean_ms.push((at[steps] - at[0]) / steps as f64);
        into.client_mean
            .push(took / u32::try_from(steps).unwrap_or(u32::MAX));
    }
    Ok(())
}

/// Polls instance `id` until it is complete: its output (the timestamps).
async fn complete(client: &mut Client, id: &str) -> anyhow::Result<Vec<f64>> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (_, body) = client.get_body(&format!("/wf/status?id={id}")).await?;
        let status: serde_json::Value = serde_json::from_slice(&body)
            .with_context(|| format!("status of {id}: {}", String::from_utf8_lossy(&body)))?;
        match status["status"].as_str() {
            Some("complete") => {
                let output = status["output"].as_array().context("no output")?;
                return output
                    .iter()
                    .map(|v| v.as_f64().context("a timestamp that is not a number"))
                    .collect();
            }
            Some("queued" | "running" | "waiting") => {}
            _ => anyhow::bail!("instance {id}: {status}"),
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "instance {id} not complete in 300 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
