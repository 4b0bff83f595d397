//! Which top-level modules of a crate use which: the graph an import circle
//! would show in.
//!
//! Each file below `src/` belongs to a top-level module (`host/fetch.rs` to
//! `host`). A `crate::a::…` path in it — in a `use`, inline, or inside a
//! macro's tokens — is an edge to `a`; a `super::` path that climbs out to
//! the crate root counts the same way. `crate::Name` for an item the root
//! re-exports (`pub use a::Name`) is an edge to `a`. A parent declaring its
//! children (`mod state;`) is no edge, and `#[cfg(test)]` modules are not
//! read: a test's imports are not the crate's structure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use crate::Error;
use crate::workspace::rust_files;

/// Top-level module → the top-level modules it uses.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose sources are in `src` (its root is `lib.rs`,
/// else `main.rs`; `src/bin/` holds other crates and is left out).
pub fn module_graph(src: &Path) -> Result<Graph, Error> {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .find(|path| path.is_file());
    let reexports = match &root {
        Some(root) => reexports(&parse(root)?),
        None => BTreeMap::new(),
    };
    let mut graph = Graph::new();
    for file in rust_files(src)? {
        let Ok(relative) = file.strip_prefix(src) else {
            continue;
        };
        let mut parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|last| last == "mod") {
            parts.pop();
        }
        if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") || parts[0] == "bin" {
            continue;
        }
        let top = parts[0].clone();
        let mut paths = Paths {
            here: parts,
            found: Vec::new(),
        };
        paths.visit_file(&parse(&file)?);
        let uses = graph.entry(top.clone()).or_default();
        for first in paths.found {
            let module = if src.join(format!("{first}.rs")).is_file()
                || src.join(&first).join("mod.rs").is_file()
            {
                Some(first)
            } else {
                reexports.get(&first).cloned()
            };
            if let Some(module) = module.filter(|m| *m != top) {
                uses.insert(module);
            }
        }
    }
    Ok(graph)
}

fn parse(file: &Path) -> Result<syn::File, Error> {
    let text = std::fs::read_to_string(file).map_err(|source| Error::Read {
        path: file.to_path_buf(),
        source,
    })?;
    syn::parse_file(&text).map_err(|source| Error::Parse {
        path: file.to_path_buf(),
        source,
    })
}

/// `Name → module` for each name a root's `pub use module::…;` brings in.
fn reexports(root: &syn::File) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for item in &root.items {
        let syn::Item::Use(item) = item else { continue };
        if !matches!(item.vis, syn::Visibility::Public(_)) {
            continue;
        }
        if let syn::UseTree::Path(path) = &item.tree {
            let module = path.ident.to_string();
            let mut leaves = Vec::new();
            use_leaves(&path.tree, &mut leaves);
            for leaf in leaves {
                names.insert(leaf, module.clone());
            }
        }
    }
    names
}

/// The names a use tree brings into scope (renames by their new name).
fn use_leaves(tree: &syn::UseTree, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(path) => use_leaves(&path.tree, out),
        syn::UseTree::Name(name) => out.push(name.ident.to_string()),
        syn::UseTree::Rename(rename) => out.push(rename.rename.to_string()),
        syn::UseTree::Group(group) => group.items.iter().for_each(|t| use_leaves(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// The first segment after the crate root of every path in a file that
/// reaches the root (`crate::a::b` gives `a`).
struct Paths {
    /// The module being read, as path parts from the crate root.
    here: Vec<String>,
    found: Vec<String>,
}

impl Paths {
    /// Records `segments` (a path's idents, in order) if it reaches the root.
    fn reach(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        if first == "crate" {
            if let Some(next) = segments.get(1) {
                self.found.push(next.clone());
            }
            return;
        }
        let mut depth = self.here.len();
        let mut rest = segments;
        while let Some((head, tail)) = rest.split_first() {
            if head != "super" {
                break;
            }
            depth = depth.saturating_sub(1);
            rest = tail;
        }
        if rest.len() < segments.len()
            && depth == 0
            && let Some(next) = rest.first()
        {
            self.found.push(next.clone());
        }
    }

    /// `crate :: name` and `super :: …` sequences in a macro's tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(group) = &trees[i] {
                self.tokens(group.stream());
            }
            let mut segments = Vec::new();
            let mut j = i;
            while let Some(TokenTree::Ident(ident)) = trees.get(j) {
                segments.push(ident.to_string());
                let colons = matches!(
                    (trees.get(j + 1), trees.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':'
                );
                if !colons {
                    break;
                }
                j += 3;
            }
            if segments.len() > 1 && (segments[0] == "crate" || segments[0] == "super") {
                self.reach(&segments);
            }
            i = j.max(i) + 1;
        }
    }
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut full = prefix.clone();
            full.push(name.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Rename(rename) => {
            let mut full = prefix.clone();
            full.push(rename.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Group(group) => {
            for item in &group.items {
                use_paths(item, prefix, out);
            }
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if is_test(&module.attrs) {
            return;
        }
        self.here.push(module.ident.to_string());
        syn::visit::visit_item_mod(self, module);
        self.here.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut paths);
        for path in paths {
            self.reach(&path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.reach(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}
