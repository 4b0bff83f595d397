//! Which modules of a crate use which: the graph an import circle would
//! show in, among the top-level modules and among the children of each
//! module that has a folder.
//!
//! Each file below `src/` belongs to a top-level module (`host/fetch.rs` to
//! `host`). A `crate::a::…` path in it — in a `use`, inline, or inside a
//! macro's tokens — is an edge to `a`; a `super::` path that climbs out to
//! the crate root counts the same way. `crate::Name` for an item the root
//! re-exports (`pub use a::Name`) is an edge to `a`. A parent declaring its
//! children (`mod state;`) is no edge, and `#[cfg(test)]` modules are not
//! read: a test's imports are not the crate's structure. Below a module
//! `m` with a folder, the same holds one level down ([`child_graph`]): a
//! file of `m/` belongs to a child of `m`, and a path reaching `m::x`
//! (`super::x` from a sibling, `crate::m::x`) is an edge to `x`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use crate::Error;
use crate::workspace::rust_files;

/// Module → the modules (of the same parent) it uses.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose sources are in `src` (its root is `lib.rs`,
/// else `main.rs`; `src/bin/` holds other crates and is left out).
pub fn module_graph(src: &Path) -> Result<Graph, Error> {
    child_graph(src, &[])
}

/// The graph of the children of the module at `base` (its path from the
/// crate root, such as `["proxy"]`; empty for the crate's top-level
/// modules), whose files are in `src`'s folder of that path.
pub fn child_graph(src: &Path, base: &[String]) -> Result<Graph, Error> {
    let dir = base
        .iter()
        .fold(src.to_path_buf(), |dir, part| dir.join(part));
    let root = match base.split_last() {
        None => ["lib.rs", "main.rs"]
            .iter()
            .map(|name| src.join(name))
            .find(|path| path.is_file()),
        Some((last, parent)) => {
            let parent = parent.iter().fold(src.to_path_buf(), |d, p| d.join(p));
            [parent.join(format!("{last}.rs")), dir.join("mod.rs")]
                .into_iter()
                .find(|path| path.is_file())
        }
    };
    let reexports = match &root {
        Some(root) => reexports(&parse(root)?),
        None => BTreeMap::new(),
    };
    let mut graph = Graph::new();
    for file in rust_files(&dir)? {
        let Some(parts) = module_path(src, &file) else {
            continue;
        };
        if parts.len() <= base.len() || parts[..base.len()] != *base {
            continue;
        }
        let top = parts[base.len()].clone();
        let mut paths = Paths {
            here: parts,
            found: Vec::new(),
        };
        paths.visit_file(&parse(&file)?);
        let uses = graph.entry(top.clone()).or_default();
        for path in paths.found {
            if path.len() <= base.len() || path[..base.len()] != *base {
                continue;
            }
            let first = &path[base.len()];
            let module = if dir.join(format!("{first}.rs")).is_file()
                || dir.join(first).join("mod.rs").is_file()
            {
                Some(first.clone())
            } else {
                reexports.get(first).cloned()
            };
            if let Some(module) = module.filter(|m| *m != top) {
                uses.insert(module);
            }
        }
    }
    Ok(graph)
}

/// Every module of the crate in `src` that has a folder of children, as
/// its path from the root (`["proxy"]`, `["host", "fetch"]`).
pub fn folder_modules(src: &Path) -> Result<Vec<Vec<String>>, Error> {
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for file in rust_files(src)? {
        if let Some(mut parts) = module_path(src, &file) {
            parts.pop();
            while !parts.is_empty() {
                found.insert(parts.clone());
                parts.pop();
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// The module path of `file` from the crate root (`host/fetch.rs` and
/// `host/fetch/mod.rs` are `["host", "fetch"]`); `None` for the root itself
/// and for `src/bin/`, which holds other crates.
fn module_path(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    let root = parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main");
    if parts.is_empty() || root || parts[0] == "bin" {
        return None;
    }
    Some(parts)
}

/// `file` read and parsed as Rust.
pub(crate) fn parse(file: &Path) -> Result<syn::File, Error> {
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

/// Every path in a file that starts at the crate root (`crate::…`) or
/// climbs to a parent (`super::…`), as a path from the crate root.
struct Paths {
    /// The module being read, as path parts from the crate root.
    here: Vec<String>,
    found: Vec<Vec<String>>,
}

impl Paths {
    /// Records `segments` (a path's idents, in order) from the crate root,
    /// if it starts at the root or climbs to a parent.
    fn reach(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        if first == "crate" {
            self.found.push(segments[1..].to_vec());
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
        if rest.len() < segments.len() {
            let mut path = self.here[..depth].to_vec();
            path.extend_from_slice(rest);
            self.found.push(path);
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
