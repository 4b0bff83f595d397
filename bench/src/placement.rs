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
         bounded load (c = 1.25; a lone request, one whose Worker has no other in flight, \
         stays on its first choice up to 2c) for the node and jump hash for the thread \
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
            let worst = rows.iter().map(|row| row.bounded).fold(0.0, f64::max);
            let measured = rows
                .iter()
                .map(|row| format!("{:.2}× at {} nodes", row.bounded, row.nodes))
                .collect::<Vec<_>>()
                .join(", ");
            let lone = rows
                .iter()
                .map(|row| format!("{:.2}×", row.lone))
                .collect::<Vec<_>>()
                .join(", ");
            let verdict = if worst <= 1.25 {
                String::new()
            } else {
                format!("; worst {:.0}% over", (worst / 1.25 - 1.0) * 100.0)
            };
            vec![Target::new(
                "busiest node ≤ 1.25× the mean under Zipf(1.1) skew (HRW + bounded load on in-flight requests, every request bounded: what c = 1.25 promises)",
                format!(
                    "{measured}{verdict}; the router's rule, which keeps a lone request on its \
                     first choice up to 2c: {lone}"
                ),
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

/// One row of the traffic table: the busiest node's requests over the mean
/// under bounded load on in-flight requests.
struct Skew {
    nodes: String,
    /// Every request bounded (the next-to-last column).
    bounded: f64,
    /// Lone requests kept home, as the router runs it (the last column).
    lone: f64,
}

/// The rows of the traffic table's last two columns.
fn busiest_under_skew(output: &str) -> Option<Vec<Skew>> {
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
        let [nodes, .., bounded, lone] = cells.as_slice() else {
            continue;
        };
        if let (Ok(_), Ok(bounded), Ok(lone)) = (
            nodes.parse::<usize>(),
            bounded.parse::<f64>(),
            lone.parse::<f64>(),
        ) {
            rows.push(Skew {
                nodes: (*nodes).to_owned(),
                bounded,
                lone,
            });
        }
    }
    Some(rows)
}
