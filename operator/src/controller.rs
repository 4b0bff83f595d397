//! The Worker controller: kube-rs's `Controller` over the Workers of the
//! [`Caches`], running [`crate::reconcile`] with its error policy, for one
//! term of leadership.
//!
//! [`run`] waits until every cache has listed (at once when they already
//! have: the caches outlive terms, `caches.rs`), attaches the controller's
//! queue to the caches' [`crate::triggers::Triggers`], reconciles every
//! Worker once (what changed while no controller ran), and starts the
//! host-owner recorder.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use isolane_crds::Worker;
use kube::Client;
use kube::runtime::controller;
use kube::runtime::{Controller, watcher};
use tracing::{debug, info, warn};

use crate::artifact::ArtifactChecker;
use crate::caches::Caches;
use crate::config::Config;
use crate::executor::Executor;
use crate::metrics::Metrics;
use crate::owners::Recorder;
use crate::plan::Settings;
use crate::reconcile::{Context, error_policy, reconcile};

/// Runs the controller over `caches` until `shutdown` resolves (in-flight
/// reconciles finish), the caches end, or the returned future is dropped
/// (they are aborted: leadership was lost).
pub async fn run(
    caches: &Caches,
    client: Client,
    config: &Config,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let mut synced = caches.synced.clone();
    tokio::select! {
        () = caches.ended.cancelled() => {
            warn!("the caches ended before they listed");
            return;
        }
        listed = synced.wait_for(|synced| *synced) => if listed.is_err() { return },
    }
    let Some(artifacts) = artifacts(config) else {
        return;
    };
    let recorder = recorder(&client, config, caches);
    let store = store(config);
    let backlog = backlog_status(&client, config, caches, store.clone());
    let context = context(client.clone(), config, caches, metrics, artifacts, store);
    // Attached before the Workers are listed into the queue: an event in
    // between is queued twice at worst, never lost.
    let (_attached, queue) = caches.sinks.triggers.attach();
    caches.sinks.triggers.every(&caches.workers);
    let triggers = caches.sinks.triggers.clone();
    // Host owners are recorded only from a complete view of the claims.
    let recorder = recorder.run(Arc::clone(&caches.sinks.claims_changed), move |keys| {
        triggers.workers(keys)
    });
    let certificates = certificate_watch(config, &client, caches);
    let controller = Controller::for_stream(
        futures::stream::pending::<Result<Worker, watcher::Error>>(),
        caches.workers.clone(),
    )
    .with_config(controller::Config::default().concurrency(config.concurrency))
    .reconcile_on(queue)
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, context)
    .for_each(|result| async move {
        if let Err(error) = result {
            debug!(%error, "controller event");
        }
    });

    info!(namespace = %config.namespace, workers = caches.workers.len(), "controller started over the caches");
    tokio::select! {
        () = controller => info!("controller stopped"),
        () = caches.ended.cancelled() => warn!("the caches ended: stopping the controller"),
        () = recorder => {}
        () = certificates => warn!("the Certificate watch ended"),
        () = backlog => {}
    }
}

/// The checker of Workers' bundles in registries (`None`, logged, when its
/// client cannot be made).
fn artifacts(config: &Config) -> Option<Arc<ArtifactChecker>> {
    ArtifactChecker::new(
        config.plain_http_registries.clone(),
        config.bundle_registries.clone(),
        config.registry_ca.clone(),
    )
    .inspect_err(|error| warn!(%error, "cannot make the registry client for bundles"))
    .ok()
    .map(Arc::new)
}

/// The durable store, when the operator is given one.
fn store(config: &Config) -> Option<isolane_storage::Store> {
    config.storage.as_ref().and_then(|settings| {
        isolane_storage::Store::postgres(settings)
            .inspect_err(|error| {
                warn!(%error, "cannot use the durable store: deleted Workers' alarms stay in it, and no backlog is shown in status");
            })
            .ok()
    })
}

/// The writer of `status.queues` and `status.workflows` (never ending;
/// idle without a store or with `--backlog-interval 0s`).
async fn backlog_status(
    client: &Client,
    config: &Config,
    caches: &Caches,
    store: Option<isolane_storage::Store>,
) {
    match (store, config.backlog_interval) {
        (Some(store), Some(interval)) => {
            let writer = crate::backlog::BacklogStatus {
                client: client.clone(),
                store,
                workers: caches.workers.clone(),
                interval,
            };
            writer.run().await;
        }
        _ => futures::future::pending().await,
    }
}

/// The watch of the Workers' Certificates when they are asked for (never
/// ending otherwise).
async fn certificate_watch(config: &Config, client: &Client, caches: &Caches) {
    match config.certificates {
        Some(_) => {
            let triggers = caches.sinks.triggers.clone();
            crate::certificates::watch::run(client.clone(), triggers).await;
        }
        None => futures::future::pending().await,
    }
}

/// The host-owner recorder over the caches' index.
fn recorder(client: &Client, config: &Config, caches: &Caches) -> Recorder {
    Recorder {
        api: kube::Api::namespaced(client.clone(), &config.namespace),
        namespace: config.namespace.clone(),
        index: Arc::clone(&caches.sinks.index),
        grace: config.host_release_grace,
    }
}

/// What every reconcile shares: the API, the operator's settings, the
/// index, the bundle cache, the node set, the executor of its writes and
/// the bundle checker.
fn context(
    client: Client,
    config: &Config,
    caches: &Caches,
    metrics: Arc<Metrics>,
    artifacts: Arc<ArtifactChecker>,
    store: Option<isolane_storage::Store>,
) -> Arc<Context> {
    let executor = Executor::new(
        client.clone(),
        config.namespace.clone(),
        caches.sinks.own_writes.clone(),
        metrics,
    );
    let settings = Settings {
        namespace: config.namespace.clone(),
        missing_reference_retry: config.missing_reference_retry,
        resync: config.resync,
    };
    let certificates = (config.certificates.clone()).map(|settings| {
        let index = Arc::clone(&caches.sinks.index);
        crate::certificates::Certificates::new(
            client.clone(),
            settings,
            index,
            caches.workers.clone(),
        )
    });
    Arc::new(
        Context::new(
            client,
            settings,
            Arc::clone(&caches.sinks.index),
            caches.bundles.clone(),
            caches.nodes.clone(),
            executor,
            caches.synced.clone(),
            artifacts,
        )
        .with_store(store)
        .with_certificates(certificates)
        .with_namespaces(caches.namespaces.clone()),
    )
}
