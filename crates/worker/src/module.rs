//! A Worker's code as a set of named modules with a main one, in wrangler's
//! module types ([`ModuleKind`]).
//!
//! A module's name is a relative path inside the bundle (`main.js`,
//! `lib/add.wasm`): `/`-separated, no empty, `.` or `..` segment. An import
//! resolves against the importing module's name as a URL path does
//! ([`Modules::resolve`]); an import that names no module of the bundle is
//! a load error, never a lookup outside it.
//!
//! [`Modules`] is what travels inline (in the bundle JSON, each module's bytes
//! in base64). It is built only through [`Modules::new`] (deserialising goes
//! through it too), so a value of it always has unique, well-formed names
//! and an ES module as its main. A bundle too large to travel inline will be
//! named by digest instead (an OCI artifact, a later step); the set of
//! modules it unpacks to is this same type.

use std::collections::BTreeMap;

use base64ct::{Base64, Encoding};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A module's type: wrangler's module rules (`type` in `[[rules]]`), as
/// workerd's module kinds.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModuleKind {
    /// An ES module (`.js`, `.mjs`).
    ESModule,
    /// A CommonJS module (`.cjs`): `module.exports` is its default export.
    CommonJS,
    /// WebAssembly (`.wasm`): its default export is a `WebAssembly.Module`.
    CompiledWasm,
    /// Text (`.txt`, `.html`, `.sql`): its default export is a string.
    Text,
    /// Binary data (`.bin`): its default export is an `ArrayBuffer`.
    Data,
    /// JSON (`.json`): its default export is the parsed value.
    #[serde(rename = "JSON")]
    Json,
}

impl ModuleKind {
    /// wrangler's default rules: the type of a file by its extension, or
    /// `None` when no default rule covers it.
    pub fn from_path(path: &str) -> Option<Self> {
        let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match extension.as_str() {
            "js" | "mjs" => Self::ESModule,
            "cjs" => Self::CommonJS,
            "wasm" => Self::CompiledWasm,
            "txt" | "html" | "sql" => Self::Text,
            "bin" => Self::Data,
            "json" => Self::Json,
            _ => return None,
        })
    }

    /// The name wrangler gives this type.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ESModule => "ESModule",
            Self::CommonJS => "CommonJS",
            Self::CompiledWasm => "CompiledWasm",
            Self::Text => "Text",
            Self::Data => "Data",
            Self::Json => "JSON",
        }
    }
}

/// One module of a bundle.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// Its name in the bundle (a relative path; see the module docs).
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: ModuleKind,
    /// Its bytes (UTF-8 for source, text and JSON), base64 in JSON.
    #[serde(with = "base64_bytes")]
    pub content: Vec<u8>,
}

impl Module {
    pub fn new(name: impl Into<String>, kind: ModuleKind, content: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            kind,
            content: content.into(),
        }
    }

    /// The content as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.content).ok()
    }
}

