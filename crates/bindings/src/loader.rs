//! Worker Loader bindings (Dynamic Workers: `{name, workerLoader: {}}`,
//! wrangler's `[[worker_loaders]]`, docs/loader.md): `env.LOADER.get(id,
//! callback)` and `env.LOADER.load(code)` (`js/39_loader.js`) run code the
//! caller gives at run time in an isolate of its own, on the caller's
//! engine thread, through the service path (`js/30_service.js`'s
//! `Fetcher`, the core's `api::service`).
//!
//! The code becomes a [`WorkerBundle`] here: its modules, compatibility
//! settings, `env` of JSON values and the caller's own service bindings it
//! hands on, no network when `globalOutbound` is `null` (the network of
//! the caller's service binding's Worker when it is one: every `fetch()`
//! goes to that Worker's `fetch` handler, `engine`'s `GLOBAL_OUTBOUND`), and
//! limits no higher than the caller's. The bundles of a thread are kept
//! by (caller Worker, id), at most [`WARM_IDS`] of them and
//! [`WARM_BYTES`] of code, the least recently used dropped first; their
//! isolates live in the thread's warm set and are evicted as any other.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::Arc;

use isolane_engine::api::service::{CallLimits, Outbound, ServiceCall, prepare_call};
use isolane_engine::api::{HostError, HostState, Unit};
use isolane_engine::{Compat, GLOBAL_OUTBOUND, Limits, Module, ModuleKind, Modules, WorkerBundle};
use serde::Deserialize;

/// Loaded code a thread keeps at most (ids, over all callers).
pub(crate) const WARM_IDS: usize = 256;

/// Bytes of loaded code a thread keeps at most.
pub(crate) const WARM_BYTES: usize = 64 << 20;

/// The most code one load may give (its modules' bytes): a Worker's.
pub(crate) const MAX_CODE_BYTES: usize = 10 << 20;

/// The longest id (bytes).
const MAX_ID_BYTES: usize = 1024;

/// `env.NAME` for a Worker Loader binding.
pub(crate) fn unit() -> Unit {
    Unit::new("loader")
        .js(&["39_loader.js"])
        .function("loaderWarm", loader_warm)
        .function("loaderDefine", loader_define)
}

thread_local! {
    static LOADED: RefCell<Loaded> = RefCell::new(Loaded::default());
}

/// The loaded code of this thread: (caller Worker id, loader id) to its
/// bundle and when it was last used.
#[derive(Default)]
struct Loaded {
    by_key: HashMap<(String, String), (Arc<WorkerBundle>, u64)>,
    bytes: usize,
    tick: u64,
}

impl Loaded {
    fn get(&mut self, key: &(String, String)) -> Option<Arc<WorkerBundle>> {
        self.tick += 1;
        let tick = self.tick;
        let (bundle, used) = self.by_key.get_mut(key)?;
        *used = tick;
        Some(bundle.clone())
    }

    fn insert(&mut self, key: (String, String), bundle: Arc<WorkerBundle>) {
        if let Some((old, _)) = self.by_key.remove(&key) {
            self.bytes -= old.source_bytes();
        }
        let bytes = bundle.source_bytes();
        while !self.by_key.is_empty()
            && (self.by_key.len() >= WARM_IDS || self.bytes + bytes > WARM_BYTES)
        {
            self.evict_oldest();
        }
        self.tick += 1;
        self.bytes += bytes;
        self.by_key.insert(key, (bundle, self.tick));
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .by_key
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(key, _)| key.clone());
        if let Some((bundle, _)) = oldest.and_then(|key| self.by_key.remove(&key)) {
            self.bytes -= bundle.source_bytes();
        }
    }
}

