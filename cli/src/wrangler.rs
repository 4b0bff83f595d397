//! A wrangler project: `wrangler.json`, `wrangler.jsonc` or `wrangler.toml`
//! read as wrangler reads it, one environment selected (`--env`, with
//! wrangler's inheritance rules: [`keys::KEYS`]), and turned into the
//! Worker it stands for ([`spec`]): the same spec for `isolane deploy`
//! (applied to a cluster) and `isolane dev` (served locally, with
//! `.dev.vars` as secrets).
//!
//! A key Isolane cannot honour is a [`Problem`], one line each: `isolane
//! dev` warns and serves what it can, `isolane deploy` refuses.

pub mod build;
mod code;
pub mod d1;
pub mod keys;
mod queues;
pub mod r2;
pub mod spec;
pub mod workflows;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::rules::RuleConfig;
use keys::{Inherit, Support};

/// The config files wrangler reads, in its order of preference.
pub const CONFIG_FILES: [&str; 3] = ["wrangler.json", "wrangler.jsonc", "wrangler.toml"];

/// Why a wrangler project cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: the config is not a table of keys")]
    NotATable { path: String },
    #[error("{path}: no environment {env:?} (env sections: {known})")]
    NoEnvironment {
        path: String,
        env: String,
        known: String,
    },
    #[error("{path}: {key}: {message}")]
    Key {
        path: String,
        key: String,
        message: String,
    },
    #[error("{path}: no `name`: the Worker needs one")]
    NoName { path: String },
    #[error("{path}: no `main`: the Worker's main module")]
    NoMain { path: String },
    #[error("{path}: {source}")]
    DevVars {
        path: String,
        #[source]
        source: dotenvy::Error,
    },
}

/// A key of the config that Isolane does not honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: `r2_buckets`, `env.staging.queues`, `migrations[0].renamed_classes`.
    pub key: String,
    pub reason: String,
}

impl Problem {
    /// Whether the key is one the project's wrangler honours when it
    /// builds the code (`define`, `alias`, `build`, …).
    pub fn is_build_key(&self) -> bool {
        let name = self.key.rsplit('.').next().unwrap_or(&self.key);
        keys::find(name).is_some_and(|key| matches!(key.support, Support::Build(_)))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: not supported: {}", self.key, self.reason)
    }
}

/// Where a framework's build (Cloudflare's Vite plugin: Astro, React
/// Router, …) records the config of the Worker it built, in the project's
/// folder; wrangler follows it instead of the project's own config.
const REDIRECT: &str = ".wrangler/deploy/config.json";

/// The config file of the project in `dir`, if it has one: the config a
/// framework's build wrote, when `dir` has that build's redirect
/// ([`REDIRECT`], whose `configPath` is relative to it), as wrangler
/// follows it; else wrangler's files in its order.
pub fn find(dir: &Path) -> Option<PathBuf> {
    redirected(dir).or_else(|| own(dir))
}

/// The config the build's redirect in `dir` names, if there is one.
fn redirected(dir: &Path) -> Option<PathBuf> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Redirect {
        config_path: PathBuf,
    }
    let redirect = dir.join(REDIRECT);
    let text = std::fs::read_to_string(&redirect).ok()?;
    let parsed: Redirect = match serde_json::from_str(&text) {
        Ok(parsed) => parsed,
        Err(error) => {
            tracing::warn!(file = %redirect.display(), %error, "not a build's redirect; ignored");
            return None;
        }
    };
    let file = redirect.parent()?.join(parsed.config_path);
    file.is_file().then(|| {
        tracing::info!(config = %file.display(), "the config the project's build wrote (as wrangler follows it)");
        file
    })
}

/// wrangler's own config file in `dir`.
fn own(dir: &Path) -> Option<PathBuf> {
    CONFIG_FILES
        .iter()
        .map(|name| {
            // In this folder: named as the user knows it, for messages.
            if dir == Path::new(".") {
                PathBuf::from(name)
            } else {
                dir.join(name)
            }
        })
        .find(|path| path.is_file())
}

/// One environment of a wrangler project, read.
#[derive(Debug, Clone)]
pub struct Project {
    /// The config file.
    pub file: PathBuf,
    /// Its folder: `main`, `.dev.vars` and globs are relative to it.
    pub dir: PathBuf,
    /// `--env`.
    pub env: Option<String>,
    pub config: Config,
    /// Keys not honoured, in the file's order of keys.
    pub problems: Vec<Problem>,
}

