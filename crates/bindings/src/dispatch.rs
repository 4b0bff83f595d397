//! Dispatch namespace bindings (`{name, dispatchNamespace: {namespace}}`,
//! docs/dispatch.md): `env.NAME.get(worker, args, {limits})` makes a
//! `Fetcher` (`js/30_service.js`) whose calls go the service path with the
//! Worker's name and the limits it lowers. Here the binding's namespace is
//! checked to have agreed, as the operator (or `isolane dev`) wrote it into
//! the caller's bundle; the caller's code names only the Worker.

use isolane_engine::ServiceTarget;
use isolane_engine::api::service::{CallLimits, Outbound, prepare, prepare_dispatch};
use isolane_engine::api::{ErrorClass, HostError, HostState};
use isolane_worker::dispatch::OutboundWorker;

/// The call `serviceFetch` or `serviceRpc` makes through binding
/// `binding`: a service binding's, or with `worker` (a dispatch stub's) a
/// dispatch namespace binding's call of that Worker, `cpu_ms` and
/// `subrequests` (0: none) lowering its limits; or with a Worker Loader
/// binding, a call of the code loaded as `worker` (its `entrypoint` and
/// `props`: `loader.rs`).
pub(crate) fn outbound(
    host: &HostState,
    ctx: u32,
    binding: &str,
    worker: Option<String>,
    (cpu_ms, subrequests): (u32, u32),
    entry: (Option<String>, Option<String>),
) -> Result<Outbound, HostError> {
    let Some(worker) = worker else {
        return prepare(host, ctx, binding);
    };
    if host.worker().is_some_and(|w| w.loaders.contains(binding)) {
        return crate::loader::outbound(host, ctx, binding, &worker, entry);
    }
    let caller = host
        .worker()
        .ok_or_else(|| HostError::type_error("dispatch namespace: no Worker is loaded"))?;
    let target = caller.dispatchers.get(binding).ok_or_else(|| {
        HostError::type_error(format!(
            "{binding} is not a dispatch namespace binding of this Worker"
        ))
    })?;
    if !target.consented {
        let (namespace, platform) = (&target.namespace, caller.namespace());
        let label = isolane_worker::dispatch::consent_label(platform);
        return Err(HostError::new(
            ErrorClass::Error,
            format!(
                "Dispatch refused: namespace {namespace} has not agreed to be dispatched into from namespace {platform}: its Namespace lacks the label {label}=true (set by a cluster admin)"
            ),
        ));
    }
    let given = |limit: u32| (limit > 0).then_some(limit);
    let limits = CallLimits {
        cpu_ms: given(cpu_ms),
        subrequests: given(subrequests),
    };
    let outbound = target
        .outbound
        .as_ref()
        .map(|outbound| outbound_target(caller.namespace(), outbound, entry.1.as_deref()));
    prepare_dispatch(host, ctx, (&target.namespace, &worker), limits, outbound)
}

/// The binding's outbound Worker, as the called Worker's `globalOutbound`
/// (`<namespace>/<worker>`: a Worker of the platform's namespace), its
/// `ctx.props` the `params` of `args` (the JSON `get()` was given).
fn outbound_target(platform: &str, outbound: &OutboundWorker, args: Option<&str>) -> ServiceTarget {
    let args: serde_json::Map<String, serde_json::Value> = args
        .and_then(|args| serde_json::from_str(args).ok())
        .unwrap_or_default();
    let params: serde_json::Map<String, serde_json::Value> = outbound
        .params
        .iter()
        .filter_map(|name| Some((name.clone(), args.get(name)?.clone())))
        .collect();
    ServiceTarget {
        worker: format!("{platform}/{}", outbound.worker),
        entrypoint: None,
        props: Some(serde_json::Value::Object(params).to_string()),
    }
}
