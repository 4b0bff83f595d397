//! Comparison 6: placement. `bench/run.sh` runs the placement crate's own
//! `placement_bench` example; this turns its Markdown into a section and
//! reads the skewed-traffic table for the balance target.

use std::fmt::Write as _;

use crate::report::{Section, Target};

/// Builds the section from `placement_bench`'s output.
pub fn section(output: &str) -> Section {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## 6. Placement\n\n\
         `cargo run --release -p isolane-placement --example placement_bench`, included as \
         printed (deterministic except the lookup timings, which are single-threaded ns per \
         lookup on the shared machine). The chosen scheme is weighted rendezvous (HRW) with \
         bounded load (c = 1.25) for the node and jump hash for the thread \
         (`docs/placement.md`); \"ring\" is a consistent-hash ring with virtual nodes, \
         \"HRW unweighted\" plain rendezvous hashing.\n"
    );
    for line in output.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            let _ = writeln!(md, "### {title}");
        } else {
            let _ = writeln!(md, "{line}");
        }
    }
    md.push('\n');
    let targets = match busiest_under_skew(output) {
        Some(rows) if !rows.is_empty() => {
            let worst = rows.iter().map(|(_, v)| *v).fold(0.0, f64::max);
            let measured = rows
                .iter()
                .map(|(nodes, v)| format!("{v:.2}× at {nodes} nodes"))
                .collect::<Vec<_>>()
                .join(", ");
            let verdict = if worst <= 1.25 {
                String::new()
            } else {
                format!("; worst {:.0}% over", (worst / 1.25 - 1.0) * 100.0)
            };
            vec![Target::new(
                "busiest node ≤ 1.25× the mean under Zipf(1.1) skew (HRW + bounded load, in-flight bound as the router runs it)",
                format!("{measured}{verdict}"),
                worst <= 1.25,
            )]
        }
        _ => vec![Target::new(
            "busiest node ≤ 1.25× the mean under skew",
            "the traffic table was not found in placement_bench's output",
            false,
        )],
    };
    Section {
        markdown: md,
        targets,
    }
}

/// `(nodes, busiest/mean)` from the last column of the traffic table (HRW +
/// bounded load with the bound on in-flight requests).
fn busiest_under_skew(output: &str) -> Option<Vec<(String, f64)>> {
    let start = output.find("## Traffic imbalance")?;
    let mut rows = Vec::new();
    for line in output[start..].lines().skip(1) {
        if line.starts_with("## ") {
            break;
        }
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let (Some(nodes), Some(last)) = (cells.first(), cells.last()) else {
            continue;
        };
        if let (Ok(_), Ok(value)) = (nodes.parse::<usize>(), last.parse::<f64>()) {
            rows.push(((*nodes).to_owned(), value));
        }
    }
    Some(rows)
}
