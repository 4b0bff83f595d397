//! Which crates a Rust file names: the first segment of every path and
//! `use` tree, and the identifiers inside macro invocations (where `syn`
//! sees tokens, not paths). Comments and strings name nothing.

use std::collections::BTreeSet;
use std::path::Path;

use syn::visit::Visit;

use crate::Error;

/// Every identifier that starts a path in `file` (`isolane_web` of
/// `isolane_web::fetch::unit()`, `std` of `use std::rc::Rc`), and every
/// identifier inside a macro's tokens. A crate named nowhere here is not
/// used by the file.
pub fn crates_used(file: &Path) -> Result<BTreeSet<String>, Error> {
    let syntax = crate::modules::parse(file)?;
    let mut roots = Roots::default();
    roots.visit_file(&syntax);
    Ok(roots.found)
}

#[derive(Default)]
struct Roots {
    found: BTreeSet<String>,
}

impl Roots {
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Ident(ident) => {
                    self.found.insert(ident.to_string());
                }
                proc_macro2::TokenTree::Group(group) => self.tokens(group.stream()),
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Roots {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(first) = path.segments.first() {
            self.found.insert(first.ident.to_string());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.visit_use_tree(&item.tree);
    }

    fn visit_use_tree(&mut self, tree: &'ast syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                self.found.insert(path.ident.to_string());
            }
            syn::UseTree::Name(name) => {
                self.found.insert(name.ident.to_string());
            }
            syn::UseTree::Rename(rename) => {
                self.found.insert(rename.ident.to_string());
            }
            syn::UseTree::Group(group) => {
                for inner in &group.items {
                    self.visit_use_tree(inner);
                }
            }
            syn::UseTree::Glob(_) => {}
        }
    }

    fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
        self.found.insert(item.ident.to_string());
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        self.tokens(mac.tokens.clone());
    }
}
