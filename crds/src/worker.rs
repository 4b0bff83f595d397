//! The `Worker` resource: spec, status and the parts they are made of.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use isolane_worker::{
    Binding, Limits, Route, TrafficStatus, TrafficTarget, Triggers, VersionAffinity,
};

/// A JavaScript worker: a `fetch` handler served from warm V8 isolates on the
/// Isolane runtime nodes, reachable on its routes through the router.
// The printer columns repeat `type_ = "string"`, which clippy mistakes for duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "isolane.dev",
    version = "v1alpha1",
    kind = "Worker",
    plural = "workers",
    namespaced,
    shortname = "wk",
    category = "isolane",
    status = "WorkerStatus",
    doc = "A JavaScript worker served by Isolane: its code, bindings, routes and limits (spec) and what the operator made of them (status).",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status",
        description = "Whether the Worker serves requests"
    ),
    printcolumn(
        name = "URL",
        type_ = "string",
        json_path = ".status.url",
        description = "Where the Worker answers"
    ),
    printcolumn(
        name = "Revision",
        type_ = "string",
        json_path = ".status.revision",
        description = "The latest revision: content hash of the newest bundle"
    ),
    printcolumn(
        name = "Traffic",
        type_ = "string",
        json_path = ".status.trafficSummary",
        description = "How requests are split between revisions"
    ),
    printcolumn(
        name = "Certificate",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"CertificateReady\")].reason",
        description = "How issuing the hosts' certificates goes (Issued, Pending, Failed, HostNotAdmitted); empty when certificates are off"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[kube(validation = kube::core::Rule::new(
    "!has(self.spec.traffic) || self.spec.traffic.all(t, !has(t.revision) || (has(self.status) && has(self.status.revisions) && self.status.revisions.exists(r, r.revision == t.revision)))"
).message("spec.traffic names a revision this Worker does not have: pick one from status.revisions"))]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "[has(self.script), has(self.scriptFrom), has(self.bundle)].filter(x, x).size() == 1",
        "message": "exactly one of spec.script or spec.scriptFrom must be set (or spec.bundle)"
    },
    {
        "rule": "(has(self.workerClass) ? self.workerClass : 'default') == (has(oldSelf.workerClass) ? oldSelf.workerClass : 'default')",
        "message": "spec.workerClass cannot change (it names the installation serving the Worker): delete the Worker and create it again with the new class"
    }
]))]
pub struct WorkerSpec {
    /// The worker's code, inline: an ES module (`export default { fetch(request, env, ctx) }`)
    /// or a service-worker script (`addEventListener('fetch', ...)`). Exactly one of
    /// `script` and `scriptFrom` is set. At most 1 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1048576))]
    pub script: Option<String>,

    /// Where to read the worker's code from, instead of inline `script`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_from: Option<ScriptFrom>,

    /// The worker's code as a bundle of modules pushed to an OCI registry
    /// (`isolane push`), named by digest: `registry.example/ns/app@sha256:<64 hex>`.
    /// A tag alone is refused, so every node runs the same bytes. Instead of
    /// `script` and `scriptFrom`. At most 16 MiB compressed and 64 MiB
    /// uncompressed. See docs/bundles.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    #[schemars(regex(pattern = r"^[^@/]+/[^@]+@sha256:[0-9a-f]{64}$"))]
    pub bundle: Option<String>,

    /// Secrets in the Worker's namespace (type `kubernetes.io/dockerconfigjson`,
    /// as made by `kubectl create secret docker-registry`) holding credentials
    /// for `bundle`'s registry; the first with an entry for that registry is
    /// used. Empty: the bundle is pulled anonymously.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub bundle_pull_secrets: Vec<PullSecretRef>,

    /// Bindings exposed to the handler as `env`: each a literal value or a key of a
    /// Secret or ConfigMap in the Worker's namespace. Names are unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub env: Vec<EnvVar>,

    /// Bindings to resources, in the handler's `env` beside the plain ones:
    /// `{name, kvNamespace}` binds a KV namespace (`env.NAME.get(key)`, ...).
    /// A KV namespace's data belongs to the Worker's Kubernetes namespace.
    /// `{name, service: {name, entrypoint, props}}` binds another Worker of
    /// the same namespace (`env.NAME.fetch(request)`, its methods over JS
    /// RPC, docs/services.md).
    /// Names are unique across `env` and `bindings`. See docs/state.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub bindings: Vec<Binding>,

