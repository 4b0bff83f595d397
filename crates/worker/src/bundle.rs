//! The bundle: a Worker resolved into everything a runtime node needs to run it.
//!
//! The operator writes one bundle per Worker into a Secret in its own namespace
//! (labelled [`BUNDLE_LABEL`]=`true`, the JSON under the key [`BUNDLE_KEY`]); runtime
//! nodes watch those Secrets and nothing else. References are resolved (script from
//! ConfigMap, env from Secrets and ConfigMaps) so a node never reads user namespaces.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Binding;
use crate::compat::{Compat, CompatError};
use crate::{Limits, Modules, Route};

/// Label on every bundle Secret; its value is `"true"`.
pub const BUNDLE_LABEL: &str = "isolane.dev/bundle";
/// Annotation on a bundle Secret holding the worker id (`namespace/name`).
pub const WORKER_ID_ANNOTATION: &str = "isolane.dev/worker-id";
/// Annotation on a bundle Secret holding the bundle's revision.
pub const REVISION_ANNOTATION: &str = "isolane.dev/revision";
/// The key in the Secret's `data` that holds the bundle as JSON.
pub const BUNDLE_KEY: &str = "bundle.json";

/// A Worker resolved for execution.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// `namespace/name` of the Worker.
    pub worker_id: String,
    /// Content hash of `script`, `env` and `limits` (see [`Bundle::compute_revision`]).
    pub revision: String,
    /// The resolved script source; with [`Bundle::modules`], the main
    /// module's source (what a node that predates modules would run).
    pub script: String,
    /// The Worker's modules when it is more than one script (see
    /// [`crate::Modules`]); part of the revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules: Option<Modules>,
    /// Resolved bindings, secrets included.
    pub env: BTreeMap<String, String>,
    /// JSON bindings (`spec.env[].json`, wrangler's `vars` that are not
    /// strings): name to the value as compact JSON text, which the handler
    /// sees parsed. Names are unique across `env` and this; part of the
    /// revision.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub json_env: BTreeMap<String, String>,
    /// Per-request limits.
    pub limits: Limits,
    /// The routes the Worker answers on (as admitted by the operator).
    #[serde(default)]
    pub routes: Vec<Route>,
    /// `spec.egress.allowedHosts`: when not empty, the only hosts `fetch` reaches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// `spec.compatibilityDate`, as written (see [`crate::compat`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility_date: Option<String>,
    /// `spec.compatibilityFlags`, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compatibility_flags: Vec<String>,
    /// `spec.bindings`: KV namespaces by binding name (checked by
    /// [`crate::check_bindings`]); part of the revision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bindings: Vec<Binding>,
    /// `spec.queueConsumers`: the queues of its namespace whose batches its
    /// `queue` handler gets (checked by [`crate::queue::check_consumers`]);
    /// part of the revision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_consumers: Vec<crate::QueueConsumer>,
    /// `spec.bundle`: the Worker's modules are an OCI artifact named by
    /// digest, which the node pulls (with these credentials), verifies and
    /// caches; `script` and `modules` are then empty in the Secret. The
    /// reference is part of the revision; the credentials are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<ArtifactSource>,
    /// The static assets its artifact carries, as the node serves them
    /// (built where the artifact is pulled, or by `isolane dev` from the
    /// project): never in the bundle Secret, and named by the artifact's
    /// digest, which is part of the revision.
    #[serde(skip)]
    pub assets: Option<AssetSite>,
    /// The digest of static assets read from a folder, where no artifact
    /// names them (`isolane dev`); part of the revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assets_digest: Option<String>,
    /// The target namespaces of the Worker's dispatch namespace bindings
    /// that agree to be dispatched into from its namespace (their Namespace
    /// carries [`crate::dispatch::consent_label`]), as the operator (or
    /// `isolane dev`) saw them: the node refuses calls into the others.
    /// Part of the revision, so a label set or removed reaches the nodes as
    /// a new revision.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub dispatch_consent: BTreeSet<String>,
    /// The CPU quota of the Worker's namespace on a node, in CPU
    /// milliseconds per second (`TenantPolicy` `quotas.cpuMsPerSecond`,
    /// docs/policy.md): the node refuses the namespace's requests past it.
    /// Part of the revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ms_per_second: Option<u32>,
}

