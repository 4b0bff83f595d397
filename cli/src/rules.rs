//! Module rules: which files of a Worker's code are modules, and of what
//! type, as wrangler's `[[rules]]` say (`{type, globs, fallthrough}`).
//!
//! A file's type is the first rule whose globs match its path from the
//! main module's folder: the project's own rules in order, then wrangler's
//! default rules (`**/*.txt`, `**/*.html`, `**/*.sql` Text; `**/*.bin`
//! Data; `**/*.wasm`, `**/*.wasm?module` CompiledWasm), then what the
//! loader knows by itself (`.js`/`.mjs` ES modules, `.cjs` CommonJS,
//! `.json` JSON, which wrangler's bundler handles without rules). As in
//! wrangler, a rule of the project replaces the default rules of its type
//! unless it says `fallthrough = true`.

use globset::{Glob, GlobSet, GlobSetBuilder};
use isolane_worker::ModuleKind;
use serde::Deserialize;

/// One `[[rules]]` entry as wrangler writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// `ESModule`, `CommonJS`, `CompiledWasm`, `Text`, `Data`.
    #[serde(rename = "type")]
    pub kind: String,
    pub globs: Vec<String>,
    #[serde(default)]
    pub fallthrough: bool,
}

/// Why the rules cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error(
        "rules: module type {kind:?} is not supported (ESModule, CommonJS, CompiledWasm, Text, Data)"
    )]
    Kind { kind: String },
    #[error("rules: glob {glob:?}: {source}")]
    Glob {
        glob: String,
        #[source]
        source: globset::Error,
    },
}

/// The module rules of a project: its own, then wrangler's defaults.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<(ModuleKind, GlobSet)>,
}

impl Default for Rules {
    /// wrangler's default rules.
    fn default() -> Self {
        Self::new(&[]).unwrap_or(Self { rules: Vec::new() })
    }
}

/// wrangler's default rules (the types its bundler does not handle itself).
const DEFAULT_RULES: [(ModuleKind, &[&str]); 3] = [
    (ModuleKind::Text, &["**/*.txt", "**/*.html", "**/*.sql"]),
    (ModuleKind::Data, &["**/*.bin"]),
    (ModuleKind::CompiledWasm, &["**/*.wasm", "**/*.wasm?module"]),
];

impl Rules {
    /// The project's `rules` before wrangler's defaults.
    pub fn new(custom: &[RuleConfig]) -> Result<Self, RuleError> {
        let mut rules = Vec::new();
        let mut replaced = Vec::new();
        for rule in custom {
            let kind = kind_of(&rule.kind)?;
            if !rule.fallthrough {
                replaced.push(kind);
            }
            rules.push((kind, glob_set(rule.globs.iter().map(String::as_str))?));
        }
        for (kind, globs) in DEFAULT_RULES {
            if !replaced.contains(&kind) {
                rules.push((kind, glob_set(globs.iter().copied())?));
            }
        }
        Ok(Self { rules })
    }

    /// The type of the module at `path` (relative, `/`-separated), or
    /// `None` when no rule covers it.
    pub fn kind(&self, path: &str) -> Option<ModuleKind> {
        let by_rule = self
            .rules
            .iter()
            .find(|(_, globs)| globs.is_match(path))
            .map(|(kind, _)| *kind);
        by_rule.or_else(|| {
            ModuleKind::from_path(path).filter(|kind| {
                matches!(
                    kind,
                    ModuleKind::ESModule | ModuleKind::CommonJS | ModuleKind::Json
                )
            })
        })
    }
}

fn kind_of(name: &str) -> Result<ModuleKind, RuleError> {
    Ok(match name {
        "ESModule" => ModuleKind::ESModule,
        "CommonJS" => ModuleKind::CommonJS,
        "CompiledWasm" => ModuleKind::CompiledWasm,
        "Text" => ModuleKind::Text,
        "Data" => ModuleKind::Data,
        _ => {
            return Err(RuleError::Kind {
                kind: name.to_owned(),
            });
        }
    })
}

fn glob_set<'a>(globs: impl Iterator<Item = &'a str>) -> Result<GlobSet, RuleError> {
    let mut set = GlobSetBuilder::new();
    for glob in globs {
        let parsed = Glob::new(glob).map_err(|source| RuleError::Glob {
            glob: glob.to_owned(),
            source,
        })?;
        set.add(parsed);
    }
    set.build().map_err(|source| RuleError::Glob {
        glob: String::new(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: &str, globs: &[&str], fallthrough: bool) -> RuleConfig {
        RuleConfig {
            kind: kind.to_owned(),
            globs: globs.iter().map(|g| (*g).to_owned()).collect(),
            fallthrough,
        }
    }

    #[test]
    fn the_defaults_type_sql_as_text_and_leave_markdown_untyped() {
        let rules = Rules::default();
        assert_eq!(rules.kind("schema.sql"), Some(ModuleKind::Text));
        assert_eq!(rules.kind("db/q.sql"), Some(ModuleKind::Text));
        assert_eq!(rules.kind("a.wasm"), Some(ModuleKind::CompiledWasm));
        assert_eq!(rules.kind("main.js"), Some(ModuleKind::ESModule));
        assert_eq!(rules.kind("c.cjs"), Some(ModuleKind::CommonJS));
        assert_eq!(rules.kind("README.md"), None);
    }

    #[test]
    fn a_custom_rule_comes_first_and_replaces_its_types_defaults() {
        let rules = Rules::new(&[rule("Text", &["**/*.md"], false)]).unwrap();
        assert_eq!(rules.kind("docs/a.md"), Some(ModuleKind::Text));
        assert_eq!(rules.kind("a.txt"), None, "replaced without fallthrough");
        let rules = Rules::new(&[rule("Text", &["**/*.md"], true)]).unwrap();
        assert_eq!(rules.kind("a.txt"), Some(ModuleKind::Text));
        let rules = Rules::new(&[rule("Data", &["**/*.txt"], true)]).unwrap();
        assert_eq!(rules.kind("a.txt"), Some(ModuleKind::Data));
    }

    #[test]
    fn unknown_types_and_bad_globs_are_refused() {
        let error = Rules::new(&[rule("PythonModule", &["**/*.py"], false)]).unwrap_err();
        assert!(error.to_string().contains("\"PythonModule\""), "{error}");
        let error = Rules::new(&[rule("Text", &["a[b"], false)]).unwrap_err();
        assert!(
            error.to_string().starts_with("rules: glob \"a[b\""),
            "{error}"
        );
    }
}