/// The caller's Worker, checked to have `binding` as a Worker Loader
/// binding, and the key of `id`'s code.
fn caller_key(
    host: &HostState,
    binding: &str,
    id: &str,
) -> Result<(Arc<WorkerBundle>, (String, String)), HostError> {
    let caller = host
        .worker()
        .ok_or_else(|| HostError::type_error("Worker Loader: no Worker is loaded"))?;
    if !caller.loaders.contains(binding) {
        return Err(HostError::type_error(format!(
            "{binding} is not a Worker Loader binding of this Worker"
        )));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(HostError::type_error(format!(
            "Worker Loader: an id is at most {MAX_ID_BYTES} bytes"
        )));
    }
    let key = (caller.id.clone(), id.to_owned());
    Ok((caller.clone(), key))
}

host_fn! {
/// `loaderWarm(binding, id)` → whether this thread holds the code of `id`
/// for this Worker (then its callback is not asked again).
fn loader_warm<'s>(scope, host: Rc<HostState>, binding: String, id: String) -> Result<bool, HostError> {
    let (_, key) = caller_key(&host, &binding, &id)?;
    Ok(LOADED.with_borrow_mut(|loaded| loaded.get(&key).is_some()))
}
}

host_fn! {
/// `loaderDefine(binding, id, header, content)`: the code of `id`, as
/// `js/39_loader.js` encodes it (`header` JSON: the settings and each
/// module's name, kind and length; `content` the modules' bytes, one
/// after the other), made into a bundle and kept. A `TypeError` for code
/// that cannot run.
fn loader_define<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    id: String,
    header: String,
    content: Option<Vec<u8>>,
) -> Result<(), HostError> {
    let (caller, key) = caller_key(&host, &binding, &id)?;
    let bundle = bundle(&caller, &id, &header, &content.unwrap_or_default())
        .map_err(|e| HostError::type_error(format!("Worker Loader: {e}")))?;
    LOADED.with_borrow_mut(|loaded| loaded.insert(key, Arc::new(bundle)));
    Ok(())
}
}

/// A call of `id`'s code through binding `binding` (its `entrypoint` and
/// `props`), from request `ctx`: refused when the code is not loaded on
/// this thread (the stub loads it first, `js/39_loader.js`).
pub(crate) fn outbound(
    host: &HostState,
    ctx: u32,
    binding: &str,
    id: &str,
    (entrypoint, props): (Option<String>, Option<String>),
) -> Result<Outbound, HostError> {
    let (_, key) = caller_key(host, binding, id)?;
    let bundle = LOADED
        .with_borrow_mut(|loaded| loaded.get(&key))
        .ok_or_else(|| {
            HostError::type_error(format!(
                "Worker Loader: the code of {id:?} is no longer loaded on this thread: call again"
            ))
        })?;
    let call = ServiceCall {
        entrypoint,
        props,
        ..ServiceCall::default()
    };
    prepare_call(host, ctx, bundle, call, CallLimits::default())?.loaded()
}

/// The code as `js/39_loader.js` sends it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Code {
    compatibility_date: String,
    #[serde(default)]
    compatibility_flags: Vec<String>,
    main_module: String,
    /// Name, kind (`js`, `cjs`, `text`, `data`, `json`, `wasm`) and length.
    modules: Vec<(String, String, usize)>,
    /// Binding name to its value as JSON text.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Binding name in the loaded code's env to the caller's service
    /// binding it is.
    #[serde(default)]
    services: BTreeMap<String, String>,
    #[serde(default)]
    no_network: bool,
    /// The caller's service binding given as `globalOutbound`.
    #[serde(default)]
    outbound: Option<String>,
    #[serde(default)]
    limits: Given,
}

/// The limits the caller gave (0: none given).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Given {
    #[serde(rename = "cpuMs", default)]
    cpu_ms: u32,
    #[serde(rename = "wallMs", default)]
    wall_ms: u32,
    #[serde(rename = "memoryMiB", default)]
    memory_mib: u32,
    #[serde(default)]
    subrequests: u32,
}

