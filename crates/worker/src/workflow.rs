//! Workflow bindings (`{name, workflow: {name?, className, worker?}}`,
//! wrangler's `[[workflows]]`): `env.NAME.create()`, `get(id)`, … for the
//! instances of a `WorkflowEntrypoint` class a Worker of the same
//! Kubernetes namespace exports (docs/workflows.md). `isolane dev` runs
//! them; a cluster refuses the binding for now ([`NOT_ON_A_CLUSTER`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Why a cluster refuses workflow bindings for now: no node runs their
/// instances yet (docs/workflows.md, "Not built yet").
pub const NOT_ON_A_CLUSTER: &str = "Workflow bindings run in isolane dev only for now: a cluster does not run workflows yet (docs/workflows.md)";

/// `workflow` of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowBinding {
    /// The workflow's name (wrangler's `name`): Workers of one namespace
    /// naming the same workflow share its instances. `className` when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")
    )]
    pub name: Option<String>,
    /// The class extending `WorkflowEntrypoint`, as the Worker that runs
    /// it exports it by name (wrangler's `class_name`).
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_$][A-Za-z0-9_$]*$")
    )]
    pub class_name: String,
    /// The Worker of the same namespace that exports the class, when it is
    /// not this one (wrangler's `script_name`): its name only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub worker: Option<String>,
}

impl WorkflowBinding {
    /// The workflow's name: `name`, or the class's.
    pub fn workflow_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.class_name)
    }
}

impl crate::Binding {
    /// A workflow binding to class `class_name` (of Worker `worker`, or
    /// this one), the workflow named `workflow` (or the class's name).
    pub fn workflow(
        name: impl Into<String>,
        workflow: Option<&str>,
        class_name: impl Into<String>,
        worker: Option<&str>,
    ) -> Self {
        let mut binding = Self::images(name);
        binding.images = None;
        binding.workflow = Some(WorkflowBinding {
            name: workflow.map(str::to_owned),
            class_name: class_name.into(),
            worker: worker.map(str::to_owned),
        });
        binding
    }
}

/// Whether `name` is a workflow's name: 1 to 64 letters, digits, `_` and
/// `-`, not starting with `-`.
pub fn is_workflow_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    (1..=64).contains(&bytes.len()) && bytes[0] != b'-' && bytes.iter().all(ok)
}

/// A workflow binding: its name, class and Worker.
pub(crate) fn check(
    binding: &crate::Binding,
    flow: &WorkflowBinding,
) -> Result<(), crate::BindingError> {
    if !is_workflow_name(flow.workflow_name()) || !crate::binding::is_class_name(&flow.class_name)
    {
        return Err(crate::BindingError::InvalidWorkflow {
            name: binding.name.clone(),
        });
    }
    match &flow.worker {
        Some(worker) if !crate::is_worker_name(worker) => Err(crate::BindingError::InvalidWorker {
            name: binding.name.clone(),
            worker: worker.clone(),
        }),
        _ => Ok(()),
    }
}

/// The first workflow binding's refusal on a cluster, when `bindings` has
/// one ([`NOT_ON_A_CLUSTER`]).
pub fn workflows_on_a_cluster(bindings: &[crate::Binding]) -> Result<(), String> {
    match bindings.iter().find(|b| b.workflow.is_some()) {
        Some(b) => Err(format!("binding {:?}: {}", b.name, NOT_ON_A_CLUSTER)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_defaults() {
        assert!(is_workflow_name("my-flow_2"));
        for bad in ["", "-a", "a/b", "a b", &"a".repeat(65)] {
            assert!(!is_workflow_name(bad), "{bad}");
        }
        let binding = WorkflowBinding {
            name: None,
            class_name: "Flow".into(),
            worker: None,
        };
        assert_eq!(binding.workflow_name(), "Flow");
    }
}
