//! Workflow bindings (`{name, workflow: {name?, className, worker?}}`,
//! wrangler's `[[workflows]]`): `env.NAME.create()`, `get(id)`, … for the
//! instances of a `WorkflowEntrypoint` class a Worker of the same
//! Kubernetes namespace exports (docs/workflows.md). `isolane dev` runs
//! them, and a cluster's nodes (each workflow on its owner node).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

/// The workflow a workflow binding creates and reaches instances of, as
/// a node runs it (the engine's bundle).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowTarget {
    /// The workflow's name in the Worker's namespace.
    pub workflow: String,
    /// The Worker that runs it (its name; the namespace is the binding
    /// Worker's own).
    pub worker: String,
    /// The class it exports extending `WorkflowEntrypoint`.
    pub class: String,
}

/// Whether `name` is a workflow's name: 1 to 64 letters, digits, `_` and
/// `-`, not starting with `-`.
pub fn is_workflow_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let ok = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    (1..=64).contains(&bytes.len()) && bytes[0] != b'-' && bytes.iter().all(ok)
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
