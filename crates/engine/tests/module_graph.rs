//! The engine's top-level modules depend on each other one way only: no
//! import circle (issue #16). Read from the source, not from the compiler:
//! each file of `src/` belongs to a top-level module (`host/fetch.rs` to
//! `host`), and a `crate::a::…` path in it (in a `use`, a `use crate::{a,
//! b}` group, or inline) is an edge to `a`. A `super::` path that climbs out
//! of a nested file to the crate root counts the same way; in a top-level
//! file `super::` only appears in its inline test module, where it names the
//! file itself. A parent declaring its children (`mod state;` in `host.rs`)
//! is no edge. `crate::Name` for an item `lib.rs` re-exports (`pub use
//! a::Name`) is an edge to `a`; the root's own items (`HOPS_HEADER`) are not
//! a module.
//!
//! No V8 here: this test does not use the crate, so it does not link it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles allowed on purpose, as (from, to) edges left out of the check.
/// None: keep it that way.
const ALLOWED: &[(&str, &str)] = &[];

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn the_engine_modules_form_no_circle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The parse must have found something, or the test proves nothing.
    assert!(graph.len() > 10, "too few modules read: {graph:?}");
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > 20,
        "too few edges read: {graph:?}"
    );
    let circles: Vec<_> = strongly_connected(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .collect();
    let edges = |component: &BTreeSet<String>| -> Vec<String> {
        component
            .iter()
            .flat_map(|from| {
                graph[from]
                    .iter()
                    .filter(|to| component.contains(*to))
                    .map(move |to| format!("{from} -> {to}"))
            })
            .collect()
    };
    assert!(
        circles.is_empty(),
        "the engine's modules form import circles; give each shared idea one owner:\n{}",
        circles
            .iter()
            .map(|c| format!("  {c:?}: {}", edges(c).join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn a_circle_is_found() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .into_iter()
        .fold(Graph::new(), |mut graph, (from, to)| {
            graph
                .entry(from.to_owned())
                .or_default()
                .insert(to.to_owned());
            graph.entry(to.to_owned()).or_default();
            graph
        });
    let circles: Vec<_> = strongly_connected(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect();
    let expected: BTreeSet<String> = ["a", "b", "c"].map(str::to_owned).into();
    assert_eq!(circles, vec![expected]);
}

#[test]
fn paths_are_read_from_uses_groups_and_inline_paths() {
    let text = "use crate::body::Body;\n\
                use crate::{platform, snapshot::blob};\n\
                // crate::commented::Out\n\
                let x = crate::egress::roots(&y);\n\
                let s = \"crate::quoted\";\n\
                let r = r#\"crate::raw \"quoted\"\"#; let c = '\"'; crate::after::Quote\n";
    let paths = crate_paths(&strip(text), "crate::");
    assert_eq!(
        paths,
        [
            "body::Body",
            "platform",
            "snapshot::blob",
            "egress::roots",
            "after::Quote"
        ]
    );
}

/// Top-level module → the top-level modules it uses.
fn module_graph(src: &Path) -> Graph {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("reading lib.rs");
    let reexports = reexports(&strip(&lib));
    let mut graph = Graph::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).expect("under src");
        let parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts == ["lib"] {
            continue;
        }
        let top = parts[0].clone();
        let text = strip(&std::fs::read_to_string(&file).expect("reading a source file"));
        let mut targets: Vec<String> = crate_paths(&text, "crate::");
        // `super::` from a nested file: climb; what reaches the root names
        // a top-level module.
        if parts.len() > 1 {
            for path in crate_paths(&text, "super::") {
                let mut here = parts.clone();
                here.pop();
                let mut rest = path.as_str();
                while let Some(after) = rest.strip_prefix("super::") {
                    here.pop();
                    rest = after;
                }
                if here.is_empty() {
                    targets.push(rest.to_owned());
                }
            }
        }
        let uses = graph.entry(top.clone()).or_default();
        for target in targets {
            let first = target.split("::").next().unwrap_or_default();
            let module = if src.join(format!("{first}.rs")).is_file() {
                Some(first.to_owned())
            } else {
                reexports.get(first).cloned()
            };
            if let Some(module) = module
                && module != top
                && !ALLOWED.contains(&(top.as_str(), module.as_str()))
            {
                uses.insert(module);
            }
        }
    }
    graph
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("reading src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The text without comments and with string literals emptied, so neither
/// can contribute a path.
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            // A raw string: `r#"…"#` (the engine's have one `#` at most).
            'r' if chars.clone().take(2).collect::<String>() == "#\"" => {
                out.push_str("\"\"");
                let mut last = ' ';
                for c in chars.by_ref().skip(2) {
                    if last == '"' && c == '#' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                out.push_str("\"\"");
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            // A char literal such as '"' must not open a string.
            '\'' => {
                out.push(c);
                let literal: String = chars.clone().take(3).collect();
                if literal.starts_with("\"'") {
                    chars.next();
                } else if literal.starts_with("\\\"'") {
                    chars.next();
                    chars.next();
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The paths after each `prefix` (`crate::` or `super::`), without it: `a::b`
/// for `crate::a::b`, and one path per item of a `crate::{a, b::c}` group.
fn crate_paths(text: &str, prefix: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        // A whole word: `my_crate::` is not `crate::`.
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group_end(group);
            paths.extend(split_group(&group[..end]).map(|item| path_at(item.trim_start())));
        } else {
            paths.push(path_at(rest));
        }
    }
    paths.retain(|p| !p.is_empty());
    paths
}

/// Where the group that `{` opened ends (its closing brace).
fn group_end(group: &str) -> usize {
    let mut depth = 1;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    group.len()
}

/// The items of a group, split at its top-level commas.
fn split_group(group: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items.into_iter()
}

/// The `a::b::c` path at the start of `text`.
fn path_at(text: &str) -> String {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    text[..end].trim_end_matches(':').to_owned()
}

/// `Name → module` for each `pub use module::…Name…;` of `lib.rs`.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(used) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = used.split_once("::") else {
            continue;
        };
        for name in items
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|n| !n.is_empty())
        {
            names.insert(name.to_owned(), module.to_owned());
        }
    }
    names
}

/// The strongly connected components of `graph` (Tarjan's algorithm).
fn strongly_connected(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        components: Vec<BTreeSet<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let index = self.index.len();
            self.index.insert(node, index);
            self.low.insert(node, index);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(member) = self.stack.pop() {
                    component.insert(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.components
}
