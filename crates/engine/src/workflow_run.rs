//! One run of a workflow instance, `run(event, step)` of a Worker's
//! `WorkflowEntrypoint` class, run by [`crate::Engine::run`] as a
//! [`crate::Work::WorkflowRun`] (started by `isolane-node`'s
//! `workflows.rs`) under the same limits, slots and accounting as a
//! request. The instance replays from its step log in the store: the
//! bindings' `js/40_workflow.js` records each step as it returns, and how
//! the run ended (complete, errored, or waiting until a time or an event).
//!
//! The answer is a bodiless 200 once the run recorded how it ended; any
//! other answer (a limit, an exception outside a step) records nothing:
//! the runner runs the instance again later.

/// The instance a run is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRun {
    /// The workflow's name (of the Worker's namespace).
    pub workflow: String,
    /// The exported class extending `WorkflowEntrypoint`.
    pub class: String,
    /// The instance's id (`event.instanceId`).
    pub instance_id: String,
    /// `event.payload` as JSON text (`null` when there is none).
    pub payload: String,
    /// When the instance was created (`event.timestamp`), ms since the epoch.
    pub created_ms: i64,
}