/// The keys Isolane maps, for the selected environment.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Config {
    pub name: Option<String>,
    pub main: Option<String>,
    pub compatibility_date: Option<String>,
    #[serde(default)]
    pub compatibility_flags: Vec<String>,
    #[serde(default)]
    pub vars: BTreeMap<String, Value>,
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    #[serde(default)]
    pub kv_namespaces: Vec<KvNamespace>,
    #[serde(default)]
    pub durable_objects: DurableObjects,
    #[serde(default)]
    pub services: Vec<ServiceConfig>,
    /// `queues` (`docs/queues.md`).
    #[serde(default)]
    pub queues: queues::QueuesConfig,
    #[serde(default)]
    pub dispatch_namespaces: Vec<DispatchNamespaceConfig>,
    /// `d1_databases` (`docs/d1.md`).
    #[serde(default)]
    pub d1_databases: Vec<d1::D1Config>,
    /// `r2_buckets` (`docs/r2.md`).
    #[serde(default)]
    pub r2_buckets: Vec<r2::R2Config>,
    /// `workflows` (`docs/workflows.md`).
    #[serde(default)]
    pub workflows: Vec<workflows::WorkflowConfig>,
    /// `[images] binding = "NAME"` (`docs/images.md`).
    #[serde(default)]
    pub images: Option<ImagesConfig>,
    /// `[[worker_loaders]] binding = "NAME"` (`docs/loader.md`).
    #[serde(default)]
    pub worker_loaders: Vec<WorkerLoaderConfig>,
    #[serde(default)]
    pub migrations: Vec<Migration>,
    #[serde(default)]
    pub triggers: TriggersConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    pub route: Option<RouteConfig>,
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    /// `assets` (`docs/assets.md`).
    pub assets: Option<AssetsConfig>,
    /// `no_bundle`: the code is read as it is, not built by the project's
    /// wrangler (`build.rs`).
    #[serde(default)]
    pub no_bundle: bool,
}

/// `assets`: Workers Static Assets' settings, as wrangler spells them.
#[derive(Debug, Clone, Deserialize)]
pub struct AssetsConfig {
    /// The folder, relative to the config file.
    pub directory: String,
    /// `binding`, `html_handling`, `not_found_handling`, `run_worker_first`.
    #[serde(flatten)]
    pub settings: isolane_assets::Settings,
}

/// `[[kv_namespaces]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvNamespace {
    pub binding: String,
    pub id: Option<String>,
    /// wrangler's remote preview only: nothing here.
    #[serde(rename = "preview_id")]
    _preview_id: Option<IgnoredAny>,
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
}

/// `[durable_objects]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurableObjects {
    #[serde(default)]
    pub bindings: Vec<DurableObjectConfig>,
}

/// `durable_objects.bindings[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DurableObjectConfig {
    pub name: String,
    pub class_name: String,
    pub script_name: Option<String>,
    pub environment: Option<String>,
}

/// `[[services]]`: a service binding to a Worker of the same namespace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub binding: String,
    /// The called Worker's name.
    pub service: String,
    pub entrypoint: Option<String>,
    pub props: Option<isolane_worker::Props>,
    pub environment: Option<String>,
    /// wrangler's remote bindings only: nothing here.
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
}

/// `[[dispatch_namespaces]]`: a dispatch namespace binding; `namespace` is
/// the Kubernetes namespace whose Workers it calls (docs/dispatch.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchNamespaceConfig {
    pub binding: String,
    pub namespace: String,
    /// An outbound Worker (`{service, parameters}`): every `fetch()` of a
    /// Worker called through the binding goes to it.
    pub outbound: Option<OutboundConfig>,
    /// wrangler's remote bindings only: nothing here.
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
}

/// `[[dispatch_namespaces]]`' `outbound`: a Worker of this namespace and
/// the names of the values `get()` passes it (`options.outbound`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundConfig {
    pub service: String,
    #[serde(default)]
    pub parameters: Vec<String>,
    /// wrangler's Worker environment: a binding calls the Worker of that
    /// name, in this namespace.
    #[serde(default)]
    pub environment: Option<IgnoredAny>,
}