/// Why a set of modules is not a bundle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModulesError {
    #[error("module name {name:?} is not a relative path inside the bundle")]
    BadName { name: String },
    #[error("two modules are named {name:?}")]
    Duplicate { name: String },
    #[error("the main module {main:?} is not in the bundle")]
    NoMain { main: String },
    #[error("the main module {main:?} is {kind}, not an ES module")]
    MainNotEsModule { main: String, kind: &'static str },
    #[error("module {name:?} ({kind}) is not UTF-8")]
    NotUtf8 { name: String, kind: &'static str },
}

/// A bundle's modules and which one is the main (always an ES module).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(try_from = "RawModules", into = "RawModules")]
pub struct Modules {
    main: String,
    modules: BTreeMap<String, Module>,
}

#[derive(Serialize, Deserialize)]
struct RawModules {
    main: String,
    modules: Vec<Module>,
}

impl TryFrom<RawModules> for Modules {
    type Error = ModulesError;
    fn try_from(raw: RawModules) -> Result<Self, Self::Error> {
        Modules::new(raw.main, raw.modules)
    }
}

impl From<Modules> for RawModules {
    fn from(modules: Modules) -> Self {
        Self {
            main: modules.main,
            modules: modules.modules.into_values().collect(),
        }
    }
}

// === impl Modules ===

impl Modules {
    /// Checks names (well-formed, unique), that `main` is one of them and
    /// an ES module, and that source, text and JSON modules are UTF-8.
    pub fn new(main: impl Into<String>, modules: Vec<Module>) -> Result<Self, ModulesError> {
        let main = main.into();
        let mut by_name = BTreeMap::new();
        for module in modules {
            if !is_module_name(&module.name) {
                return Err(ModulesError::BadName { name: module.name });
            }
            if module.kind != ModuleKind::CompiledWasm
                && module.kind != ModuleKind::Data
                && module.text().is_none()
            {
                return Err(ModulesError::NotUtf8 {
                    name: module.name,
                    kind: module.kind.as_str(),
                });
            }
            if by_name.contains_key(&module.name) {
                return Err(ModulesError::Duplicate { name: module.name });
            }
            by_name.insert(module.name.clone(), module);
        }
        match by_name.get(&main) {
            None => return Err(ModulesError::NoMain { main }),
            Some(m) if m.kind != ModuleKind::ESModule => {
                return Err(ModulesError::MainNotEsModule {
                    kind: m.kind.as_str(),
                    main,
                });
            }
            Some(_) => {}
        }
        Ok(Self {
            main,
            modules: by_name,
        })
    }

    /// The main module.
    pub fn main(&self) -> &Module {
        // invariant: `new` checked that `main` names a module; nothing removes one.
        &self.modules[&self.main]
    }

    pub fn main_name(&self) -> &str {
        &self.main
    }

    pub fn get(&self, name: &str) -> Option<&Module> {
        self.modules.get(name)
    }

    /// The modules, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Module> {
        self.modules.values()
    }

    pub fn len(&self) -> usize {
        self.modules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// Bytes of all modules' content.
    pub fn total_bytes(&self) -> usize {
        self.modules.values().map(|m| m.content.len()).sum()
    }

    /// The module `specifier` names when imported from module `referrer`:
    /// `./x` and `../x` relative to the referrer's folder, `/x` from the
    /// bundle's root, anything else as a name from the root (`add.wasm`,
    /// wrangler's own way of naming its additional modules). `None` when it
    /// names no module of this bundle (or climbs out of it).
    pub fn resolve(&self, referrer: &str, specifier: &str) -> Option<&Module> {
        self.modules.get(&resolve_name(referrer, specifier)?)
    }
}

/// The name `specifier` resolves to from `referrer` (see
/// [`Modules::resolve`]), whether or not a module has it.
pub fn resolve_name(referrer: &str, specifier: &str) -> Option<String> {
    let mut parts: Vec<&str> = if specifier.starts_with("./") || specifier.starts_with("../") {
        let mut folder: Vec<&str> = referrer.split('/').collect();
        folder.pop();
        folder
    } else {
        Vec::new()
    };
    for segment in specifier.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A relative path with no empty, `.` or `..` segment and no backslash.
fn is_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 1024
        && !name.contains('\\')
        && name
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

mod base64_bytes {
    use super::*;

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&Base64::encode_string(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        Base64::decode_vec(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle() -> Modules {
        Modules::new(
            "src/main.js",
            vec![
                Module::new("src/main.js", ModuleKind::ESModule, "import './lib/a.js'"),
                Module::new("src/lib/a.js", ModuleKind::ESModule, "export {}"),
                Module::new("add.wasm", ModuleKind::CompiledWasm, vec![0, 97, 115, 109]),
            ],
        )
        .expect("a valid bundle")
    }

    #[test]
    fn imports_resolve_within_the_bundle_only() {
        let b = bundle();
        let name = |referrer, spec| b.resolve(referrer, spec).map(|m| m.name.as_str());
        assert_eq!(name("src/main.js", "./lib/a.js"), Some("src/lib/a.js"));
        assert_eq!(name("src/lib/a.js", "../main.js"), Some("src/main.js"));
        assert_eq!(name("src/lib/a.js", "../../add.wasm"), Some("add.wasm"));
        assert_eq!(name("src/main.js", "add.wasm"), Some("add.wasm"));
        assert_eq!(name("src/main.js", "/add.wasm"), Some("add.wasm"));
        assert_eq!(name("src/main.js", "./missing.js"), None);
        assert_eq!(name("src/main.js", "../../../etc/passwd"), None);
        assert_eq!(name("src/main.js", "node:fs"), None);
    }

    #[test]
    fn bad_bundles_are_refused() {
        let m = |name: &str, kind| Module::new(name, kind, "x");
        assert!(matches!(
            Modules::new("a.js", vec![m("b.js", ModuleKind::ESModule)]),
            Err(ModulesError::NoMain { .. })
        ));
        assert!(matches!(
            Modules::new("a.txt", vec![m("a.txt", ModuleKind::Text)]),
            Err(ModulesError::MainNotEsModule { .. })
        ));
        for bad in ["", "/a.js", "a/../b.js", "./a.js", "a//b.js", "a\\b.js"] {
            assert!(
                matches!(
                    Modules::new(
                        "a.js",
                        vec![m("a.js", ModuleKind::ESModule), m(bad, ModuleKind::Text)]
                    ),
                    Err(ModulesError::BadName { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Modules::new(
                "a.js",
                vec![m("a.js", ModuleKind::ESModule), m("a.js", ModuleKind::Text)]
            ),
            Err(ModulesError::Duplicate { .. })
        ));
        let binary = Module::new("t.txt", ModuleKind::Text, vec![0xff, 0xfe]);
        assert!(matches!(
            Modules::new("a.js", vec![m("a.js", ModuleKind::ESModule), binary]),
            Err(ModulesError::NotUtf8 { .. })
        ));
    }

    #[test]
    fn modules_round_trip_through_json_and_are_checked_on_the_way_in() {
        let b = bundle();
        let json = serde_json::to_string(&b).expect("serialises");
        assert!(json.contains(r#""type":"CompiledWasm""#), "{json}");
        assert!(json.contains(r#""content":"AGFzbQ==""#), "{json}");
        assert_eq!(serde_json::from_str::<Modules>(&json).expect("parses"), b);
        let broken = json.replace(r#""main":"src/main.js""#, r#""main":"nope.js""#);
        assert!(serde_json::from_str::<Modules>(&broken).is_err());
    }

    #[test]
    fn wrangler_default_rules_type_files_by_extension() {
        assert_eq!(
            ModuleKind::from_path("a/add.wasm"),
            Some(ModuleKind::CompiledWasm)
        );
        assert_eq!(ModuleKind::from_path("g.TXT"), Some(ModuleKind::Text));
        assert_eq!(ModuleKind::from_path("p.html"), Some(ModuleKind::Text));
        assert_eq!(ModuleKind::from_path("q.sql"), Some(ModuleKind::Text));
        assert_eq!(ModuleKind::from_path("d.bin"), Some(ModuleKind::Data));
        assert_eq!(ModuleKind::from_path("c.json"), Some(ModuleKind::Json));
        assert_eq!(ModuleKind::from_path("m.mjs"), Some(ModuleKind::ESModule));
        assert_eq!(ModuleKind::from_path("l.cjs"), Some(ModuleKind::CommonJS));
        assert_eq!(ModuleKind::from_path("README.md"), None);
        assert_eq!(ModuleKind::from_path("Makefile"), None);
    }
}
