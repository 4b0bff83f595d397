//! An app of the suite: `compat/apps/<name>.{js,ts,tsx}` (the Worker, or a
//! folder `compat/apps/<name>/` a framework builds) and
//! `compat/apps/<name>.json` (its bindings, normalisation rules and requests).

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;

/// `compat/apps/<name>.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// `"service-worker"` for an `addEventListener("fetch")` script; ES module otherwise.
    #[serde(default)]
    pub format: Option<String>,
    /// Text bindings; `{{upstream}}` becomes the echo server's origin.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Rewrites applied to every body of this app before comparing:
    /// `[regex, replacement]`.
    #[serde(default)]
    pub normalise: Vec<(String, String)>,
    /// Headers left out of the comparison for this app (beyond the transport ones).
    #[serde(default)]
    pub ignore_headers: Vec<String>,
    /// Compatibility flags (wrangler's names, e.g. `nodejs_compat`), the
    /// same on both servers; `compat/bundle.mjs` bundles an app with
    /// `nodejs_compat` as wrangler does (built-ins external, their
    /// `require`s turned into imports).
    #[serde(default)]
    pub compatibility_flags: Vec<String>,
    pub requests: Vec<RequestSpec>,
}

/// One request, sent to both servers.
///
/// In `path`, header values and `body`, `{{req}}` is the body of request
/// `req`'s answer from the same server and `{{req#header}}` one of its
/// headers; `{{other:req}}` and `{{other:req#header}}` take them from the
/// *other* server's answer (a token minted by workerd verified by Isolane, and
/// the other way round).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestSpec {
    pub name: String,
    #[serde(default = "get")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
    /// A binary body, hex-encoded.
    #[serde(default)]
    pub body_hex: Option<String>,
    /// workerd's expected status; without it, workerd must not answer 5xx
    /// (the app itself would be broken and the comparison meaningless).
    #[serde(default)]
    pub status: Option<u16>,
    /// Rewrites for this request's bodies only, after the app's.
    #[serde(default)]
    pub normalise: Vec<(String, String)>,
}

fn get() -> String {
    "GET".to_owned()
}

/// An app: its name, source file and manifest, with compiled rules.
#[derive(Debug)]
pub struct App {
    pub name: String,
    pub manifest: Manifest,
    pub rules: Vec<(Regex, String)>,
    pub request_rules: Vec<Vec<(Regex, String)>>,
}

impl App {
    pub fn service_worker(&self) -> bool {
        self.manifest.format.as_deref() == Some("service-worker")
    }

    /// The bindings, with `{{upstream}}` filled in.
    pub fn env(&self, upstream: &str) -> BTreeMap<String, String> {
        self.manifest
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace("{{upstream}}", upstream)))
            .collect()
    }

    /// The `Host` both servers see for this app.
    pub fn host(&self) -> String {
        format!("{}.compat.example", self.name)
    }
}

fn compile(rules: &[(String, String)], at: &str) -> Vec<(Regex, String)> {
    rules
        .iter()
        .map(|(pattern, with)| {
            let regex = Regex::new(&format!("(?m){pattern}"))
                .unwrap_or_else(|e| panic!("{at}: bad normalise regex {pattern:?}: {e}"));
            (regex, with.clone())
        })
        .collect()
}

/// Every app in `apps/`, sorted by name.
pub fn load(apps: &Path) -> Vec<App> {
    let mut list = Vec::new();
    for entry in std::fs::read_dir(apps).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        // A file app, or a folder app that compat/bundle.mjs builds with
        // its framework (apps/<name>/react-router.config.ts, or
        // open-next.config.ts for Next.js).
        let is_source = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("js" | "ts" | "tsx")
        ) || ["react-router.config.ts", "open-next.config.ts"]
            .iter()
            .any(|config| path.join(config).is_file());
        if !is_source {
            continue;
        }
        let json = apps.join(format!("{stem}.json"));
        let text = std::fs::read_to_string(&json)
            .unwrap_or_else(|e| panic!("{}: {e} (each app needs its requests)", json.display()));
        let manifest: Manifest = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: invalid manifest: {e}", json.display()));
        let at = json.display().to_string();
        let mut names = std::collections::HashSet::new();
        for request in &manifest.requests {
            assert!(
                names.insert(request.name.as_str()),
                "{at}: request {} appears twice",
                request.name
            );
        }
        let rules = compile(&manifest.normalise, &at);
        let request_rules = manifest
            .requests
            .iter()
            .map(|r| compile(&r.normalise, &format!("{at} {}", r.name)))
            .collect();
        list.push(App {
            name: stem.to_owned(),
            manifest,
            rules,
            request_rules,
        });
    }
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}
