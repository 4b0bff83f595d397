//! Import circles: the strongly connected parts of a module graph.

use std::collections::BTreeSet;

use petgraph::algo::tarjan_scc;
use petgraph::graphmap::DiGraphMap;

use crate::Graph;

/// Every set of two or more modules that reach each other, each as
/// `from -> to` edges inside the set, sorted.
pub fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let mut directed = DiGraphMap::<&str, ()>::new();
    for (from, tos) in graph {
        directed.add_node(from);
        for to in tos {
            directed.add_edge(from, to, ());
        }
    }
    let mut found: Vec<Vec<String>> = tarjan_scc(&directed)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let members: BTreeSet<&str> = component.into_iter().collect();
            let mut edges: Vec<String> = members
                .iter()
                .flat_map(|from| {
                    graph[*from]
                        .iter()
                        .filter(|to| members.contains(to.as_str()))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            edges.sort();
            edges
        })
        .collect();
    found.sort();
    found
}
