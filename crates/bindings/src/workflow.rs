//! Workflows (docs/workflows.md): the binding (`env.NAME.create()`,
//! `get(id)`, an instance's `status()`, `pause()`, …) and the `step` of a
//! run (`step.do`, `step.sleep`, `step.waitForEvent`), both in
//! `js/40_workflow.js`, over one host function, `workflowOp`, that runs a
//! [`WorkflowOp`] on the node's store (`isolane_storage::Store::workflow`)
//! and resolves with its JSON answer.
//!
//! JavaScript names a binding (or, in a run, the workflow the engine's
//! event named), never a namespace: the host takes the namespace from the
//! Worker's id, and the Worker and class a created instance runs from the
//! binding in the bundle, so a Worker reaches only its own namespace's
//! workflows. Each op runs on the store's blocking pool, never on this
//! thread.

use std::rc::Rc;

use isolane_storage::{StoreError, WorkflowOp, WorkflowScope};

use isolane_engine::api::{ErrorClass, HostError, Unit};
use isolane_engine::api::{HostState, Settle, Settlement, begin_op};

/// `env.NAME` for a workflow binding, a run's `step`, and
/// `cloudflare:workflows` (`NonRetryableError`), loaded as
/// `cloudflare:workers` is.
pub(crate) fn unit() -> Unit {
    Unit::new("workflow")
        .js(&["40_workflow.js"])
        .node_module(
            "cloudflare:workflows",
            include_str!("../js/cloudflare/workflows.js"),
        )
        .function("workflowOp", workflow_op)
        .function("workflowPreserveNonRetryable", preserve_non_retryable)
}

host_fn! {
/// `workflowPreserveNonRetryable()` → whether the Worker's compatibility
/// settings keep a `NonRetryableError`'s own name and message as its
/// instance's error (`workflows_preserve_non_retryable_error_message`).
fn preserve_non_retryable<'s>(
    scope,
    host: Rc<HostState>,
) -> isolane_engine::api::HostResult<Option<v8::Local<'s, v8::Value>>> {
    let preserve = host
        .worker()
        .is_some_and(|bundle| bundle.compat.preserve_non_retryable);
    Ok(Some(v8::Boolean::new(scope, preserve).into()))
}
}

/// An op's answer: its JSON text, or the error it is rejected with.
struct Answered(Result<String, HostError>);

impl Settle for Answered {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
        match self.0 {
            Ok(json) => Ok(v8::String::new(scope, &json).map_or(undefined, Into::into)),
            Err(error) => Err(error.to_js(scope).ok_or(undefined)?),
        }
    }
}

/// The store's refusal or failure as the Worker sees it.
fn failed(error: StoreError) -> HostError {
    match error {
        StoreError::Workflow(error) => HostError::new(ErrorClass::Error, error.to_string()),
        other => {
            tracing::warn!(error = %other, kind = other.kind(), "workflow operation failed");
            HostError::new(
                ErrorClass::Error,
                format!("Workflow operation failed: {other}"),
            )
        }
    }
}

/// The store, the workflow and the op to run for the calling Worker: a
/// binding's (`binding` not empty) or, in a run, `workflow`'s.
fn target(
    host: &HostState,
    binding: &str,
    workflow: String,
    op: &str,
) -> Result<(isolane_storage::Store, WorkflowScope, WorkflowOp), HostError> {
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("Workflow: no Worker is loaded"))?;
    let mut op: WorkflowOp = serde_json::from_str(op)
        .map_err(|error| HostError::type_error(format!("Workflow: a bad operation: {error}")))?;
    let workflow = if binding.is_empty() {
        workflow
    } else {
        let target = worker.workflows.get(binding).ok_or_else(|| {
            HostError::type_error(format!("Workflow: no workflow binding {binding}"))
        })?;
        if let WorkflowOp::Create {
            worker: w, class, ..
        } = &mut op
        {
            *w = format!("{}/{}", worker.namespace(), target.worker);
            class.clone_from(&target.class);
        }
        target.workflow.clone()
    };
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            "Workflow: this node has no store configured for workflows",
        )
    })?;
    Ok((store, WorkflowScope::new(worker.namespace(), workflow), op))
}

host_fn! {
/// `workflowOp(binding, workflow, id, op)` → Promise of the answer's
/// JSON text; `id` empty for a new instance whose id the store makes.
fn workflow_op<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    workflow: String,
    id: String,
    op: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(&host, &binding, workflow, &op).map(|(store, scope, op)| async move {
        let id = (!id.is_empty()).then_some(id);
        let answer = store.workflow(scope, id, op).await;
        Answered(answer.map(|json| json.to_string()).map_err(failed))
    });
    let (resolver, promise, work) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let answered = work.await;
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(answered));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}
