//! A Worker's code from disk: one script, or a bundle of modules typed by
//! module rules ([`Rules`]: wrangler's defaults, or a project's `[[rules]]`
//! before them).
//!
//! - A file (`isolane dev main.js`): its import graph. Every static
//!   `import`/`export … from`, dynamic `import('…')` and CommonJS
//!   `require('…')` with a relative specifier (`./`, `../`, `/`) is
//!   followed, read (oxc's parser, never a pattern) and named by its path
//!   from the main module's folder. Other specifiers (`node:…`,
//!   `cloudflare:…`, bare package names) are left for the runtime, which
//!   refuses an import that names no module at load.
//! - A folder (`wrangler deploy --dry-run --outdir DIR`, as it is): every
//!   file under it that a rule types is a module (wrangler's own
//!   additional modules, dynamic imports included); the main module is
//!   `index.js` if there is one, else the only `.js`/`.mjs` file at the top.
//!
//! A graph of one module with no imports stays a plain script, so a
//! single-file Worker keeps the revision it had before bundles.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use isolane_worker::{Module, ModuleKind, Modules, ModulesError, resolve_name};

use crate::rules::Rules;
use oxc_allocator::Allocator;
use oxc_ast::ast::{CallExpression, Expression, ImportExpression};
use oxc_ast_visit::Visit;
use oxc_parser::Parser;
use oxc_span::SourceType;

/// A Worker's code as read from disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Code {
    /// One script with no imports.
    Script(String),
    /// Modules with a main one.
    Modules(Modules),
}

/// Why the code cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{referrer}: import {specifier:?} names no file ({path})")]
    Missing {
        referrer: String,
        specifier: String,
        path: String,
    },
    #[error("{referrer}: import {specifier:?} leaves the main module's folder")]
    Outside { referrer: String, specifier: String },
    #[error(
        "{path}: no rule gives a module type to this file (wrangler's default rules: .js .mjs .cjs .wasm .txt .html .sql .bin .json; a project's [[rules]] add others)"
    )]
    Untyped { path: String },
    #[error("{dir}: no main module (index.js, or a single .js/.mjs file at the top)")]
    NoMain { dir: String },
    #[error("{dir}: bundle: {source}")]
    Invalid {
        dir: String,
        #[source]
        source: ModulesError,
    },
}

/// The folder of a Worker's code: to watch for changes.
pub fn root(path: &Path) -> &Path {
    if path.is_dir() {
        path
    } else {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    }
}

/// Reads the code at `path`: a file and its imports, or a folder, each
/// module typed by `rules`.
pub fn load(path: &Path, rules: &Rules) -> Result<Code, CodeError> {
    if path.is_dir() {
        return load_folder(path, rules, None);
    }
    let root = root(path);
    let main = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut modules = Vec::new();
    let mut seen = BTreeSet::from([main.clone()]);
    let mut pending = vec![main.clone()];
    while let Some(name) = pending.pop() {
        let file = root.join(&name);
        let kind = rules.kind(&name).unwrap_or(ModuleKind::ESModule);
        let content = read(&file)?;
        if matches!(kind, ModuleKind::ESModule | ModuleKind::CommonJS) {
            for specifier in imports(&String::from_utf8_lossy(&content), kind) {
                let Some(target) = follow(root, &name, &specifier, rules)? else {
                    continue;
                };
                if seen.insert(target.clone()) {
                    pending.push(target);
                }
            }
        }
        modules.push(Module::new(name, kind, content));
    }
    if modules.len() == 1 && seen.len() == 1 {
        let script = String::from_utf8_lossy(&modules[0].content).into_owned();
        return Ok(Code::Script(script));
    }
    Modules::new(main, modules)
        .map(Code::Modules)
        .map_err(|source| CodeError::Invalid {
            dir: root.display().to_string(),
            source,
        })
}

/// The module a relative `specifier` of `referrer` names, checked to be a
/// typed file inside `root`; `None` for a specifier left to the runtime.
fn follow(
    root: &Path,
    referrer: &str,
    specifier: &str,
    rules: &Rules,
) -> Result<Option<String>, CodeError> {
    let relative = ["./", "../", "/"].iter().any(|p| specifier.starts_with(p));
    if !relative {
        return Ok(None);
    }
    let Some(target) = resolve_name(referrer, specifier) else {
        return Err(CodeError::Outside {
            referrer: referrer.to_owned(),
            specifier: specifier.to_owned(),
        });
    };
    let file = root.join(&target);
    if !file.is_file() {
        return Err(CodeError::Missing {
            referrer: referrer.to_owned(),
            specifier: specifier.to_owned(),
            path: file.display().to_string(),
        });
    }
    if rules.kind(&target).is_none() {
        return Err(CodeError::Untyped {
            path: file.display().to_string(),
        });
    }
    Ok(Some(target))
}

/// wrangler's output folder: every typed file, `index.js` (or the only
/// top-level `.js`/`.mjs`) as main.
/// Reads wrangler's output folder `dir` whose main module is `main` (a
/// module at its top; else as [`load`] finds one in a folder).
pub fn load_output(dir: &Path, main: &str, rules: &Rules) -> Result<Code, CodeError> {
    load_folder(dir, rules, Some(main))
}

