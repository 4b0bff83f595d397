//! The readers behind the shape tests, on small made-up crates: each must
//! see what it claims to, or the shape tests prove nothing.

#![allow(clippy::unwrap_used)] // test helpers panic on purpose

use std::collections::BTreeSet;

use isolane_shape::{
    Graph, child_graph, circles, crates_used, folder_modules, functions, module_graph,
};

fn write(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
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
    assert_eq!(circles(&graph), vec![vec!["a -> b", "b -> c", "c -> a"]]);
}

#[test]
fn edges_come_from_uses_groups_inline_paths_macros_and_reexports() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            (
                "lib.rs",
                "mod a; mod b; mod c; mod d; mod e; mod f; pub use f::Exported;",
            ),
            ("a.rs", "use crate::{b::X, c};"),
            (
                "b.rs",
                "fn go() { let _ = crate::d::run(); } // crate::e::Commented",
            ),
            (
                "c.rs",
                "fn go() { let _ = \"crate::e::quoted\"; host_fn!(crate::e::f); }",
            ),
            ("d/mod.rs", "mod inner;"),
            ("d/inner.rs", "use super::super::Exported;"),
            ("e.rs", "#[cfg(test)] mod tests { use crate::a::Only; }"),
            ("f.rs", "pub struct Exported;"),
        ],
    );
    let graph = module_graph(dir.path()).unwrap();
    let uses = |m: &str| graph[m].iter().map(String::as_str).collect::<BTreeSet<_>>();
    assert_eq!(uses("a"), BTreeSet::from(["b", "c"]));
    assert_eq!(uses("b"), BTreeSet::from(["d"]));
    assert_eq!(uses("c"), BTreeSet::from(["e"]));
    assert_eq!(uses("d"), BTreeSet::from(["f"]));
    assert!(
        uses("e").is_empty(),
        "a test module's imports are not edges"
    );
}

#[test]
fn a_module_s_children_have_their_own_graph() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("lib.rs", "mod p; mod q;"),
            ("p.rs", "mod a; mod b; mod c; pub use c::Named;"),
            ("p/a.rs", "use super::b::Frames;"),
            ("p/b.rs", "fn go() { crate::p::a::run(); }"),
            ("p/c.rs", "use super::super::q::Other; pub struct Named;"),
            ("p/c/deep.rs", "use super::super::Named;"),
            ("q.rs", "use crate::p::Named;"),
        ],
    );
    let p = vec!["p".to_owned()];
    assert_eq!(
        folder_modules(dir.path()).unwrap(),
        [p.clone(), vec!["p".to_owned(), "c".to_owned()]]
    );
    let graph = child_graph(dir.path(), &p).unwrap();
    let uses = |m: &str| graph[m].iter().map(String::as_str).collect::<BTreeSet<_>>();
    assert_eq!(uses("a"), BTreeSet::from(["b"]));
    assert_eq!(uses("b"), BTreeSet::from(["a"]));
    assert!(
        uses("c").is_empty(),
        "a path out of p is no edge among its children"
    );
    assert_eq!(circles(&graph), vec![vec!["a -> b", "b -> a"]]);
    // The top level is read as before: p and q use each other.
    let top = module_graph(dir.path()).unwrap();
    assert_eq!(circles(&top), vec![vec!["p -> q", "q -> p"]]);
}

#[test]
fn functions_are_measured_from_fn_to_closing_brace() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.rs");
    std::fs::write(
        &file,
        "/// Docs are not counted.\n#[inline]\nfn free() {\n    let x = 1;\n}\n\
         struct S;\nimpl S {\n    fn method(&self) {}\n}\n\
         trait T {\n    fn default(&self) {\n    }\n    fn required(&self);\n}\n\
         #[cfg(test)]\nmod tests {\n    fn helper() {}\n}\n\
         host_fn! {\n/// A host function.\nfn host_call<'s>(scope, x: u32) -> u32 {\n    x\n}\n}\n",
    )
    .unwrap();
    let found: Vec<(String, usize, usize)> = functions(&file)
        .unwrap()
        .into_iter()
        .map(|f| (f.name, f.line, f.lines))
        .collect();
    assert_eq!(
        found,
        [
            ("free".to_owned(), 3, 3),
            ("S::method".to_owned(), 8, 1),
            ("T::default".to_owned(), 11, 2),
            ("host_call".to_owned(), 21, 3),
        ]
    );
}

#[test]
fn the_crates_a_file_names_are_found_in_paths_uses_and_macros() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.rs");
    std::fs::write(
        &file,
        "use isolane_web::fetch;\nuse {isolane_nodejs as node, std::rc::Rc};\n\
         fn go() { isolane_bindings::kv::unit(); }\n\
         fn mac() { host_fn!(isolane_more::f); }\n\
         // isolane_commented::x\nfn s() { let _ = \"isolane_quoted::y\"; }\n",
    )
    .unwrap();
    let used = crates_used(&file).unwrap();
    for named in [
        "isolane_web",
        "isolane_nodejs",
        "std",
        "isolane_bindings",
        "isolane_more",
    ] {
        assert!(used.contains(named), "{named} not found in {used:?}");
    }
    for unnamed in ["isolane_commented", "isolane_quoted", "fetch", "rc"] {
        assert!(!used.contains(unnamed), "{unnamed} found in {used:?}");
    }
}