    /// The host and path prefixes this Worker answers on. A host, every path under it
    /// and every wildcard over it belong to one namespace (the one that claimed it
    /// first); within it, a host + pathPrefix claimed by two Workers belongs to the
    /// older one. A Worker that does not get a route reports `RoutesAdmitted=False`.
    /// A Worker without routes is valid: other Workers reach it through their
    /// service bindings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["host", "pathPrefix"]))]
    pub routes: Vec<Route>,

    /// Per-request limits: CPU time, wall time, isolate heap and outbound fetches.
    #[serde(default)]
    pub limits: Limits,

    /// Narrows where the Worker's `fetch` may go, below what the platform's
    /// egress policy allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Egress>,

    /// Events that run the Worker besides HTTP requests: cron schedules that
    /// call its `scheduled(controller, env, ctx)` handler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggers: Option<Triggers>,

    /// The queues of this namespace whose messages the Worker's
    /// `queue(batch, env, ctx)` handler consumes, in batches (wrangler's
    /// `[[queues.consumers]]`): `{queue, maxBatchSize, maxBatchTimeoutMs,
    /// maxRetries, retryDelaySeconds, deadLetterQueue, maxConcurrency}`. A
    /// queue has at most one consumer Worker in a namespace. See
    /// docs/queues.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["queue"]))]
    pub queue_consumers: Vec<isolane_worker::QueueConsumer>,

    /// The date whose Workers runtime behaviour this Worker expects, `YYYY-MM-DD`:
    /// it turns on what workerd turns on from that date (Node.js compatibility
    /// from 2026-08-04). Unset: before every date. See docs/nodejs.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
    pub compatibility_date: Option<String>,

    /// Behaviours turned on or off whatever the date, with workerd's names:
    /// `nodejs_compat`, `no_nodejs_compat`, `nodejs_compat_v2`,
    /// `no_nodejs_compat_v2`, `nodejs_als`, `no_nodejs_als`,
    /// `nodejs_compat_populate_process_env`,
    /// `nodejs_compat_do_not_populate_process_env`. Any other flag is
    /// refused. See docs/nodejs.md.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub compatibility_flags: Vec<String>,

    /// On how many runtime nodes a hot Worker may be placed (1 to 64, default 1).
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = 64))]
    pub replicas: i32,

    /// How requests are split between revisions (every change of script, env,
    /// limits or egress is a new revision). Empty: every request goes to the
    /// latest revision. Otherwise the percentages sum to 100, at most one entry
    /// follows the latest revision, and the others pin revisions listed in
    /// `status.revisions`. Rolling back is pinning an older revision at 100.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.map(t, t.percent).sum() == 100",
            "message": "the percentages of spec.traffic must sum to 100"
        },
        {
            "rule": "self.filter(t, has(t.latestRevision) && t.latestRevision).size() <= 1",
            "message": "at most one entry of spec.traffic may follow the latest revision"
        },
        {
            "rule": "self.all(a, !has(a.tag) || self.filter(b, has(b.tag) && b.tag == a.tag).size() == 1)",
            "message": "tags in spec.traffic must be unique"
        },
        {
            "rule": "self.all(a, !has(a.revision) || self.filter(b, has(b.revision) && b.revision == a.revision).size() == 1)",
            "message": "a revision may appear in spec.traffic only once"
        }
    ]))]
    pub traffic: Vec<TrafficTarget>,

    /// Keeps requests that carry the same key (a header or cookie value) on
    /// the same revision while the split holds; requests without it are
    /// spread by the percentages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_affinity: Option<VersionAffinity>,

    /// Whether a request may choose its revision with the
    /// `x-isolane-revision` header (a revision, a tag of `spec.traffic`, or
    /// `latest`), for testing a revision before it takes traffic. Default
    /// false: the header is ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_revision_override: bool,

    /// How many revisions are kept besides those taking traffic (default
    /// 10): older ones are deleted, newest kept first.
    #[serde(default = "default_revision_history_limit")]
    #[schemars(range(min = 1, max = 50))]
    pub revision_history_limit: i32,

    /// Which installation of Isolane serves this Worker: the one whose
    /// operator and router run with this `--worker-class` (a cluster may
    /// hold several, such as staging and production). Unset: `default`, the
    /// class an installation serves unless told otherwise. It cannot change
    /// once the Worker exists. See docs/operator.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[schemars(regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub worker_class: Option<String>,
}

