//! Workflow bindings (`crate::workflow`) as bindings: their constructor
//! and checks.

use super::{Binding, BindingError, is_class_name, is_worker_name};
use crate::workflow::{WorkflowBinding, is_workflow_name};

impl Binding {
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

/// A workflow binding: its name, class and Worker.
pub(crate) fn check(binding: &Binding, flow: &WorkflowBinding) -> Result<(), BindingError> {
    if !is_workflow_name(flow.workflow_name()) || !is_class_name(&flow.class_name) {
        return Err(BindingError::InvalidWorkflow {
            name: binding.name.clone(),
        });
    }
    match &flow.worker {
        Some(worker) if !is_worker_name(worker) => Err(BindingError::InvalidWorker {
            name: binding.name.clone(),
            worker: worker.clone(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_bindings_are_checked() {
        let good = Binding::workflow("FLOW", None, "Order", Some("orders"));
        assert_eq!(
            crate::check_bindings([], std::slice::from_ref(&good)),
            Ok(())
        );
        let bad_class = Binding::workflow("FLOW", None, "9x", None);
        assert!(matches!(
            crate::check_bindings([], &[bad_class]),
            Err(BindingError::InvalidWorkflow { .. })
        ));
        let bad_worker = Binding::workflow("FLOW", Some("f"), "Order", Some("ns/w"));
        assert!(matches!(
            crate::check_bindings([], &[bad_worker]),
            Err(BindingError::InvalidWorker { .. })
        ));
        let mut two = good.clone();
        two.kv_namespace = Some("kv".into());
        assert!(matches!(
            crate::check_bindings([], &[two]),
            Err(BindingError::Kind { .. })
        ));
    }
}
