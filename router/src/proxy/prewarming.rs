//! The prewarm requests the router sends itself: a revision compiled where
//! its requests will go before its traffic shifts there (the gate,
//! `prewarm.rs`), and a Worker's standby.
//!
//! **Standby.** Requests of a Worker that has others in flight take the
//! bounded walk (`NodeSet::choose_for`): when its first-choice node is past
//! the load bound they spill to the next node of its order, where the
//! Worker is cold the first time. So the first time this router sees a
//! Worker with a request placed while another is in flight, it sends one
//! standby prewarm to the node such a spill would reach now (the walk with
//! the first choice left out). That node loads the revision only if its
//! thread's warm pool has room without evicting any isolate (the engine's
//! `Prewarm::Standby`): a standby never pushes a warm Worker out, so no
//! client can turn it against a neighbour. What a client can cause is one
//! compile per Worker per router, on a node with memory to spare.

use super::*;
use crate::prewarm::PrewarmRequest;
use crate::worker_load::WorkerLoad;

impl Proxy {
    /// Compiles `revision` of `worker_id` on the node and thread its
    /// requests go to now, through the same placement, channels and
    /// failover as a request.
    pub async fn prewarm(&self, worker_id: &str, revision: &str) -> Result<(), Error> {
        self.send_prewarm(worker_id, revision, PrewarmRequest { standby: false })
            .await
    }

    /// After a client's request of the Worker whose load is `load` was
    /// placed while `others` of its requests were in flight: the first time
    /// (per Worker and router), and when the fleet has a node to spill to,
    /// sends the Worker's standby prewarm (module docs) in the background.
    pub(super) fn standby_if_first_busy(
        &self,
        worker_id: &str,
        revision: &str,
        load: &WorkerLoad,
        others: u64,
        fleet: &Fleet,
    ) {
        if others == 0 || fleet.len() < 2 || !load.claim_standby() {
            return;
        }
        let proxy = self.clone();
        let (worker_id, revision) = (worker_id.to_owned(), revision.to_owned());
        tokio::spawn(async move {
            let standby = PrewarmRequest { standby: true };
            let outcome = match proxy.send_prewarm(&worker_id, &revision, standby).await {
                Ok(()) => "ok",
                Err(error) => {
                    debug!(worker.id = %worker_id, %revision, %error, "standby prewarm failed");
                    "failed"
                }
            };
            proxy.inner.metrics.standby(outcome);
        });
    }

    async fn send_prewarm(
        &self,
        worker_id: &str,
        revision: &str,
        marker: PrewarmRequest,
    ) -> Result<(), Error> {
        let request = Request::builder()
            .method(http::Method::GET)
            .uri("https://prewarm.invalid/")
            .extension(marker)
            .body(http_body_util::Empty::<Bytes>::new())
            .map_err(|_| Error::Protocol {
                node: NO_NODE.to_owned(),
                detail: "the prewarm request could not be built",
            })?;
        let response = self
            .send_internal(worker_id, revision, "prewarm.invalid", request, false)
            .await?;
        let status = response.status();
        let _ = response.into_body().collect().await;
        if status == StatusCode::NO_CONTENT {
            Ok(())
        } else {
            Err(Error::Protocol {
                node: NO_NODE.to_owned(),
                detail: "the node did not prewarm the revision",
            })
        }
    }
}
