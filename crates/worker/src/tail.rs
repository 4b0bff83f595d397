//! What a tail shows: one [`TailEvent`] per invocation of a Worker — how it
//! ended, how long it took, its console lines and uncaught exceptions — and
//! the one way to print it, as JSON lines or pretty ([`TailFormat`]).
//!
//! The engine builds these, `isolane dev` prints them for its Workers, a
//! node streams them to `isolane tail`, which prints them the same way.
//! Pretty output prints every text that came from the tenant (or over the
//! wire) through [`Inert`]: control characters show escaped, one console
//! line is one printed line.

mod inert;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

pub use inert::Inert;

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
    let mut out = String::new();
    let _ = write!(
        out,
        "[{}] {} {} {} {:.1}ms cpu {:.1}ms",
        Inert(&event.worker),
        Inert(&event.method),
        Inert(&event.url),
        event.status,
        event.wall_ms,
        event.cpu_ms
    );
    if event.outcome != "ok" {
        let _ = write!(out, " ({})", Inert(&event.outcome));
    }
    out.push('\n');
    for line in &event.logs {
        push_line(&mut out, line);
    }
    for exception in &event.exceptions {
        push_exception(&mut out, exception);
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

/// A console line, indented, on one line (its newlines escaped).
fn push_line(out: &mut String, line: &LogLine) {
    let message = Inert(&line.message);
    let _ = match line.level.as_str() {
        "log" | "info" | "" => writeln!(out, "  {message}"),
        level => writeln!(out, "  ({}) {message}", Inert(level)),
    };
}

/// An exception on one line, then the Worker's frames, one a line; the
/// runtime's own (`isolane:…`) say nothing to its author.
fn push_exception(out: &mut String, exception: &Exception) {
    let _ = writeln!(
        out,
        "  ✘ {}: {}",
        Inert(&exception.name),
        Inert(&exception.message)
    );
    for frame in frames(exception) {
        if !frame.contains("(isolane:") && !frame.trim_start().starts_with("at isolane:") {
            let _ = writeln!(out, "    {}", Inert(frame.trim_start()));
        }
    }
}

/// The lines of the stack after its head (`TypeError: it broke`). The head
/// spans as many lines as the message does: those lines are the message's,
/// not frames, and printing them would undo its escaped newlines.
fn frames(exception: &Exception) -> impl Iterator<Item = &str> {
    let stack = exception.stack.as_str();
    let message = exception.message.as_str();
    let after_message = stack
        .find(message)
        .map_or(stack, |at| &stack[at + message.len()..]);
    after_message.lines().skip(1)
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
    fn pretty_has_the_head_then_the_lines_one_a_line_and_the_drop_note() {
        let text = TailFormat::Pretty.render(&event());
        assert_eq!(
            text,
            "[default/hello] GET /path?q=1 200 1.2ms cpu 0.3ms\n  (warn) a\\nb\n  (3 lines dropped: over the log budget)\n"
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
    fn pretty_prints_the_tenant_s_control_characters_escaped() {
        let attack = "\x1b[2J\x1b]0;pwned\x07\rfake";
        let mut e = event();
        e.method = format!("GET{attack}");
        e.url = format!("/{attack}\u{202e}");
        e.outcome = format!("exception{attack}");
        e.logs[0].message = format!("{attack}\n[other/ns] GET / 200 1.0ms cpu 0.1ms");
        e.exceptions.push(Exception {
            name: format!("Error{attack}"),
            message: attack.into(),
            stack: format!("Error: {attack}\n    at fetch ({attack})"),
            timestamp_ms: 1,
        });
        let text = TailFormat::Pretty.render(&e);
        for c in text.chars() {
            assert!(
                c == '\n' || c == '✘' || (c.is_ascii() && !c.is_ascii_control()),
                "{c:?} printed raw in {text:?}"
            );
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(
            lines[1],
            "  (warn) \\x1b[2J\\x1b]0;pwned\\x07\\rfake\\n[other/ns] GET / 200 1.0ms cpu 0.1ms"
        );
        assert_eq!(lines[3], "    at fetch (\\x1b[2J\\x1b]0;pwned\\x07\\rfake)");
    }

    #[test]
    fn pretty_prints_no_line_of_a_multi_line_message_as_a_frame() {
        let mut e = event();
        e.logs.clear();
        e.dropped_lines = 0;
        e.exceptions.push(Exception {
            name: "Error".into(),
            message: "one\n    at forged (worker:other/ns:1:1)\nthree".into(),
            stack: "Error: one\n    at forged (worker:other/ns:1:1)\nthree\n    at Object.fetch (worker:dev/hello:5:32)".into(),
            timestamp_ms: 1,
        });
        let text = TailFormat::Pretty.render(&e);
        assert!(
            text.ends_with(
                "  ✘ Error: one\\n    at forged (worker:other/ns:1:1)\\nthree\n    at Object.fetch (worker:dev/hello:5:32)\n"
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