/// `[images]`: Cloudflare's Images binding, `env.<binding>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesConfig {
    pub binding: String,
    /// wrangler's remote bindings only: nothing here.
    #[serde(rename = "remote")]
    _remote: Option<IgnoredAny>,
}

/// `[[worker_loaders]]`: a Worker Loader binding (Dynamic Workers),
/// `env.<binding>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerLoaderConfig {
    pub binding: String,
}

/// `[[migrations]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Migration {
    /// Each migration has one; nothing here depends on it.
    #[serde(rename = "tag")]
    _tag: IgnoredAny,
    /// New classes need nothing here: an object's storage is made on use.
    #[serde(default, rename = "new_classes")]
    _new_classes: Vec<IgnoredAny>,
    #[serde(default)]
    pub new_sqlite_classes: Vec<String>,
    #[serde(default)]
    pub renamed_classes: Vec<Value>,
    #[serde(default)]
    pub deleted_classes: Vec<String>,
    #[serde(default)]
    pub transferred_classes: Vec<Value>,
}

/// `[triggers]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggersConfig {
    #[serde(default)]
    pub crons: Vec<String>,
}

/// `[limits]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub cpu_ms: Option<u32>,
}

/// A route: `"example.com/*"` or `{pattern, zone_name | zone_id | custom_domain}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum RouteConfig {
    Pattern(String),
    Table {
        pattern: String,
        /// The zone is Cloudflare's; the host is the pattern's.
        #[serde(rename = "zone_name")]
        _zone_name: Option<IgnoredAny>,
        #[serde(rename = "zone_id")]
        _zone_id: Option<IgnoredAny>,
        #[serde(default)]
        custom_domain: bool,
    },
}

impl RouteConfig {
    pub fn pattern(&self) -> &str {
        match self {
            Self::Pattern(pattern) | Self::Table { pattern, .. } => pattern,
        }
    }
}

impl Project {
    /// Reads `file` and selects environment `env` (the top level if `None`).
    pub fn read(file: &Path, env: Option<&str>) -> Result<Self, ConfigError> {
        let path = file.display().to_string();
        let top = read_table(file)?;
        let (merged, problems) = select(&path, top, env)?;
        let mut config = typed(&path, merged)?;
        code::bind_assets_only(&mut config);
        let dir = file
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Ok(Self {
            file: file.to_path_buf(),
            dir,
            env: env.map(str::to_owned),
            config,
            problems,
        })
    }

    /// The config file's name, for messages.
    pub fn path(&self) -> String {
        self.file.display().to_string()
    }

    /// The Worker's name: `name`, or for an environment that does not set
    /// its own, `<name>-<env>` (wrangler's default).
    pub fn name(&self) -> Result<String, ConfigError> {
        self.config
            .name
            .clone()
            .ok_or_else(|| ConfigError::NoName { path: self.path() })
    }

    /// The main module's path.
    pub fn main(&self) -> Result<PathBuf, ConfigError> {
        let main = self
            .config
            .main
            .as_deref()
            .ok_or_else(|| ConfigError::NoMain { path: self.path() })?;
        Ok(self.dir.join(main))
    }

    /// Secrets for `isolane dev`, in dotenv format, as wrangler reads them:
    /// `.dev.vars.<env>` (with `--env`, if it exists) or `.dev.vars`; when
    /// there is neither, every `.env` file that exists merged, the more
    /// specific over the less: `.env.<env>.local`, `.env.local`,
    /// `.env.<env>`, `.env`. None if no file exists.
    pub fn dev_vars(&self) -> Result<BTreeMap<String, String>, ConfigError> {
        let own = self
            .env
            .as_ref()
            .map(|env| self.dir.join(format!(".dev.vars.{env}")))
            .filter(|path| path.is_file());
        if let Some(file) = own.or_else(|| Some(self.dir.join(".dev.vars")).filter(|p| p.is_file()))
        {
            return read_dotenv(&file);
        }
        let env = self.env.as_deref();
        let least_first = [
            Some(".env".to_owned()),
            env.map(|env| format!(".env.{env}")),
            Some(".env.local".to_owned()),
            env.map(|env| format!(".env.{env}.local")),
        ];
        let mut vars = BTreeMap::new();
        for name in least_first.into_iter().flatten() {
            let file = self.dir.join(name);
            if file.is_file() {
                vars.extend(read_dotenv(&file)?);
            }
        }
        Ok(vars)
    }
}

