//! The `Worker` resource: spec, status and the parts they are made of.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Limits;

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
        description = "Content hash of the bundle being served"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "has(self.script) != has(self.scriptFrom)",
        "message": "exactly one of spec.script or spec.scriptFrom must be set"
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

    /// Bindings exposed to the handler as `env`: each a literal value or a key of a
    /// Secret or ConfigMap in the Worker's namespace. Names are unique.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 128))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub env: Vec<EnvVar>,

    /// The host and path prefixes this Worker answers on. A host, every path under it
    /// and every wildcard over it belong to one namespace (the one that claimed it
    /// first); within it, a host + pathPrefix claimed by two Workers belongs to the
    /// older one. A Worker that does not get a route reports `RoutesAdmitted=False`.
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

    /// On how many runtime nodes a hot Worker may be placed (1 to 64, default 1).
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = 64))]
    pub replicas: i32,
}

fn default_replicas() -> i32 {
    1
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

/// Cron schedules for the Worker's `scheduled` handler.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Triggers {
    /// Standard five-field cron schedules (minute hour day-of-month month
    /// day-of-week, e.g. `*/5 * * * *` or `0 9 * * MON-FRI`; POSIX: 0 or 7 is
    /// Sunday; a leading sixth field for seconds is accepted) or nicknames
    /// such as `@hourly`. Each tick calls the Worker's
    /// `scheduled(controller, env, ctx)` once, on the node and thread where
    /// it is placed, under its limits; `controller.cron` is the schedule as
    /// written here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 128)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub crons: Vec<String>,

    /// The IANA time zone the schedules are read in (default `UTC`), e.g.
    /// `Europe/Paris`: `0 9 * * *` is then 09:00 Paris time, across DST.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub time_zone: Option<String>,
}

/// A host and path prefix the Worker answers on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// A DNS name (`api.example.com`) or a wildcard of one label (`*.example.com`),
    /// lower case.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.matches('^(\\\\*\\\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
            "message": "must be a lower-case DNS name such as api.example.com, or a wildcard such as *.example.com"
        }
    ]))]
    pub host: String,

    /// The path prefix this route matches (default `/`); starts with `/`. The longest
    /// matching prefix wins.
    #[serde(default = "default_path_prefix")]
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(extend("x-kubernetes-validations" = [
        {
            "rule": "self.startsWith('/')",
            "message": "must start with /"
        }
    ]))]
    pub path_prefix: String,
}

fn default_path_prefix() -> String {
    "/".to_owned()
}

/// What the operator observed and decided about a Worker.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// Content hash of the resolved bundle (script, env, limits) being served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,

    /// `Ready`, `ScriptValid` and `RoutesAdmitted`, each with a reason and message.
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
