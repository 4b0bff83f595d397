//! Dispatch namespace bindings (`{name, dispatchNamespace: {namespace}}`,
//! docs/dispatch.md): `env.NAME.get(worker, args, {limits})` makes a
//! `Fetcher` (`js/30_service.js`) whose calls go the service path with the
//! Worker's name and the limits it lowers. Here the binding's namespace is
//! checked to have agreed, as the operator (or `isolane dev`) wrote it into
//! the caller's bundle; the caller's code names only the Worker. When the
//! binding names an outbound Worker, the call carries it with the params
//! `get()`'s `options.outbound` gave (`CallOutbound`): per call, so the
//! dispatched Worker's isolates are its own whatever the params.

use isolane_engine::api::service::{CallLimits, CallOutbound, Outbound, prepare, prepare_dispatch};
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
                "Dispatch refused: namespace {namespace} has not agreed to be dispatched into from namespace {platform}: its Namespace lacks the label {label}=true, and no TenantPolicy selecting it has {platform} in dispatch.from (set by a cluster admin)"
            ),
        ));
    }
    let given = |limit: u32| (limit > 0).then_some(limit);
    let limits = CallLimits {
        cpu_ms: given(cpu_ms),
        subrequests: given(subrequests),
    };
    let outbound = match &target.outbound {
        Some(outbound) => Some(call_outbound(
            caller.namespace(),
            outbound,
            entry.1.as_deref(),
        )?),
        None => None,
    };
    prepare_dispatch(host, ctx, (&target.namespace, &worker), limits, outbound)
}

/// The JSON text of `get()`'s `options.outbound` a call may pass at most.
const MAX_PARAMS_BYTES: usize = 64 * 1024;

/// The binding's outbound Worker for one call (`<platform>`'s Worker),
/// with the members of `given` (`get()`'s `options.outbound`, JSON) that
/// its `params` declare: others are not passed on.
fn call_outbound(
    platform: &str,
    outbound: &OutboundWorker,
    given: Option<&str>,
) -> Result<CallOutbound, HostError> {
    let params = match given {
        Some(given) if given.len() > MAX_PARAMS_BYTES => {
            return Err(HostError::type_error(format!(
                "options.outbound is {} bytes as JSON: at most {MAX_PARAMS_BYTES}",
                given.len()
            )));
        }
        Some(given) => {
            let given: serde_json::Map<String, serde_json::Value> = serde_json::from_str(given)
                .map_err(|_| HostError::type_error("options.outbound must be an object"))?;
            let declared: serde_json::Map<String, serde_json::Value> = outbound
                .params
                .iter()
                .filter_map(|name| Some((name.clone(), given.get(name)?.clone())))
                .collect();
            (!declared.is_empty()).then(|| serde_json::Value::Object(declared).to_string())
        }
        None => None,
    };
    Ok(CallOutbound {
        namespace: platform.to_owned(),
        worker: outbound.worker.clone(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outbound_call_passes_the_declared_params_only() {
        let egress = OutboundWorker {
            worker: "egress".into(),
            params: vec!["tenant".into(), "plan".into()],
        };
        let call = call_outbound(
            "platform",
            &egress,
            Some(r#"{"tenant":{"id":7},"secret":"x"}"#),
        );
        let call = call.unwrap();
        assert_eq!(
            (call.namespace.as_str(), call.worker.as_str()),
            ("platform", "egress")
        );
        assert_eq!(call.params.as_deref(), Some(r#"{"tenant":{"id":7}}"#));
        // None declared given, or none given: no params.
        let call = call_outbound("platform", &egress, Some(r#"{"secret":"x"}"#)).unwrap();
        assert_eq!(call.params, None);
        assert_eq!(
            call_outbound("platform", &egress, None).unwrap().params,
            None
        );
        let error = call_outbound("platform", &egress, Some("[1]")).unwrap_err();
        assert!(error.to_string().contains("must be an object"), "{error}");
        let big = format!(r#"{{"tenant":"{}"}}"#, "x".repeat(MAX_PARAMS_BYTES));
        let error = call_outbound("platform", &egress, Some(&big)).unwrap_err();
        assert!(error.to_string().contains("at most 65536"), "{error}");
    }
}