/// The names and values of a dotenv file.
fn read_dotenv(file: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let error = |source| ConfigError::DevVars {
        path: file.display().to_string(),
        source,
    };
    let mut vars = BTreeMap::new();
    for item in dotenvy::from_path_iter(file).map_err(error)? {
        let (name, value) = item.map_err(error)?;
        vars.insert(name, value);
    }
    Ok(vars)
}

/// The file as a table of keys (TOML, or JSON with comments and trailing
/// commas).
fn read_table(file: &Path) -> Result<Map<String, Value>, ConfigError> {
    let path = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    let parse = |message: String| ConfigError::Parse {
        path: path.clone(),
        message,
    };
    let value: Value = if file.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).map_err(|e| parse(e.to_string().trim_end().to_owned()))?
    } else {
        jsonc_parser::parse_to_serde_value(&text, &jsonc_parser::ParseOptions::default())
            .map_err(|e| parse(e.to_string()))?
    };
    match value {
        Value::Object(table) => Ok(table),
        _ => Err(ConfigError::NotATable { path }),
    }
}

/// The keys of environment `env` by wrangler's inheritance rules, and the
/// problems of every key set at the top level and in that environment.
fn select(
    path: &str,
    mut top: Map<String, Value>,
    env: Option<&str>,
) -> Result<(Map<String, Value>, Vec<Problem>), ConfigError> {
    let envs = match top.remove("env") {
        Some(Value::Object(envs)) => envs,
        Some(_) => return Err(key_error(path, "env", "not a table of environments")),
        None => Map::new(),
    };
    let mut problems = problems_of(&top, "", false);
    let Some(env) = env else {
        return Ok((top, problems));
    };
    let own = match envs.get(env) {
        Some(Value::Object(own)) => own.clone(),
        Some(_) => return Err(key_error(path, &format!("env.{env}"), "not a table")),
        None => {
            return Err(ConfigError::NoEnvironment {
                path: path.to_owned(),
                env: env.to_owned(),
                known: envs.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
    };
    problems.extend(problems_of(&own, &format!("env.{env}."), true));
    let mut merged = Map::new();
    for (name, value) in &top {
        let inherit = keys::find(name).map_or(Inherit::No, |key| key.inherit);
        if inherit != Inherit::No {
            merged.insert(name.clone(), value.clone());
        }
    }
    for (name, value) in own {
        let top_only = keys::find(&name).is_some_and(|key| key.inherit == Inherit::TopOnly);
        if !top_only {
            merged.insert(name, value);
        }
    }
    if !envs[env].get("name").is_some_and(Value::is_string)
        && let Some(Value::String(name)) = top.get("name")
    {
        merged.insert("name".into(), Value::String(format!("{name}-{env}")));
    }
    Ok((merged, problems))
}

/// A problem for each key of `table` Isolane does not honour (`prefix`
/// names the environment); in an environment, a top-level-only key too.
fn problems_of(table: &Map<String, Value>, prefix: &str, in_env: bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (name, value) in table {
        let reason = match keys::find(name) {
            Some(key) if in_env && key.inherit == Inherit::TopOnly => {
                "only the top level may set it (wrangler ignores it here too)".to_owned()
            }
            // A generated config lists every key, most of them empty.
            _ if keys::asks_nothing(name, value) => continue,
            None => "not a wrangler key Isolane knows".to_owned(),
            Some(key) => match key.support {
                Support::Unsupported(why) | Support::Build(why) => why.to_owned(),
                Support::Mapped | Support::NoEffect => continue,
            },
        };
        problems.push(Problem {
            key: format!("{prefix}{name}"),
            reason,
        });
    }
    problems
}

/// The mapped keys, typed: each key on its own, so an error names it.
fn typed(path: &str, merged: Map<String, Value>) -> Result<Config, ConfigError> {
    let mut mapped = Map::new();
    for (name, value) in merged {
        if keys::find(&name).is_some_and(|key| key.support == Support::Mapped) {
            let single = Map::from_iter([(name.clone(), value)]);
            serde_json::from_value::<Config>(Value::Object(single.clone()))
                .map_err(|e| key_error(path, &name, &e.to_string()))?;
            mapped.extend(single);
        }
    }
    serde_json::from_value(Value::Object(mapped)).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

fn key_error(path: &str, key: &str, message: &str) -> ConfigError {
    ConfigError::Key {
        path: path.to_owned(),
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