/// A Worker version's assets, shared: equal only to itself (the bytes are
/// the artifact's, named by its digest).
#[derive(Clone, Debug)]
pub struct AssetSite(pub std::sync::Arc<isolane_assets::Site>);

impl PartialEq for AssetSite {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for AssetSite {}

/// Where a bundle's modules are pulled from: a reference by digest, and
/// the credentials the Worker's pull secret holds for its registry.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactSource {
    /// `registry/repository@sha256:<hex>`.
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl std::fmt::Debug for ArtifactSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactSource")
            .field("reference", &self.reference)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Bundle {
    /// Builds a bundle and computes its revision.
    pub fn new(
        worker_id: String,
        script: String,
        env: BTreeMap<String, String>,
        limits: Limits,
        routes: Vec<Route>,
    ) -> Self {
        let revision = Self::compute_revision(&script, &env, &limits);
        Self {
            worker_id,
            revision,
            script,
            modules: None,
            env,
            json_env: BTreeMap::new(),
            limits,
            routes,
            allowed_hosts: Vec::new(),
            compatibility_date: None,
            compatibility_flags: Vec::new(),
            bindings: Vec::new(),
            queue_consumers: Vec::new(),
            artifact: None,
            assets: None,
            assets_digest: None,
            dispatch_consent: BTreeSet::new(),
            cpu_ms_per_second: None,
        }
    }

    /// The same bundle made of the artifact `source` names (its reference
    /// is part of the revision, so every digest is a revision of its own).
    pub fn with_artifact(mut self, source: ArtifactSource) -> Self {
        self.artifact = Some(source);
        self.revision = self.revision_now();
        self
    }

    /// The bundle with the modules pulled for its artifact, as a node runs
    /// it (the revision stays the one the operator named).
    pub fn with_pulled_modules(mut self, modules: Modules) -> Self {
        self.script = modules.main().text().unwrap_or_default().to_owned();
        self.modules = Some(modules);
        self
    }

    /// The bundle with its artifact's static assets (`None`: it has none).
    pub fn with_assets(mut self, assets: Option<std::sync::Arc<isolane_assets::Site>>) -> Self {
        self.assets = assets.map(AssetSite);
        self
    }

    /// The bundle with the digest of its assets folder as part of its
    /// revision ([`isolane_assets::AssetFiles::digest`]): a Worker whose
    /// assets changed is a new revision, whose isolates answer
    /// `env.<assets.binding>` from the new files.
    pub fn with_assets_digest(mut self, digest: Option<String>) -> Self {
        self.assets_digest = digest;
        self.revision = self.revision_now();
        self
    }

    /// The same bundle made of `modules` (its `script` becomes the main
    /// module's source); the modules are part of the revision.
    pub fn with_modules(mut self, modules: Modules) -> Self {
        self.script = modules.main().text().unwrap_or_default().to_owned();
        self.modules = Some(modules);
        self.revision = self.revision_now();
        self
    }

    /// The revision of this bundle as it is now.
    fn revision_now(&self) -> String {
        let base =
            Self::compute_revision_with(&self.script, &self.env, &self.limits, &self.allowed_hosts);
        let compat = self.compatibility_date.is_some() || !self.compatibility_flags.is_empty();
        if self.modules.is_none()
            && !compat
            && self.bindings.is_empty()
            && self.queue_consumers.is_empty()
            && self.artifact.is_none()
            && self.json_env.is_empty()
            && self.assets_digest.is_none()
            && self.dispatch_consent.is_empty()
            && self.cpu_ms_per_second.is_none()
        {
            // Revisions of Workers without either stay what they were.
            return base;
        }
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(base.as_bytes());
        if let Some(modules) = &self.modules {
            module_fields(modules, &mut field);
        }
        if compat {
            self.compat_fields(&mut field);
        }
        for (name, value) in &self.json_env {
            field(b"json-env");
            field(name.as_bytes());
            field(value.as_bytes());
        }
        if let Some(artifact) = &self.artifact {
            field(b"artifact");
            field(artifact.reference.as_bytes());
        }
        if let Some(digest) = &self.assets_digest {
            field(b"assets");
            field(digest.as_bytes());
        }
        for binding in &self.bindings {
            binding_fields(binding, &mut field);
        }
        for namespace in &self.dispatch_consent {
            field(b"dispatch-consent");
            field(namespace.as_bytes());
        }
        if let Some(quota) = self.cpu_ms_per_second {
            field(b"cpu-ms-per-second");
            field(&quota.to_le_bytes());
        }
        consumer_fields(&self.queue_consumers, &mut field);
        hex::encode(&hash.finalize()[..8])
    }

    /// The compatibility settings as fields of the revision.
    fn compat_fields(&self, field: &mut impl FnMut(&[u8])) {
        field(b"compatibility-date");
        field(
            self.compatibility_date
                .as_deref()
                .unwrap_or_default()
                .as_bytes(),
        );
        for flag in &self.compatibility_flags {
            field(b"compatibility-flag");
            field(flag.as_bytes());
        }
    }

    /// The same bundle with `spec.bindings` (sorted by name), which are
    /// part of the revision.
    pub fn with_bindings(mut self, mut bindings: Vec<Binding>) -> Self {
        bindings.sort();
        self.bindings = bindings;
        self.revision = self.revision_now();
        self
    }

    /// The same bundle with the target namespaces of its dispatch bindings
    /// that consent ([`Bundle::dispatch_consent`]), part of the revision.
    pub fn with_dispatch_consent(mut self, consent: BTreeSet<String>) -> Self {
        self.dispatch_consent = consent;
        self.revision = self.revision_now();
        self
    }

    /// The same bundle with its namespace's CPU quota
    /// ([`Bundle::cpu_ms_per_second`]), part of the revision.
    pub fn with_cpu_quota(mut self, cpu_ms_per_second: Option<u32>) -> Self {
        self.cpu_ms_per_second = cpu_ms_per_second;
        self.revision = self.revision_now();
        self
    }

    /// The same bundle with `spec.queueConsumers`, which are part of the
    /// revision.
    pub fn with_queue_consumers(mut self, consumers: Vec<crate::QueueConsumer>) -> Self {
        self.queue_consumers = consumers;
        self.revision = self.revision_now();
        self
    }

    /// The target namespaces of the dispatch namespace bindings among
    /// `bindings`.
    pub fn dispatch_targets(bindings: &[Binding]) -> BTreeSet<String> {
        bindings
            .iter()
            .filter_map(|b| b.dispatch_namespace.as_ref())
            .map(|d| d.namespace.clone())
            .collect()
    }

    /// The same bundle with JSON bindings (name to compact JSON text), which
    /// are part of the revision.
    pub fn with_json_env(mut self, json_env: BTreeMap<String, String>) -> Self {
        self.json_env = json_env;
        self.revision = self.revision_now();
        self
    }

    /// The same bundle with compatibility settings (`spec.compatibilityDate`
    /// and `spec.compatibilityFlags`), which are part of the revision.
    pub fn with_compatibility(mut self, date: Option<String>, flags: Vec<String>) -> Self {
        self.compatibility_date = date;
        self.compatibility_flags = flags;
        self.revision = self.revision_now();
        self
    }

    /// What the bundle's compatibility settings turn on.
    pub fn compat(&self) -> Result<Compat, CompatError> {
        Compat::from_settings(
            self.compatibility_date.as_deref(),
            &self.compatibility_flags,
        )
    }

    /// The same bundle with `spec.egress.allowedHosts`, which is part of the
    /// revision (an isolate runs with the hosts of its revision).
    pub fn with_allowed_hosts(mut self, allowed_hosts: Vec<String>) -> Self {
        self.allowed_hosts = allowed_hosts;
        self.revision = self.revision_now();
        self
    }

    /// The revision of a bundle: the first 16 hex digits of a SHA-256 over the
    /// script, the env (sorted by name) and the limits, each length-prefixed so no
    /// two different inputs share an encoding. Routes are not part of it: moving a
    /// route does not restart isolates.
    pub fn compute_revision(
        script: &str,
        env: &BTreeMap<String, String>,
        limits: &Limits,
    ) -> String {
        Self::compute_revision_with(script, env, limits, &[])
    }

    /// [`Bundle::compute_revision`], with the allowed hosts (none hash as
    /// before, so revisions of Workers without them do not change).
    pub fn compute_revision_with(
        script: &str,
        env: &BTreeMap<String, String>,
        limits: &Limits,
        allowed_hosts: &[String],
    ) -> String {
        let mut hash = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        field(script.as_bytes());
        for (name, value) in env {
            field(name.as_bytes());
            field(value.as_bytes());
        }
        for limit in [
            limits.cpu_ms,
            limits.wall_ms,
            limits.memory_mib,
            limits.subrequests,
        ] {
            field(&limit.to_le_bytes());
        }
        for host in allowed_hosts {
            field(b"allowed-host");
            field(host.as_bytes());
        }
        let digest = hash.finalize();
        hex::encode(&digest[..8])
    }

    /// The name of the Secret that held the one bundle of `namespace/name`
    /// before revisions had their own (operators before traffic splitting
    /// wrote it; the operator now deletes it): a valid DNS subdomain, unique
    /// per worker id.
    pub fn secret_name(namespace: &str, name: &str) -> String {
        Self::secret_name_within(namespace, name, 253)
    }

    /// The name of the Secret that holds revision `revision` of
    /// `namespace/name`: a valid DNS subdomain (revisions are 16 hex digits),
    /// unique per worker id and revision, stable across operator restarts.
    pub fn revision_secret_name(namespace: &str, name: &str, revision: &str) -> String {
        let revision: String = revision
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(16)
            .collect::<String>()
            .to_ascii_lowercase();
        let base = Self::secret_name_within(namespace, name, 253 - 17);
        format!("{base}-{revision}")
    }

    fn secret_name_within(namespace: &str, name: &str, limit: usize) -> String {
        let readable = format!("wk-{namespace}-{name}");
        let digest = Sha256::digest(format!("{namespace}/{name}").as_bytes());
        let suffix = hex::encode(&digest[..4]);
        // Keep room for "-" and the suffix.
        let mut prefix: String = readable.chars().take(limit - 9).collect();
        while prefix.ends_with(['-', '.']) {
            prefix.pop();
        }
        format!("{prefix}-{suffix}")
    }
}

/// The fields a bundle's modules add to its revision, in order: the main
/// module's name, then each module's name, type and content.
fn module_fields(modules: &Modules, field: &mut impl FnMut(&[u8])) {
    field(modules.main_name().as_bytes());
    for module in modules.iter() {
        field(module.name.as_bytes());
        field(module.kind.as_str().as_bytes());
        field(&module.content);
    }
}

/// The fields one binding adds to a bundle's revision.
/// Each queue consumer as its JSON (every field, each `None` left out).
fn consumer_fields(consumers: &[crate::QueueConsumer], field: &mut impl FnMut(&[u8])) {
    for consumer in consumers {
        field(b"queue-consumer");
        field(&serde_json::to_vec(consumer).unwrap_or_default());
    }
}

fn binding_fields(binding: &Binding, field: &mut impl FnMut(&[u8])) {
    field(b"binding");
    field(binding.name.as_bytes());
    field(b"kv-namespace");
    field(
        binding
            .kv_namespace
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
    );
    if let Some(object) = &binding.durable_object {
        field(b"durable-object");
        field(object.class_name.as_bytes());
        field(object.worker.as_deref().unwrap_or_default().as_bytes());
        // Only when set, so the revisions of bundles made before it stay.
        if object.sqlite {
            field(b"sqlite");
        }
    }
    if let Some(service) = &binding.service {
        field(b"service");
        field(service.name.as_bytes());
        field(service.entrypoint.as_deref().unwrap_or_default().as_bytes());
        let props = service.props.as_ref().map(crate::Props::to_json);
        field(props.as_deref().unwrap_or_default().as_bytes());
    }
    if let Some(dispatch) = &binding.dispatch_namespace {
        field(b"dispatch-namespace");
        field(dispatch.namespace.as_bytes());
    }
    if let Some(queue) = &binding.queue {
        field(b"queue");
        field(queue.name.as_bytes());
    }
    if let Some(d1) = &binding.d1 {
        field(b"d1");
        field(d1.database.as_bytes());
    }
    if binding.images.is_some() {
        field(b"images");
    }
    if binding.worker_loader.is_some() {
        field(b"workerLoader");
    }
    if let Some(r2) = &binding.r2_bucket {
        field(b"r2Bucket");
        field(r2.bucket.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_changes_with_each_part_and_only_then() {
        let env = BTreeMap::from([("A".to_owned(), "1".to_owned())]);
        let base = Bundle::compute_revision("s", &env, &Limits::default());
        assert_eq!(base.len(), 16);
        assert_eq!(
            base,
            Bundle::compute_revision("s", &env, &Limits::default())
        );
        assert_ne!(
            base,
            Bundle::compute_revision("t", &env, &Limits::default())
        );
        let env2 = BTreeMap::from([("A".to_owned(), "2".to_owned())]);
        assert_ne!(
            base,
            Bundle::compute_revision("s", &env2, &Limits::default())
        );
        let limits = Limits {
            cpu_ms: 51,
            ..Limits::default()
        };
        assert_ne!(base, Bundle::compute_revision("s", &env, &limits));
        // Length prefixes: moving bytes between fields changes the revision.
        let env3 = BTreeMap::from([("A1".to_owned(), String::new())]);
        assert_ne!(
            base,
            Bundle::compute_revision("s", &env3, &Limits::default())
        );
    }

    #[test]
    fn modules_are_part_of_the_revision() {
        use crate::{Module, ModuleKind};
        let modules = |text: &str| {
            Modules::new(
                "main.js",
                vec![
                    Module::new("main.js", ModuleKind::ESModule, "import t from './t.txt'"),
                    Module::new("t.txt", ModuleKind::Text, text),
                ],
            )
            .expect("valid")
        };
        let plain = Bundle::new(
            "a/b".into(),
            "import t from './t.txt'".into(),
            BTreeMap::new(),
            Limits::default(),
            Vec::new(),
        );
        let one = plain.clone().with_modules(modules("one"));
        let two = plain.clone().with_modules(modules("two"));
        assert_eq!(one.script, plain.script);
        assert_ne!(one.revision, plain.revision);
        assert_ne!(one.revision, two.revision);
        assert_eq!(
            one.revision,
            plain.clone().with_modules(modules("one")).revision
        );
        let hosts = one.clone().with_allowed_hosts(vec!["x.test".into()]);
        assert_ne!(hosts.revision, one.revision);
        assert!(hosts.modules.is_some());
        let dated = one
            .clone()
            .with_compatibility(Some("2026-08-04".into()), Vec::new());
        assert_ne!(dated.revision, one.revision);
        let flagged = plain
            .clone()
            .with_compatibility(None, vec!["nodejs_compat".into()]);
        assert_ne!(flagged.revision, plain.revision);
        assert_eq!(flagged.compat().map(|c| c.node), Ok(crate::NodeCompat::V1));
        assert_eq!(
            plain.clone().with_compatibility(None, Vec::new()).revision,
            plain.revision
        );
        let kv = plain
            .clone()
            .with_bindings(vec![crate::Binding::kv("KV", "a")]);
        assert_ne!(kv.revision, plain.revision);
        assert_ne!(
            kv.revision,
            plain
                .clone()
                .with_bindings(vec![crate::Binding::kv("KV", "b")])
                .revision
        );
        assert_eq!(
            plain.clone().with_bindings(Vec::new()).revision,
            plain.revision
        );
        let json = |text: &str| {
            plain
                .clone()
                .with_json_env(BTreeMap::from([("C".to_owned(), text.to_owned())]))
        };
        assert_ne!(json("{\"a\":1}").revision, plain.revision);
        assert_ne!(json("{\"a\":1}").revision, json("{\"a\":2}").revision);
        assert_eq!(
            plain.clone().with_json_env(BTreeMap::new()).revision,
            plain.revision
        );
    }

    #[test]
    fn secret_names_are_valid_and_distinct() {
        let a = Bundle::secret_name("default", "hello");
        assert!(a.starts_with("wk-default-hello-"));
        assert_ne!(a, Bundle::secret_name("default-hello", ""));
        let long = Bundle::secret_name(&"n".repeat(63), &"x".repeat(253));
        assert!(long.len() <= 253, "{}", long.len());
    }

    #[test]
    fn revision_secret_names_are_valid_and_distinct_per_revision() {
        let a = Bundle::revision_secret_name("default", "hello", "0123456789abcdef");
        let b = Bundle::revision_secret_name("default", "hello", "fedcba9876543210");
        assert!(a.starts_with("wk-default-hello-"));
        assert!(a.ends_with("-0123456789abcdef"));
        assert_ne!(a, b);
        assert_ne!(a, Bundle::secret_name("default", "hello"));
        let long =
            Bundle::revision_secret_name(&"n".repeat(63), &"x".repeat(253), "0123456789abcdef");
        assert!(long.len() <= 253, "{}", long.len());
        assert!(long.ends_with("-0123456789abcdef"));
        // Whatever the revision holds, the name stays a DNS subdomain.
        let odd = Bundle::revision_secret_name("d", "h", "AB/../cd");
        assert!(
            odd.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{odd}"
        );
    }
}
