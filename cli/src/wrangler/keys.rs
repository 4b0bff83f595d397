//! Every top-level key of a wrangler config that Isolane knows: whether an
//! `[env.<name>]` section inherits it from the top level (wrangler's
//! inheritance rules), and what Isolane makes of it. One table, read by
//! the config reader and by docs/wrangler.md's mapping.

/// How an environment gets a key it does not set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inherit {
    /// From the top level (wrangler's "inheritable keys").
    Yes,
    /// Not at all: an environment that wants it repeats it (bindings, vars).
    No,
    /// Only the top level may set it (`migrations`, `keep_vars`, …).
    TopOnly,
}

/// What Isolane makes of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// It becomes part of the Worker.
    Mapped,
    /// Accepted, with nothing to do here (an account, a dashboard setting).
    NoEffect,
    /// Refused by `isolane deploy`, warned about by `isolane dev`: why.
    Unsupported(&'static str),
    /// Honoured by the project's own wrangler, which builds the code
    /// (`build.rs`); without one (or with `no_bundle`), as `Unsupported`:
    /// why.
    Build(&'static str),
}

/// One key of the table.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub name: &'static str,
    pub inherit: Inherit,
    pub support: Support,
}

const fn key(name: &'static str, inherit: Inherit, support: Support) -> Key {
    Key {
        name,
        inherit,
        support,
    }
}

use Inherit::{No, TopOnly, Yes};
use Support::{Build, Mapped, NoEffect, Unsupported};

const BINDING_KIND: &str = "this binding kind is not supported yet";
const BUILD: &str = "a build key, honoured when isolane builds with the project's own wrangler, and none is installed here (`npm install --save-dev wrangler`) or no_bundle is set: install it, or build first (e.g. `wrangler deploy --dry-run --outdir dist`) and point `main` at the output";

/// The table. A key not in it is refused as unknown.
pub const KEYS: &[Key] = &[
    key("name", Yes, Mapped),
    key("main", Yes, Mapped),
    key("compatibility_date", Yes, Mapped),
    key("compatibility_flags", Yes, Mapped),
    key("rules", Yes, Mapped),
    key("triggers", Yes, Mapped),
    key("limits", Yes, Mapped),
    key("route", Yes, Mapped),
    key("routes", Yes, Mapped),
    key("vars", No, Mapped),
    key("kv_namespaces", No, Mapped),
    key("durable_objects", No, Mapped),
    key("services", No, Mapped),
    key("dispatch_namespaces", No, Mapped),
    key("queues", No, Mapped),
    key("d1_databases", No, Mapped),
    key("r2_buckets", No, Mapped),
    key("workflows", No, Mapped),
    key("migrations", TopOnly, Mapped),
    key("$schema", Yes, NoEffect),
    key("account_id", Yes, NoEffect),
    key("workers_dev", Yes, NoEffect),
    key("preview_urls", Yes, NoEffect),
    key("upload_source_maps", Yes, NoEffect),
    key("observability", Yes, NoEffect),
    key("no_bundle", Yes, Mapped),
    key("minify", Yes, NoEffect),
    key("keep_names", Yes, NoEffect),
    key("send_metrics", TopOnly, NoEffect),
    key("keep_vars", TopOnly, NoEffect),
    key("dev", TopOnly, NoEffect),
    key("topLevelName", Yes, NoEffect),
    key("previews", No, NoEffect),
    key("python_modules", Yes, NoEffect),
    key("assets", Yes, Mapped),
    key(
        "site",
        TopOnly,
        Unsupported("Workers Sites (static assets) are not supported"),
    ),
    key("analytics_engine_datasets", No, Unsupported(BINDING_KIND)),
    key("ai", No, Unsupported(BINDING_KIND)),
    key("browser", No, Unsupported(BINDING_KIND)),
    key("vectorize", No, Unsupported(BINDING_KIND)),
    key("hyperdrive", No, Unsupported(BINDING_KIND)),
    key("images", No, Mapped),
    key("worker_loaders", No, Mapped),
    key("pipelines", No, Unsupported(BINDING_KIND)),
    key("send_email", No, Unsupported(BINDING_KIND)),
    key("secrets_store_secrets", No, Unsupported(BINDING_KIND)),
    key("mtls_certificates", No, Unsupported(BINDING_KIND)),
    key("version_metadata", No, Unsupported(BINDING_KIND)),
    key(
        "tail_consumers",
        No,
        Unsupported("tail Workers are not supported; `isolane tail` streams a Worker's events"),
    ),
    key(
        "unsafe",
        No,
        Unsupported("unsafe bindings are Cloudflare's own"),
    ),
    key(
        "containers",
        No,
        Unsupported("containers are not supported"),
    ),
    key("define", No, Build(BUILD)),
    key("build", Yes, Build(BUILD)),
    key("alias", Yes, Build(BUILD)),
    key("tsconfig", Yes, Build(BUILD)),
    key("jsx_factory", Yes, Build(BUILD)),
    key("jsx_fragment", Yes, Build(BUILD)),
    key(
        "find_additional_modules",
        Yes,
        Unsupported("the modules are the files `main` imports (or wrangler's output folder whole)"),
    ),
    key(
        "base_dir",
        Yes,
        Unsupported("modules are named from `main`'s folder"),
    ),
    key("preserve_file_names", Yes, Build(BUILD)),
    key(
        "node_compat",
        Yes,
        Unsupported("use compatibility_flags = [\"nodejs_compat\"]"),
    ),
    key(
        "placement",
        Yes,
        Unsupported(
            "Smart Placement is Cloudflare's; a Worker's nodes are chosen by the router's hash",
        ),
    ),
    key(
        "usage_model",
        Yes,
        Unsupported("there is one usage model; limits.cpu_ms bounds a request"),
    ),
    key(
        "logpush",
        Yes,
        Unsupported("logs go to the platform's log pipeline and `isolane tail`"),
    ),
    key(
        "compliance_region",
        Yes,
        Unsupported("the cluster decides where it runs"),
    ),
    key(
        "legacy_env",
        TopOnly,
        Unsupported("environments are named <name>-<env>, as wrangler's default"),
    ),
    key(
        "wasm_modules",
        TopOnly,
        Unsupported("service-worker module globals are not supported: import the module"),
    ),
    key(
        "text_blobs",
        TopOnly,
        Unsupported("service-worker module globals are not supported: import the module"),
    ),
    key(
        "data_blobs",
        TopOnly,
        Unsupported("service-worker module globals are not supported: import the module"),
    ),
];

/// Whether key `name` set to `value` asks nothing of the platform: an
/// empty value (`null`, `[]`, `{}`, or a table of empty values, such as
/// `queues = { producers = [], consumers = [] }`), or wrangler's own
/// default. Configs that frameworks' builds generate list every key so.
pub fn asks_nothing(name: &str, value: &serde_json::Value) -> bool {
    use serde_json::Value;
    let default = match name {
        // What `wrangler dev` watches: nothing the Worker is made of.
        "watch_dir" => return true,
        "jsx_factory" => Some("React.createElement"),
        "jsx_fragment" => Some("React.Fragment"),
        _ => None,
    };
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(table) => table.iter().all(|(key, value)| asks_nothing(key, value)),
        Value::String(text) => default == Some(text.as_str()),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The table's entry for `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}
