//! The lines of etcd's and kube-apiserver's logs that say a request was
//! slow or refused, printed when a test fails: a control plane that lagged
//! under load then shows in the failing test's own output, not only in the
//! kept log directory (which a CI run may not keep).

use std::path::Path;

/// Substrings that mark a slow or refused request: etcd's warnings
/// ("apply request took too long", "slow fdatasync", a late heartbeat) and
/// kube-apiserver's request traces (`Trace[…]`, written for requests over
/// their latency threshold), timeouts and rejections.
const MARKERS: &[&str] = &[
    "took too long",
    "slow fdatasync",
    "heartbeat on time",
    "Trace[",
    "imeout",
    "Too many requests",
    "TooManyRequests",
    "too large resource version",
];

/// The last `max` lines of `log` that carry one of [`MARKERS`], or a note
/// that there are none (or that the log could not be read).
pub(crate) fn slow_lines(log: &Path, max: usize) -> String {
    let text = match std::fs::read(log) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => return format!("(could not read {}: {error})", log.display()),
    };
    let marked: Vec<&str> = text
        .lines()
        .filter(|line| MARKERS.iter().any(|marker| line.contains(marker)))
        .collect();
    if marked.is_empty() {
        return "(no slow or refused requests logged)".to_owned();
    }
    let skipped = marked.len().saturating_sub(max);
    let mut out = String::new();
    if skipped > 0 {
        out.push_str(&format!("({skipped} earlier lines like these left out)\n"));
    }
    out.push_str(&marked[skipped..].join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_marked_lines_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("etcd.log");
        let mut text = String::from("{\"msg\":\"ready to serve\"}\n");
        for i in 0..5 {
            text.push_str(&format!(
                "{{\"msg\":\"apply request took too long\",\"n\":{i}}}\n"
            ));
        }
        text.push_str("I1124 trace.go:236] Trace[7]: \"List\" (total time: 1500ms)\n");
        std::fs::write(&log, text).expect("write");
        let lines = slow_lines(&log, 3);
        assert!(
            lines.starts_with("(3 earlier lines like these left out)"),
            "{lines}"
        );
        assert!(
            lines.contains("\"n\":3") && lines.contains("\"n\":4") && lines.contains("Trace[7]")
        );
        assert!(!lines.contains("ready to serve") && !lines.contains("\"n\":2"));
    }

    #[test]
    fn says_when_nothing_was_slow_or_the_log_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("kube-apiserver.log");
        std::fs::write(&log, "I1124 serving securely\n").expect("write");
        assert_eq!(slow_lines(&log, 10), "(no slow or refused requests logged)");
        assert!(slow_lines(&dir.path().join("none.log"), 10).starts_with("(could not read"));
    }
}
