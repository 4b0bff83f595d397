#![allow(clippy::unwrap_used)]

use super::*;
use crate::fixtures::{spec, worker};
use serde_json::json;

fn consumer(
    namespace: &str,
    name: &str,
    queues: &[&str],
    bindings: serde_json::Value,
) -> Arc<Worker> {
    let mut spec = spec(Some("export default {}"), &[]);
    spec.queue_consumers = queues
        .iter()
        .map(|q| serde_json::from_value(json!({ "queue": q })).unwrap())
        .collect();
    spec.bindings = serde_json::from_value(bindings).unwrap();
    Arc::new(worker(namespace, name, 1, spec))
}

fn depth(messages: u64, oldest_ms: Option<i64>) -> QueueDepth {
    QueueDepth {
        messages,
        oldest_ms,
    }
}

fn key(namespace: &str, name: &str) -> Key {
    (namespace.to_owned(), name.to_owned())
}

/// A workflow is shown on the Worker that runs its class: the binding's
/// `worker`, or the binding's own Worker when it names none; a workflow
/// two bindings name is shown once; Workers of other namespaces apart.
#[test]
fn each_worker_shows_its_queues_and_the_workflows_it_runs() {
    let workers = [
        consumer("a", "mail", &["jobs", "late"], json!([])),
        consumer(
            "a",
            "front",
            &[],
            json!([
                {"name": "ORDER", "workflow": {"className": "Order", "worker": "orders"}},
                {"name": "OWN", "workflow": {"className": "Own", "name": "own-flow"}},
            ]),
        ),
        consumer(
            "a",
            "orders",
            &[],
            json!([{"name": "ORDER", "workflow": {"className": "Order"}}]),
        ),
        consumer("b", "mail", &["jobs"], json!([])),
        consumer("a", "plain", &[], json!([])),
    ];
    let all = concerns(&workers);
    let set = |names: &[&str]| {
        names
            .iter()
            .map(|n| (*n).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(all[&key("a", "mail")].queues, set(&["jobs", "late"]));
    assert_eq!(all[&key("b", "mail")].queues, set(&["jobs"]));
    assert_eq!(all[&key("a", "orders")].workflows, set(&["Order"]));
    assert_eq!(all[&key("a", "front")].workflows, set(&["own-flow"]));
    assert!(!all.contains_key(&key("a", "plain")));
    assert_eq!(all.len(), 4);
}

#[test]
fn the_figures_become_the_status_and_an_empty_field_is_left_out() {
    let concerns = Concerns {
        queues: ["idle", "jobs"].iter().map(|q| (*q).to_owned()).collect(),
        workflows: ["flow", "new"].iter().map(|q| (*q).to_owned()).collect(),
    };
    let mut figures = Figures::default();
    figures
        .queues
        .insert(key("a", "jobs"), depth(12, Some(1_764_363_600_250)));
    let mut counts = WorkflowCounts::new(WorkflowScope::new("a", "flow"));
    counts.waiting = 3;
    counts.complete = 7;
    figures.workflows.insert(key("a", "flow"), counts);
    // Another namespace's queue of the same name is not this one's.
    figures.queues.insert(key("b", "idle"), depth(99, Some(1)));

    let (queues, workflows) = shown("a", &concerns, &figures);
    assert_eq!(
        serde_json::to_value(&queues).unwrap(),
        json!([
            {"queue": "idle", "backlog": 0},
            {"queue": "jobs", "backlog": 12, "oldestMessageTime": "2025-11-28T21:00:00.25Z"},
        ])
    );
    assert_eq!(workflows[0].workflow, "flow");
    assert_eq!(
        (
            workflows[0].waiting,
            workflows[0].complete,
            workflows[0].running
        ),
        (3, 7, 0)
    );
    assert_eq!(
        workflows[1],
        WorkflowInstances {
            workflow: "new".into(),
            ..Default::default()
        }
    );

    let body = patch(&queues, &[]);
    assert_eq!(body["kind"], "Worker");
    assert_eq!(body["status"]["queues"][1]["backlog"], 12);
    assert!(body["status"].get("workflows").is_none(), "{body}");
    assert_eq!(patch(&[], &[])["status"], json!({}));
}