/// Why code cannot be loaded (the message after `Worker Loader: `).
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("the code could not be read: {0}")]
    Header(#[from] serde_json::Error),
    #[error("module {name}: unknown type {kind}")]
    Kind { name: String, kind: String },
    #[error("the modules' sizes do not add up to the bytes given")]
    Length,
    #[error("the modules are {bytes} bytes, over the limit of {MAX_CODE_BYTES}")]
    TooLarge { bytes: usize },
    #[error("{0}")]
    Modules(#[from] isolane_worker::ModulesError),
    #[error("compatibility settings: {0}")]
    Compat(#[from] isolane_worker::CompatError),
    #[error("limits.memoryMiB must be at least 16")]
    Memory,
    #[error("env.{0} is given twice")]
    Env(String),
    #[error("{0}: {1} is not a service binding of the caller")]
    Service(String, String),
}

/// The bundle of `id`'s code for `caller`.
fn bundle(
    caller: &WorkerBundle,
    id: &str,
    header: &str,
    content: &[u8],
) -> Result<WorkerBundle, LoadError> {
    let code: Code = serde_json::from_str(header)?;
    let modules = modules(&code, content)?;
    let mut revision = std::hash::DefaultHasher::new();
    (header, content).hash(&mut revision);
    let worker_id = format!("{}/loader:{id}", caller.id);
    let revision = format!("{:016x}", revision.finish());
    let mut bundle = WorkerBundle::from_modules(worker_id, revision, modules);
    bundle.compat =
        Compat::from_settings(Some(&code.compatibility_date), &code.compatibility_flags)?;
    bundle.json_env = code.env;
    for (name, binding) in code.services {
        let Some(target) = caller.services.get(&binding) else {
            return Err(LoadError::Service(format!("env.{name}"), binding));
        };
        if bundle.json_env.contains_key(&name) {
            return Err(LoadError::Env(name));
        }
        bundle.services.insert(name, target.clone());
    }
    if let Some(binding) = code.outbound {
        let Some(target) = caller.services.get(&binding) else {
            return Err(LoadError::Service("globalOutbound".into(), binding));
        };
        bundle
            .services
            .insert(GLOBAL_OUTBOUND.into(), target.clone());
    }
    bundle.limits = limits(caller.limits, &code.limits)?;
    bundle.no_network = code.no_network;
    // Its CPU counts against the caller's namespace, whose id it shares.
    bundle.cpu_ms_per_second = caller.cpu_ms_per_second;
    if !code.no_network && !bundle.services.contains_key(GLOBAL_OUTBOUND) {
        bundle.allowed_hosts = caller.allowed_hosts.clone();
    }
    Ok(bundle)
}

/// The modules of `code`, cut out of `content`.
fn modules(code: &Code, content: &[u8]) -> Result<Modules, LoadError> {
    if content.len() > MAX_CODE_BYTES {
        return Err(LoadError::TooLarge {
            bytes: content.len(),
        });
    }
    let mut rest = content;
    let mut list = Vec::with_capacity(code.modules.len());
    for (name, kind, len) in &code.modules {
        let kind = match kind.as_str() {
            "js" => ModuleKind::ESModule,
            "cjs" => ModuleKind::CommonJS,
            "text" => ModuleKind::Text,
            "data" => ModuleKind::Data,
            "json" => ModuleKind::Json,
            "wasm" => ModuleKind::CompiledWasm,
            _ => {
                return Err(LoadError::Kind {
                    name: name.clone(),
                    kind: kind.clone(),
                });
            }
        };
        let (bytes, after) = rest.split_at_checked(*len).ok_or(LoadError::Length)?;
        rest = after;
        list.push(Module::new(name.clone(), kind, bytes.to_vec()));
    }
    if !rest.is_empty() {
        return Err(LoadError::Length);
    }
    Ok(Modules::new(code.main_module.clone(), list)?)
}

/// The caller's limits, lowered to those given.
fn limits(own: Limits, given: &Given) -> Result<Limits, LoadError> {
    let lower = |own: u32, given: u32| if given == 0 { own } else { own.min(given) };
    if given.memory_mib != 0 && given.memory_mib < 16 {
        return Err(LoadError::Memory);
    }
    Ok(Limits {
        cpu_ms: lower(own.cpu_ms, given.cpu_ms),
        wall_ms: lower(own.wall_ms, given.wall_ms),
        memory_mib: lower(own.memory_mib, given.memory_mib),
        subrequests: lower(own.subrequests, given.subrequests),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(modules: &str, limits: &str) -> String {
        format!(
            r#"{{"compatibilityDate":"2025-06-01","mainModule":"main.js","modules":{modules},"env":{{"A":"1"}},"noNetwork":true,"limits":{limits}}}"#
        )
    }

    #[test]
    fn code_becomes_a_bundle_with_limits_no_higher_than_the_callers() {
        let caller = WorkerBundle::new("ns/caller", "r1", "");
        let main = "export default {}";
        let header = code(
            r#"[["main.js","js",17],["t.txt","text",2]]"#,
            r#"{"cpuMs":10,"wallMs":999999999,"memoryMiB":32}"#,
        );
        let content = format!("{main}hi");
        let made = bundle(&caller, "x", &header, content.as_bytes()).unwrap();
        assert!(made.services.is_empty());
        assert_eq!(made.id, "ns/caller/loader:x");
        assert_eq!(made.namespace(), "ns");
        assert_eq!(made.limits.cpu_ms, 10);
        assert_eq!(made.limits.wall_ms, caller.limits.wall_ms);
        assert_eq!(made.limits.memory_mib, 32);
        assert_eq!(made.limits.subrequests, caller.limits.subrequests);
        assert!(made.no_network && !made.may_fetch("example.com"));
        assert_eq!(made.json_env["A"], "1");
        assert_eq!(made.modules.unwrap().len(), 2);
    }

    #[test]
    fn a_service_binding_handed_on_is_the_callers_own() {
        let mut caller = WorkerBundle::new("ns/caller", "r1", "");
        let target = isolane_engine::ServiceTarget {
            worker: "backend".into(),
            entrypoint: None,
            props: None,
        };
        caller.services.insert("SVC".into(), target.clone());
        let header = r#"{"compatibilityDate":"2025-06-01","mainModule":"m.js","modules":[["m.js","js",1]],"services":{"API":"SVC"}}"#;
        let made = bundle(&caller, "x", header, b"x").unwrap();
        assert_eq!(made.services["API"], target);
        let outbound = header.replace(r#""services""#, r#""outbound":"SVC","services""#);
        let made = bundle(&caller, "x", &outbound, b"x").unwrap();
        assert_eq!(made.services[GLOBAL_OUTBOUND], target);
        assert!(!made.may_fetch("example.com"));
        assert!(made.allowed_hosts.is_empty());
        let other = header.replace(r#""SVC""#, r#""NOPE""#);
        let error = bundle(&caller, "x", &other, b"x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "env.API: NOPE is not a service binding of the caller"
        );
    }

    #[test]
    fn bad_code_is_refused() {
        let caller = WorkerBundle::new("ns/caller", "r1", "");
        let cases = [
            (code(r#"[["main.js","py",1]]"#, "{}"), "unknown type py"),
            (code(r#"[["main.js","js",5]]"#, "{}"), "do not add up"),
            (code(r#"[["other.js","js",1]]"#, "{}"), "main"),
            (
                code(r#"[["main.js","js",1]]"#, r#"{"memoryMiB":8}"#),
                "at least 16",
            ),
        ];
        for (header, expected) in cases {
            let error = bundle(&caller, "x", &header, b"x").unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn the_thread_keeps_at_most_its_bound_of_ids() {
        let mut loaded = Loaded::default();
        for i in 0..(WARM_IDS + 10) {
            let bundle = Arc::new(WorkerBundle::new("ns/c", "r", "x"));
            loaded.insert(("ns/c".into(), i.to_string()), bundle);
            assert!(loaded.get(&("ns/c".into(), "0".into())).is_some());
        }
        assert_eq!(loaded.by_key.len(), WARM_IDS);
        assert!(loaded.get(&("ns/c".into(), "1".into())).is_none());
        assert_eq!(loaded.bytes, WARM_IDS);
    }
}