fn load_folder(dir: &Path, rules: &Rules, main: Option<&str>) -> Result<Code, CodeError> {
    let mut modules = Vec::new();
    for file in files(dir)? {
        let name = file
            .strip_prefix(dir)
            .unwrap_or(&file)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if let Some(kind) = rules.kind(&name) {
            modules.push(Module::new(name, kind, read(&file)?));
        }
    }
    let top: Vec<&Module> = modules
        .iter()
        .filter(|m| m.kind == ModuleKind::ESModule && !m.name.contains('/'))
        .collect();
    let named = main.and_then(|main| top.iter().find(|m| m.name == main));
    let main = match named.or_else(|| top.iter().find(|m| m.name == "index.js")) {
        Some(main) => main.name.clone(),
        None if top.len() == 1 => top[0].name.clone(),
        None => {
            return Err(CodeError::NoMain {
                dir: dir.display().to_string(),
            });
        }
    };
    if modules.len() == 1 {
        let script = String::from_utf8_lossy(&modules[0].content).into_owned();
        return Ok(Code::Script(script));
    }
    Modules::new(main, modules)
        .map(Code::Modules)
        .map_err(|source| CodeError::Invalid {
            dir: dir.display().to_string(),
            source,
        })
}

/// The files under `dir`, in name order (hidden ones and `node_modules`
/// left out).
pub(crate) fn files(dir: &Path) -> Result<Vec<PathBuf>, CodeError> {
    files_where(dir, |name| !name.starts_with('.') && name != "node_modules")
}

/// The files under `dir` (following links), in name order, walking only
/// into the entries whose name `keep` accepts.
pub(crate) fn files_where(
    dir: &Path,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, CodeError> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|source| CodeError::Read {
            path: folder.display().to_string(),
            source,
        })?;
        for entry in entries.flatten() {
            if !keep(&entry.file_name().to_string_lossy()) {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<u8>, CodeError> {
    std::fs::read(path).map_err(|source| CodeError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// The specifiers `source` imports or requires with a string literal. A
/// source that does not parse imports nothing here: the runtime reports
/// its syntax error with the line.
fn imports(source: &str, kind: ModuleKind) -> Vec<String> {
    let allocator = Allocator::default();
    let source_type = match kind {
        ModuleKind::CommonJS => SourceType::cjs(),
        _ => SourceType::mjs(),
    };
    let parsed = Parser::new(&allocator, source, source_type).parse();
    let mut found = Specifiers::default();
    for name in parsed.module_record.requested_modules.keys() {
        found.0.push(name.to_string());
    }
    found.visit_program(&parsed.program);
    found.0
}

/// Dynamic imports and `require` calls with a string literal.
#[derive(Default)]
struct Specifiers(Vec<String>);

impl<'a> Visit<'a> for Specifiers {
    fn visit_call_expression(&mut self, call: &CallExpression<'a>) {
        if let Some(literal) = call.common_js_require() {
            self.0.push(literal.value.to_string());
        }
        oxc_ast_visit::walk::walk_call_expression(self, call);
    }

    fn visit_import_expression(&mut self, import: &ImportExpression<'a>) {
        if let Expression::StringLiteral(literal) = &import.source {
            self.0.push(literal.value.to_string());
        }
        oxc_ast_visit::walk::walk_import_expression(self, import);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, content: &[u8]) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    #[test]
    fn a_file_brings_its_import_graph() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "main.js",
            b"import a from './add.wasm'; import t from './greeting.txt';\n\
              import { x } from './lib/x.js'; import 'node:buffer';\n\
              export default { fetch() { return import('./lazy.js'); } };",
        );
        write(dir.path(), "add.wasm", b"\0asm\x01\0\0\0");
        write(dir.path(), "greeting.txt", b"hello");
        write(
            dir.path(),
            "lib/x.js",
            b"const c = require('../c.cjs'); export const x = c;",
        );
        write(
            dir.path(),
            "c.cjs",
            b"module.exports = require('./data.json');",
        );
        write(dir.path(), "data.json", b"{}");
        write(dir.path(), "lazy.js", b"export default 1;");
        write(dir.path(), "unrelated.js", b"export default 2;");
        let Code::Modules(modules) = load(&dir.path().join("main.js"), &Rules::default()).unwrap()
        else {
            panic!("modules expected");
        };
        let names: Vec<(&str, ModuleKind)> =
            modules.iter().map(|m| (m.name.as_str(), m.kind)).collect();
        assert_eq!(
            names,
            [
                ("add.wasm", ModuleKind::CompiledWasm),
                ("c.cjs", ModuleKind::CommonJS),
                ("data.json", ModuleKind::Json),
                ("greeting.txt", ModuleKind::Text),
                ("lazy.js", ModuleKind::ESModule),
                ("lib/x.js", ModuleKind::ESModule),
                ("main.js", ModuleKind::ESModule),
            ]
        );
        assert_eq!(modules.main_name(), "main.js");
    }

    #[test]
    fn a_file_without_imports_stays_a_script() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "w.js", b"export default {};");
        assert_eq!(
            load(&dir.path().join("w.js"), &Rules::default()).unwrap(),
            Code::Script("export default {};".to_owned())
        );
    }

    #[test]
    fn a_missing_or_escaping_import_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "w/main.js", b"import './gone.js';");
        let error = load(&dir.path().join("w/main.js"), &Rules::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(r#"main.js: import "./gone.js" names no file"#),
            "{error}"
        );
        write(dir.path(), "w/out.js", b"import '../secret.js';");
        write(dir.path(), "secret.js", b"");
        let error = load(&dir.path().join("w/out.js"), &Rules::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("leaves the main module's folder"), "{error}");
    }

    #[test]
    fn a_wrangler_output_folder_is_taken_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "index.js",
            b"import w from './0a1b-add.wasm'; export default {};",
        );
        write(dir.path(), "0a1b-add.wasm", b"\0asm\x01\0\0\0");
        write(
            dir.path(),
            "README.md",
            b"This folder contains the built output",
        );
        write(dir.path(), "index.js.map", b"{}");
        let Code::Modules(modules) = load(dir.path(), &Rules::default()).unwrap() else {
            panic!("modules expected");
        };
        assert_eq!(modules.main_name(), "index.js");
        assert_eq!(modules.len(), 2);
    }
}
