//! The reference column: the same script under `wrangler dev` (workerd
//! with Miniflare's local queue broker and workflows engine), one Worker
//! holding every binding, started when Node.js 22 and wrangler are given.

use std::fmt::Write as _;
use std::path::Path;

use super::{latency, queue_of, script};
use crate::servers::Server;

/// `wrangler.toml` of the project: the tally class, the ping queue, one
/// queue per `maxConcurrency` (as on Isolane: batches of 100, no batch
/// timeout) and the workflow.
fn project_toml(concurrency: &[u32]) -> String {
    let mut toml = String::from(
        "name = \"queues-bench\"\nmain = \"worker.js\"\ncompatibility_date = \"2025-06-01\"\n\n\
         [[durable_objects.bindings]]\nname = \"TALLY\"\nclass_name = \"Tally\"\n\n\
         [[migrations]]\ntag = \"v1\"\nnew_classes = [\"Tally\"]\n\n\
         [[workflows]]\nbinding = \"WF\"\nname = \"steps\"\nclass_name = \"Steps\"\n\n",
    );
    let _ = write!(
        toml,
        "[[queues.producers]]\nbinding = \"PING\"\nqueue = \"{}\"\n\n\
         [[queues.consumers]]\nqueue = \"{}\"\nmax_batch_timeout = 0\n\n",
        latency::QUEUE,
        latency::QUEUE
    );
    for c in concurrency {
        let (binding, name) = queue_of(*c);
        let _ = write!(
            toml,
            "[[queues.producers]]\nbinding = \"{binding}\"\nqueue = \"{name}\"\n\n\
             [[queues.consumers]]\nqueue = \"{name}\"\nmax_batch_size = 100\n\
             max_batch_timeout = 0\nmax_concurrency = {c}\n\n"
        );
    }
    toml
}

/// `wrangler dev` serving the project in `work/wrangler-queues`, once it
/// answers.
pub async fn start(
    node: &Path,
    wrangler_js: &Path,
    work: &Path,
    concurrency: &[u32],
) -> anyhow::Result<Server> {
    let project = work.join("wrangler-queues");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("worker.js"), script::SCRIPT)?;
    std::fs::write(project.join("wrangler.toml"), project_toml(concurrency))?;
    let log = work.join("wrangler-queues.log");
    crate::servers::wrangler_dev(node, wrangler_js, &project, &log).await
}