fn default_replicas() -> i32 {
    1
}

fn default_revision_history_limit() -> i32 {
    10
}

/// A Secret in the Worker's namespace, by name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct PullSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// A source for the worker's code.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScriptFrom {
    /// A key of a ConfigMap in the Worker's namespace that holds the script.
    pub config_map_key_ref: ConfigMapKeyRef,
}

/// A key of a ConfigMap in the Worker's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ConfigMapKeyRef {
    /// Name of the ConfigMap.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key within the ConfigMap's `data`.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// A key of a Secret in the Worker's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct SecretKeyRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key within the Secret's `data`.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// One binding in the handler's `env`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!(has(self.value) && has(self.valueFrom))",
        "message": "at most one of value or valueFrom may be set"
    }
]))]
pub struct EnvVar {
    /// The binding's name as the handler sees it (`env.NAME`): a JavaScript
    /// identifier made of letters, digits and `_`, not starting with a digit.
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")
    )]
    pub name: String,

    /// A literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub value: Option<String>,

    /// Read the value from a Secret or ConfigMap key instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvValueFrom>,

    /// A JSON value (an object, array, number, boolean or null; wrangler's
    /// `vars` that are not strings): the handler sees it parsed
    /// (`env.NAME.key`), not as text. At most 64 KiB as compact JSON. Not
    /// with `value` or `valueFrom` (the webhook's rule: a CEL rule cannot
    /// see a field of any type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "any_json")]
    pub json: Option<serde_json::Value>,
}

/// The schema of a field that holds any JSON value: the API server keeps it
/// as written (a structural schema's way to say "anything").
fn any_json(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "A JSON value (an object, array, number, boolean or null; wrangler's `vars` that are not strings): the handler sees it parsed (`env.NAME.key`), not as text. At most 64 KiB as compact JSON. Not with `value` or `valueFrom`.",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// The largest JSON binding, as compact JSON text (a literal `value`'s limit).
pub const MAX_JSON_VAR_BYTES: usize = 65536;

/// A JSON binding over [`MAX_JSON_VAR_BYTES`] as compact JSON: refused by
/// the admission webhook and by `isolane dev`, in these words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.env[{name}].json: {bytes} bytes as compact JSON, more than {MAX_JSON_VAR_BYTES}")]
pub struct JsonVarTooLarge {
    /// The binding's name.
    pub name: String,
    /// Its size as compact JSON text.
    pub bytes: usize,
}

// === impl EnvVar ===

impl EnvVar {
    /// Whether its `json` (if any) is within [`MAX_JSON_VAR_BYTES`] as
    /// compact JSON: the one bound the webhook and `isolane dev` apply.
    pub fn check_json_size(&self) -> Result<(), JsonVarTooLarge> {
        let bytes = self.json.as_ref().map_or(0, |json| json.to_string().len());
        if bytes > MAX_JSON_VAR_BYTES {
            return Err(JsonVarTooLarge {
                name: self.name.clone(),
                bytes,
            });
        }
        Ok(())
    }
}

/// Where an env binding's value comes from: exactly one of the two references.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.secretKeyRef) != has(self.configMapKeyRef)",
        "message": "exactly one of secretKeyRef or configMapKeyRef must be set"
    }
]))]
pub struct EnvValueFrom {
    /// A key of a Secret in the Worker's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
    /// A key of a ConfigMap in the Worker's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<ConfigMapKeyRef>,
}

/// Where the Worker's `fetch` may go.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Egress {
    /// When set, `fetch` reaches only these hosts: exact names (`api.example.com`)
    /// or `*.example.com` for every host under example.com. Anything else is refused
    /// with a TypeError. The platform's egress policy (public addresses only, unless
    /// the admin opened more) applies on top.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 253)))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.all(h, h.matches('^(\\\\*\\\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",
            "message": "each host must be a lower-case DNS name such as api.example.com, or a wildcard such as *.example.com"
        }
    ]))]
    pub allowed_hosts: Vec<String>,
}

