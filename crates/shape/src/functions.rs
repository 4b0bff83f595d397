//! The functions of a Rust file and how many lines each spans.

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::Error;

/// A function with a body: free, in an `impl`, or a trait's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub file: PathBuf,
    /// `Type::name` for a method, `name` otherwise.
    pub name: String,
    /// The line of its `fn` keyword (attributes and docs are not counted).
    pub line: usize,
    /// From the `fn` line to the closing brace, both included.
    pub lines: usize,
}

/// Every function with a body in `file`, nested ones included, and the
/// functions written inside `host_fn!` (the engine's host functions: a
/// function in all but its parameter list); items under `#[cfg(test)]` are
/// left out (they are tests, not product code).
pub fn functions(file: &Path) -> Result<Vec<Function>, Error> {
    let syntax = crate::modules::parse(file)?;
    let mut visitor = Functions {
        file,
        owner: None,
        found: Vec::new(),
    };
    visitor.visit_file(&syntax);
    Ok(visitor.found)
}

struct Functions<'a> {
    file: &'a Path,
    /// The type whose `impl` (or the trait whose body) is being read.
    owner: Option<String>,
    found: Vec<Function>,
}

impl Functions<'_> {
    fn record(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let line = sig.fn_token.span().start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match &self.owner {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Function {
            file: self.file.to_path_buf(),
            name,
            line,
            lines: end.saturating_sub(line) + 1,
        });
    }
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// The macros whose body is one function: `host_fn!` (`host/op.rs`).
const FUNCTION_MACROS: &[&str] = &["host_fn"];

/// The function inside a `host_fn!` invocation: its name follows the `fn`
/// token, its body is the last braced group.
fn macro_function(tokens: proc_macro2::TokenStream) -> Option<(syn::Ident, usize, usize)> {
    let mut name = None;
    let mut line = 0;
    let mut body = None;
    let mut after_fn = false;
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) if ident == "fn" && name.is_none() => {
                line = ident.span().start().line;
                after_fn = true;
            }
            proc_macro2::TokenTree::Ident(ident) if after_fn => {
                name = Some(ident);
                after_fn = false;
            }
            proc_macro2::TokenTree::Group(group)
                if group.delimiter() == proc_macro2::Delimiter::Brace =>
            {
                body = Some(group.span_close().end().line);
            }
            _ => {}
        }
    }
    Some((name?, line, body?))
}

impl<'ast> Visit<'ast> for Functions<'_> {
    fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
        let named = item
            .mac
            .path
            .segments
            .last()
            .is_some_and(|s| FUNCTION_MACROS.iter().any(|m| s.ident == m));
        if !named || is_test(&item.attrs) {
            return;
        }
        if let Some((name, line, end)) = macro_function(item.mac.tokens.clone()) {
            self.found.push(Function {
                file: self.file.to_path_buf(),
                name: name.to_string(),
                line,
                lines: end.saturating_sub(line) + 1,
            });
        }
    }

    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test(&module.attrs) {
            syn::visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.record(&item.sig.ident, &item.sig, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test(&item.attrs) {
            return;
        }
        let owner = match &*item.self_ty {
            syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let outer = std::mem::replace(&mut self.owner, owner);
        syn::visit::visit_item_impl(self, item);
        self.owner = outer;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.record(&item.sig.ident, &item.sig, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let outer = self.owner.replace(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner = outer;
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.record(&item.sig.ident, &item.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}
