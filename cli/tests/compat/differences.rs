//! `compat/differences.md`: the answers allowed to differ, each with a reason.
//!
//! Its table has one row per difference: app, request (or `*` for every
//! request of the app), kind (`pending: <API>` while an API is missing, or
//! `deliberate` for a difference Isolane keeps) and the reason.

use std::path::Path;

#[derive(Debug)]
pub struct Difference {
    pub app: String,
    pub request: String,
    pub kind: String,
    /// Set when a request it covers differed in this run.
    pub used: std::cell::Cell<bool>,
}

impl Difference {
    pub fn covers(&self, app: &str, request: &str) -> bool {
        self.app == app && (self.request == "*" || self.request == request)
    }
}

/// The rows of the table in `file`.
pub fn load(file: &Path) -> Vec<Difference> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some(inner) = line.trim().strip_prefix('|') else {
            continue;
        };
        let cells: Vec<&str> = inner
            .trim_end_matches('|')
            .split('|')
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        if cells
            .first()
            .is_some_and(|c| *c == "app" || c.starts_with("---"))
        {
            continue;
        }
        let at = format!("{}:{}", file.display(), number + 1);
        assert!(
            cells.len() == 4 && cells.iter().all(|c| !c.is_empty()),
            "{at}: a row is | app | request | kind | reason |"
        );
        assert!(
            cells[2] == "deliberate" || cells[2].starts_with("pending: "),
            "{at}: kind is `pending: <API>` or `deliberate`, not {:?}",
            cells[2]
        );
        rows.push(Difference {
            app: cells[0].to_owned(),
            request: cells[1].to_owned(),
            kind: cells[2].to_owned(),
            used: std::cell::Cell::new(false),
        });
    }
    rows
}