/// What the operator observed and decided about a Worker.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The latest revision: content hash of the newest resolved bundle
    /// (script, env, limits, egress) that parses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,

    /// How requests are split now, `spec.traffic` resolved to revisions
    /// (the router reads this).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub traffic: Vec<TrafficStatus>,

    /// The split at a glance, e.g. `90% 1a2b3c4d (stable), 10% 5e6f7a8b (latest)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_summary: Option<String>,

    /// The revisions kept, newest first: each one's share and readiness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub revisions: Vec<RevisionStatus>,

    /// `Ready`, `ScriptValid`, `RoutesAdmitted` and `ServicesBound`, each with a reason and
    /// message; `CertificateReady` too when the operator asks cert-manager for certificates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,

    /// The URL of the Worker's first route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,

    /// The runtime node and thread of each replica, as placement decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<ReplicaPlacement>,

    /// The cron triggers: the last run and the next tick (written by the
    /// router that runs the schedules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<CronStatus>,

    /// The queues it consumes: what each holds, read from the durable
    /// store every `--backlog-interval` (written by the operator's leader
    /// under a field manager of its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub queues: Vec<QueueBacklog>,

    /// The workflows whose class it runs: their instances by status, read
    /// with the queues.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub workflows: Vec<WorkflowInstances>,
}

/// What one queue a Worker consumes holds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueBacklog {
    /// The queue, by name, in the Worker's namespace.
    pub queue: String,
    /// Messages it holds: ready, delayed, or in a batch under way.
    pub backlog: u64,
    /// When its oldest message was sent (RFC 3339); absent when it holds
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_message_time: Option<String>,
}

/// The instances of one workflow a Worker runs, by status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowInstances {
    /// The workflow, by name, in the Worker's namespace.
    pub workflow: String,
    /// Created, never run.
    pub queued: u64,
    pub running: u64,
    /// Sleeping, waiting for an event or for a retry's delay.
    pub waiting: u64,
    pub paused: u64,
    pub errored: u64,
    pub complete: u64,
    pub terminated: u64,
}

/// One revision the operator keeps.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionStatus {
    /// The revision (content hash of its bundle).
    #[schemars(length(max = 16))]
    pub revision: String,
    /// When it was first written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Its share of the traffic now, 0 to 100.
    pub percent: i32,
    /// Whether its bundle is written and nodes can run it.
    pub ready: bool,
}

/// What the cron scheduler did and will do for a Worker.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronStatus {
    /// The most recent tick run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<CronRun>,
    /// When the next tick of any schedule is due (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_tick: Option<String>,
}

/// One tick that ran.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronRun {
    /// The schedule that fired, as written in `spec.triggers.crons`.
    pub cron: String,
    /// When the tick was due (RFC 3339): `controller.scheduledTime`.
    pub scheduled_time: String,
    /// When the run finished (RFC 3339).
    pub finished_time: String,
    /// `ok`, or why not: `exception`, `cpu_limit`, `memory_limit`,
    /// `wall_timeout`, `no_live_node`, …
    pub outcome: String,
    /// Detail of a failed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Where one replica of a Worker runs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ReplicaPlacement {
    /// Name of the runtime node.
    pub node: String,
    /// Index of the pinned thread on that node.
    pub thread: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_var(json: serde_json::Value) -> EnvVar {
        EnvVar {
            name: "CONFIG".to_owned(),
            value: None,
            value_from: None,
            json: Some(json),
        }
    }

    /// The bound is on the compact JSON text: 64 KiB passes, a byte more
    /// is refused, saying by how much.
    #[test]
    fn a_json_var_is_bounded_as_compact_json() {
        // A string's JSON text is its characters and two quotes.
        let at_bound = json_var(serde_json::json!("x".repeat(MAX_JSON_VAR_BYTES - 2)));
        assert_eq!(at_bound.check_json_size(), Ok(()));
        let over = json_var(serde_json::json!("x".repeat(MAX_JSON_VAR_BYTES - 1)));
        let error = over.check_json_size().unwrap_err();
        assert_eq!(
            error.to_string(),
            "spec.env[CONFIG].json: 65537 bytes as compact JSON, more than 65536"
        );
        let text = EnvVar {
            json: None,
            value: Some("x".repeat(70_000)),
            ..json_var(serde_json::Value::Null)
        };
        assert_eq!(text.check_json_size(), Ok(()), "only json is bounded here");
    }
}
