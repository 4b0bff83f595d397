//! What a tail shows: one [`TailEvent`] per invocation of a Worker — how it
//! ended, how long it took, its console lines and uncaught exceptions — and
//! the one way to print it, as JSON lines or pretty ([`TailFormat`]).
//!
//! The engine builds these, `isolane dev` prints them for its Workers, a
//! node streams them to `isolane tail`, which prints them the same way.

use serde::{Deserialize, Serialize};

/// One invocation of a Worker, as a tail shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailEvent {
    /// `namespace/name`.
    pub worker: String,
    pub namespace: String,
    pub revision: String,
    /// The node that ran it (set by the node; empty in the engine).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    pub thread: usize,
    pub request_id: String,
    /// The outcome's label (`ok`, `exception`, `cpu_limit`, …).
    pub outcome: String,
    /// The HTTP status answered (the Worker's, or the engine's for a limit).
    pub status: u16,
    pub method: String,
    /// The path and query of the request.
    pub url: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
    pub wall_ms: f64,
    pub cpu_ms: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<LogLine>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceptions: Vec<Exception>,
    /// Console lines over the Worker's log budget, dropped (see
    /// docs/tail.md): counted here and in a metric, never shown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One console line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    /// `log`, `info`, `debug`, `warn` or `error`.
    pub level: String,
    pub message: String,
    pub timestamp_ms: u64,
}

/// An exception the Worker did not catch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exception {
    pub name: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stack: String,
    pub timestamp_ms: u64,
}

impl Exception {
    /// From a V8 message (`Uncaught TypeError: x is not a function`) and
    /// its stack: the name is the error's class when the message names one.
    pub fn from_message(message: &str, stack: &str, timestamp_ms: u64) -> Self {
        let text = message.strip_prefix("Uncaught ").unwrap_or(message);
        let (name, rest) = match text.split_once(": ") {
            Some((name, rest))
                if !name.is_empty()
                    && name.len() <= 64
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                (name.to_owned(), rest.to_owned())
            }
            _ => ("Error".to_owned(), text.to_owned()),
        };
        Self {
            name,
            message: rest,
            stack: stack.to_owned(),
            timestamp_ms,
        }
    }
}

/// How a tail prints its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TailFormat {
    /// `[worker] GET /path 200 1.2ms cpu 0.3ms`, then its lines, indented.
    #[default]
    Pretty,
    /// One JSON object per line ([`TailEvent`]'s fields).
    Json,
}

/// `--format` / `--tail-format` values.
#[derive(Debug, thiserror::Error)]
#[error("unknown tail format {0:?}: expected pretty or json")]
pub struct ParseTailFormatError(String);

impl std::str::FromStr for TailFormat {
    type Err = ParseTailFormatError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pretty" => Ok(TailFormat::Pretty),
            "json" => Ok(TailFormat::Json),
            other => Err(ParseTailFormatError(other.to_owned())),
        }
    }
}

impl TailFormat {
    /// `event` as this format prints it, ending with a newline.
    pub fn render(self, event: &TailEvent) -> String {
        match self {
            TailFormat::Json => {
                let mut line = serde_json::to_string(event).unwrap_or_default();
                line.push('\n');
                line
            }
            TailFormat::Pretty => pretty(event),
        }
    }

    /// The note a tail prints when it fell behind and `dropped` events were
    /// dropped (its reader was too slow; requests never wait on a tail).
    pub fn dropped(self, dropped: u64) -> String {
        match self {
            TailFormat::Json => format!("{}\n", serde_json::json!({ "dropped_events": dropped })),
            TailFormat::Pretty => format!("(tail fell behind: dropped {dropped} events)\n"),
        }
    }
}

fn pretty(event: &TailEvent) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = write!(
        out,
        "[{}] {} {} {} {:.1}ms cpu {:.1}ms",
        event.worker, event.method, event.url, event.status, event.wall_ms, event.cpu_ms
    );
    if event.outcome != "ok" {
        let _ = write!(out, " ({})", event.outcome);
    }
    out.push('\n');
    for line in &event.logs {
        let level = match line.level.as_str() {
            "log" | "info" => "",
            other => other,
        };
        let prefix = if level.is_empty() {
            "  ".to_owned()
        } else {
            format!("  ({level}) ")
        };
        for (i, text) in line.message.split('\n').enumerate() {
            out.push_str(if i == 0 { &prefix } else { "    " });
            out.push_str(text);
            out.push('\n');
        }
    }
    for exception in &event.exceptions {
        let _ = writeln!(out, "  ✘ {}: {}", exception.name, exception.message);
        // The Worker's frames; the runtime's own (`isolane:…`) say nothing
        // to its author.
        for frame in exception.stack.lines().skip(1) {
            if !frame.contains("(isolane:") && !frame.trim_start().starts_with("at isolane:") {
                let _ = writeln!(out, "    {}", frame.trim_start());
            }
        }
    }
    if event.dropped_lines > 0 {
        let _ = writeln!(
            out,
            "  ({} lines dropped: over the log budget)",
            event.dropped_lines
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> TailEvent {
        TailEvent {
            worker: "default/hello".into(),
            namespace: "default".into(),
            revision: "abc".into(),
            node: String::new(),
            thread: 0,
            request_id: "0-1".into(),
            outcome: "ok".into(),
            status: 200,
            method: "GET".into(),
            url: "/path?q=1".into(),
            timestamp_ms: 1,
            wall_ms: 1.24,
            cpu_ms: 0.31,
            logs: vec![LogLine {
                level: "warn".into(),
                message: "a\nb".into(),
                timestamp_ms: 1,
            }],
            exceptions: vec![],
            dropped_lines: 3,
        }
    }

    #[test]
    fn pretty_has_the_head_then_the_lines_and_the_drop_note() {
        let text = TailFormat::Pretty.render(&event());
        assert_eq!(
            text,
            "[default/hello] GET /path?q=1 200 1.2ms cpu 0.3ms\n  (warn) a\n    b\n  (3 lines dropped: over the log budget)\n"
        );
    }

    #[test]
    fn pretty_shows_the_worker_s_frames_only() {
        let mut e = event();
        e.logs.clear();
        e.dropped_lines = 0;
        e.exceptions.push(Exception {
            name: "TypeError".into(),
            message: "it broke".into(),
            stack: "TypeError: it broke\n    at Object.fetch (worker:dev/hello:5:32)\n    at runRequest (isolane:19_worker.js:373:49)".into(),
            timestamp_ms: 1,
        });
        let text = TailFormat::Pretty.render(&e);
        assert!(
            text.ends_with(
                "  ✘ TypeError: it broke\n    at Object.fetch (worker:dev/hello:5:32)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn json_round_trips() {
        let text = TailFormat::Json.render(&event());
        assert!(text.ends_with('\n') && !text.trim_end().contains('\n'));
        let back: TailEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back, event());
    }

    #[test]
    fn exception_names_come_from_the_message() {
        let e = Exception::from_message("Uncaught TypeError: x is not a function", "", 0);
        assert_eq!(
            (e.name.as_str(), e.message.as_str()),
            ("TypeError", "x is not a function")
        );
        let e = Exception::from_message("boom: with spaces: here", "", 0);
        assert_eq!(
            (e.name.as_str(), e.message.as_str()),
            ("boom", "with spaces: here")
        );
        let e = Exception::from_message("just text", "", 0);
        assert_eq!(
            (e.name.as_str(), e.message.as_str()),
            ("Error", "just text")
        );
    }
}
