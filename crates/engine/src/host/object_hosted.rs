//! Durable Object classes hosted by another Worker of the namespace
//! (`durableObject: {className, worker}`, wrangler's `script_name`): the
//! binding Worker's stubs always call out (`objectCall`), and the call runs
//! in the hosting Worker's isolate, on the object's home thread there,
//! under that Worker's limits and with its storage scope
//! (`<namespace>/<host worker>/<class>/<id>`): caller and host reach one
//! instance of each object.
//!
//! JavaScript names such a class as `<worker>/<class>` (a class name has no
//! `/`); the host is found by the binding Worker's own namespace and that
//! name, never by a namespace JavaScript could pass, and only when the
//! binding Worker binds that worker and class.

use std::sync::Arc;

use super::HostState;
use super::error::{ErrorClass, HostError};
use crate::bundle::WorkerBundle;

/// The Worker whose isolate this is, with a class it binds.
pub fn bound_worker(host: &HostState, class: &str) -> Result<Arc<WorkerBundle>, HostError> {
    let worker = host
        .worker
        .get()
        .ok_or_else(|| HostError::type_error("Durable Objects: no Worker is loaded"))?;
    if !worker.durable_objects.values().any(|c| c == class) {
        return Err(HostError::type_error(format!(
            "{class} is not a Durable Object class of this Worker"
        )));
    }
    Ok(worker.clone())
}

/// The Worker whose isolate runs calls to `class` (as JavaScript names it)
/// and the class's own name: this Worker for a class it binds, the hosting
/// Worker's current bundle for `<worker>/<class>`.
pub(super) fn called_worker(
    host: &HostState,
    class: String,
) -> Result<(Arc<WorkerBundle>, String), HostError> {
    let Some((worker, class)) = class.split_once('/') else {
        let bundle = bound_worker(host, &class)?;
        return Ok((bundle, class));
    };
    let caller = host
        .worker
        .get()
        .ok_or_else(|| HostError::type_error("Durable Objects: no Worker is loaded"))?;
    let bound = caller
        .hosted_objects
        .values()
        .any(|hosted| hosted.worker == worker && hosted.class == class);
    if !bound {
        return Err(HostError::type_error(format!(
            "{class} of Worker {worker} is not a Durable Object class this Worker binds"
        )));
    }
    let hosting = hosting_worker(host, caller.namespace(), worker, class)?;
    Ok((hosting, class.to_owned()))
}

/// The current bundle of Worker `worker` of `namespace`, which must bind
/// `class` itself.
fn hosting_worker(
    host: &HostState,
    namespace: &str,
    worker: &str,
    class: &str,
) -> Result<Arc<WorkerBundle>, HostError> {
    let bundle = served_worker(host, namespace, worker).ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            format!(
                "Durable Object call failed: Worker {worker}, which hosts the class {class}, is not running in this namespace"
            ),
        )
    })?;
    if !bundle.durable_objects.values().any(|c| c == class) {
        return Err(HostError::new(
            ErrorClass::Error,
            format!(
                "Durable Object call failed: Worker {worker} does not bind the Durable Object class {class} (the hosting Worker binds the classes it hosts)"
            ),
        ));
    }
    Ok(bundle)
}

/// The current bundle of Worker `worker` of `namespace`, when this process
/// serves it (`Engine::set_workers`): a hosted class's host, a service
/// binding's Worker (`host/service.rs`).
pub(super) fn served_worker(
    host: &HostState,
    namespace: &str,
    worker: &str,
) -> Option<Arc<WorkerBundle>> {
    let id = format!("{namespace}/{worker}");
    let workers = host.thread.shared.workers.get()?;
    workers.current(&id)
}
