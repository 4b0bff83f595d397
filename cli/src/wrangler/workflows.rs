//! wrangler's `[[workflows]]`: each a workflow binding (`{name, workflow:
//! {name, className, worker}}`) to the `WorkflowEntrypoint` class
//! `class_name` that this Worker, or Worker `script_name` of the same
//! namespace, exports (docs/workflows.md). `isolane dev` runs them, and
//! `isolane deploy` maps them like any binding.

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::Problem;
use isolane_worker::Binding;

/// `workflows[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowConfig {
    pub binding: String,
    pub name: Option<String>,
    pub class_name: Option<String>,
    pub script_name: Option<String>,
    #[serde(rename = "limits")]
    _limits: Option<IgnoredAny>,
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
    #[serde(rename = "experimental_remote")]
    _experimental_remote: Option<IgnoredAny>,
}

/// `workflows` as bindings.
pub fn bindings(config: &super::Config, problems: &mut Vec<Problem>, bindings: &mut Vec<Binding>) {
    for (i, flow) in config.workflows.iter().enumerate() {
        let Some(class) = &flow.class_name else {
            problems.push(Problem {
                key: format!("workflows[{i}].class_name"),
                reason: "a workflow binding needs class_name".into(),
            });
            continue;
        };
        bindings.push(Binding::workflow(
            &flow.binding,
            flow.name.as_deref(),
            class,
            flow.script_name.as_deref(),
        ));
    }
}
