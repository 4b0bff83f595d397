//! Compatibility settings: a Worker's `compatibilityDate` and
//! `compatibilityFlags`, with workerd's names and rules
//! (`src/workerd/io/compatibility-date.capnp`), and what they turn on.
//!
//! A date turns on every behaviour workerd enables from that date; a flag
//! turns one on (`nodejs_compat`) or off (`no_nodejs_compat`) whatever the
//! date. Only the flags in [`FLAGS`] are honoured; any other is refused with
//! the list of known ones, so a Worker never runs believing it has a
//! behaviour it does not. docs/nodejs.md lists them for users.

use std::fmt;

use thiserror::Error;

/// The date from which workerd turns Node.js compatibility (and its v2
/// form) on without a flag.
pub const NODE_COMPAT_DATE: Date = Date(2026, 8, 4);

/// The date after which `nodejs_compat` implies `nodejs_compat_v2`.
pub const NODE_COMPAT_V2_IMPLIED_DATE: Date = Date(2024, 9, 23);

/// The date from which Node.js compatibility implies
/// `nodejs_compat_populate_process_env`.
pub const PROCESS_ENV_IMPLIED_DATE: Date = Date(2025, 4, 1);

/// The date from which workerd lets a Worker's top-level code generate
/// code from strings (`allow_eval_during_startup`).
pub const EVAL_AT_STARTUP_DATE: Date = Date(2025, 6, 1);

/// The date from which workerd exposes `MessageChannel` and `MessagePort`
/// as globals (`expose_global_message_channel`).
pub const MESSAGE_CHANNEL_DATE: Date = Date(2025, 8, 15);
/// From this date `node:http` (when its module gate is open) has its
/// server (`enable_nodejs_http_server_modules`, implied by
/// `enable_nodejs_http_modules` after it in workerd).
pub const HTTP_SERVER_IMPLIED_DATE: Date = Date(2025, 9, 1);

/// From this date Node.js compatibility implies Node's timers as the
/// globals (`enable_nodejs_global_timers`): `setTimeout` and `setInterval`
/// return `Timeout` objects.
pub const GLOBAL_TIMERS_IMPLIED_DATE: Date = Date(2026, 2, 10);

/// From this date a workflow instance that `run()` ends by a
/// `NonRetryableError` reports that error's own name and message
/// (`workflows_preserve_non_retryable_error_message`).
pub const PRESERVE_NON_RETRYABLE_DATE: Date = Date(2026, 5, 14);

/// From this date a client's WebSocket close is answered by the runtime
/// with the same code and reason (`web_socket_auto_reply_to_close`); before
/// it the Worker's own `close()` is the reply (docs/websockets.md).
pub const WEB_SOCKET_AUTO_REPLY_DATE: Date = Date(2026, 4, 7);

/// What a Worker's settings turn on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NodeCompat {
    /// No Node.js modules: `node:` imports fail to load (today's default).
    #[default]
    Off,
    /// Only `node:async_hooks` (`nodejs_als`).
    Als,
    /// `node:` modules, imported with their `node:` prefix only
    /// (`nodejs_compat` before 2024-09-23).
    V1,
    /// `node:` modules with or without the prefix, and the `Buffer` global
    /// (`nodejs_compat_v2`, implied by `nodejs_compat` from 2024-09-23, on
    /// by default from 2026-08-04).
    V2,
}

impl NodeCompat {
    /// Whether `node:` modules other than `async_hooks` load.
    pub fn modules(self) -> bool {
        matches!(self, NodeCompat::V1 | NodeCompat::V2)
    }

    /// Whether Node's built-ins may be named without `node:` (`buffer`).
    pub fn bare_names(self) -> bool {
        self == NodeCompat::V2
    }

    /// Whether `node:async_hooks` loads.
    pub fn async_hooks(self) -> bool {
        self != NodeCompat::Off
    }
}

/// A compatibility date, `YYYY-MM-DD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub u16, pub u8, pub u8);

impl Date {
    /// Parses `YYYY-MM-DD` (workerd's form).
    pub fn parse(text: &str) -> Result<Self, CompatError> {
        let invalid = || CompatError::InvalidDate {
            date: text.to_owned(),
        };
        let mut parts = text.split('-');
        let (Some(y), Some(m), Some(d), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(y, 4) || !digits(m, 2) || !digits(d, 2) {
            return Err(invalid());
        }
        let (Ok(year), Ok(month), Ok(day)) = (y.parse(), m.parse(), d.parse()) else {
            return Err(invalid());
        };
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return Err(invalid());
        }
        Ok(Date(year, month, day))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.0, self.1, self.2)
    }
}

/// A behaviour a flag switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feature {
    NodeCompat,
    NodeCompatV2,
    NodeAls,
    ProcessEnv,
    EvalAtStartup,
    MessageChannel,
    HttpServer,
    GlobalTimers,
    PreserveNonRetryable,
    WebSocketAutoReply,
    /// One of [`MODULE_GATES`], by index.
    Module(usize),
}

/// Every flag honoured: (name, the behaviour, on or off).
pub const FLAGS: &[(&str, &str)] = &[
    (
        "nodejs_compat",
        "Node.js modules (node:buffer, node:events, ...)",
    ),
    ("no_nodejs_compat", "turns nodejs_compat off"),
    (
        "nodejs_compat_v2",
        "nodejs_compat, with bare names (buffer) and the Buffer global",
    ),
    ("no_nodejs_compat_v2", "turns nodejs_compat_v2 off"),
    ("nodejs_als", "node:async_hooks alone"),
    ("no_nodejs_als", "turns nodejs_als off"),
    (
        "nodejs_compat_populate_process_env",
        "process.env holds the Worker's text bindings",
    ),
    (
        "nodejs_compat_do_not_populate_process_env",
        "turns nodejs_compat_populate_process_env off",
    ),
    (
        "allow_eval_during_startup",
        "eval and new Function in the Worker's top-level code (never in requests)",
    ),
    (
        "disallow_eval_during_startup",
        "turns allow_eval_during_startup off",
    ),
    (
        "expose_global_message_channel",
        "the MessageChannel and MessagePort globals",
    ),
    (
        "no_expose_global_message_channel",
        "turns expose_global_message_channel off",
    ),
    (
        "enable_nodejs_http_server_modules",
        "node:http's server (createServer), reached through cloudflare:node's httpServerHandler",
    ),
    (
        "disable_nodejs_http_server_modules",
        "turns enable_nodejs_http_server_modules off",
    ),
    (
        "enable_nodejs_global_timers",
        "node:timers' setTimeout, setInterval, clearTimeout and clearInterval as the globals (Timeout objects)",
    ),
    (
        "no_nodejs_global_timers",
        "turns enable_nodejs_global_timers off",
    ),
    (
        "workflows_preserve_non_retryable_error_message",
        "a workflow instance ended by a NonRetryableError reports its own name and message",
    ),
    (
        "workflows_replace_non_retryable_error_message",
        "turns workflows_preserve_non_retryable_error_message off",
    ),
    (
        "web_socket_auto_reply_to_close",
        "a peer's WebSocket close is answered at once with its own code; the close event sees readyState CLOSED",
    ),
    (
        "web_socket_manual_reply_to_close",
        "turns web_socket_auto_reply_to_close off: the Worker's close() answers a peer's close",
    ),
];

/// A Node.js module (or a few) that workerd loads only with a flag of its
/// own, which Node.js compatibility implies from a date
/// (`impliedByAfterDate(name = "nodeJsCompat", …)` in workerd's
/// compatibility-date.capnp).
pub struct ModuleGate {
    /// The flag that turns the modules on.
    pub on: &'static str,
    /// The flag that turns them off.
    pub off: &'static str,
    /// From this date Node.js compatibility turns them on.
    pub since: Date,
    /// The modules (`node:` names without the prefix).
    pub modules: &'static [&'static str],
}

/// The index of `node:http`'s gate in [`MODULE_GATES`].
const HTTP_GATE: usize = 0;

/// Every module gate, as workerd has them.
pub const MODULE_GATES: [ModuleGate; 22] = [
    ModuleGate {
        on: "enable_nodejs_http_modules",
        off: "disable_nodejs_http_modules",
        since: Date(2025, 8, 15),
        modules: &[
            "http",
            "https",
            "_http_agent",
            "_http_client",
            "_http_common",
            "_http_incoming",
            "_http_outgoing",
            "_http_server",
        ],
    },
    ModuleGate {
        on: "enable_nodejs_http2_module",
        off: "disable_nodejs_http2_module",
        since: Date(2025, 9, 1),
        modules: &["http2"],
    },
    ModuleGate {
        on: "enable_nodejs_fs_module",
        off: "disable_nodejs_fs_module",
        since: Date(2025, 9, 15),
        modules: &["fs", "fs/promises"],
    },
    ModuleGate {
        on: "enable_nodejs_os_module",
        off: "disable_nodejs_os_module",
        since: Date(2025, 9, 15),
        modules: &["os"],
    },
    ModuleGate {
        on: "enable_nodejs_console_module",
        off: "disable_nodejs_console_module",
        since: Date(2025, 9, 21),
        modules: &["console"],
    },
    ModuleGate {
        on: "enable_nodejs_vm_module",
        off: "disable_nodejs_vm_module",
        since: Date(2025, 10, 1),
        modules: &["vm"],
    },
    ModuleGate {
        on: "enable_nodejs_cluster_module",
        off: "disable_nodejs_cluster_module",
        since: Date(2025, 12, 4),
        modules: &["cluster"],
    },
    ModuleGate {
        on: "enable_nodejs_domain_module",
        off: "disable_nodejs_domain_module",
        since: Date(2025, 12, 4),
        modules: &["domain"],
    },
    ModuleGate {
        on: "enable_nodejs_punycode_module",
        off: "disable_nodejs_punycode_module",
        since: Date(2025, 12, 4),
        modules: &["punycode"],
    },
    ModuleGate {
        on: "enable_nodejs_trace_events_module",
        off: "disable_nodejs_trace_events_module",
        since: Date(2025, 12, 4),
        modules: &["trace_events"],
    },
    ModuleGate {
        on: "enable_nodejs_wasi_module",
        off: "disable_nodejs_wasi_module",
        since: Date(2025, 12, 4),
        modules: &["wasi"],
    },
    ModuleGate {
        on: "enable_nodejs_stream_wrap_module",
        off: "disable_nodejs_stream_wrap_module",
        since: Date(2026, 1, 29),
        modules: &["_stream_wrap"],
    },
    ModuleGate {
        on: "enable_nodejs_dgram_module",
        off: "disable_nodejs_dgram_module",
        since: Date(2026, 1, 29),
        modules: &["dgram"],
    },
    ModuleGate {
        on: "enable_nodejs_inspector_module",
        off: "disable_nodejs_inspector_module",
        since: Date(2026, 1, 29),
        modules: &["inspector", "inspector/promises"],
    },
    ModuleGate {
        on: "enable_nodejs_sqlite_module",
        off: "disable_nodejs_sqlite_module",
        since: Date(2026, 1, 29),
        modules: &["sqlite"],
    },
    ModuleGate {
        on: "enable_nodejs_child_process_module",
        off: "disable_nodejs_child_process_module",
        since: Date(2026, 3, 17),
        modules: &["child_process"],
    },
    ModuleGate {
        on: "enable_nodejs_perf_hooks_module",
        off: "disable_nodejs_perf_hooks_module",
        since: Date(2026, 3, 17),
        modules: &["perf_hooks"],
    },
    ModuleGate {
        on: "enable_nodejs_readline_module",
        off: "disable_nodejs_readline_module",
        since: Date(2026, 3, 17),
        modules: &["readline", "readline/promises"],
    },
    ModuleGate {
        on: "enable_nodejs_repl_module",
        off: "disable_nodejs_repl_module",
        since: Date(2026, 3, 17),
        modules: &["repl"],
    },
    ModuleGate {
        on: "enable_nodejs_tty_module",
        off: "disable_nodejs_tty_module",
        since: Date(2026, 3, 17),
        modules: &["tty"],
    },
    ModuleGate {
        on: "enable_nodejs_v8_module",
        off: "disable_nodejs_v8_module",
        since: Date(2026, 3, 17),
        modules: &["v8"],
    },
    ModuleGate {
        on: "enable_nodejs_worker_threads_module",
        off: "disable_nodejs_worker_threads_module",
        since: Date(2026, 3, 17),
        modules: &["worker_threads"],
    },
];

fn flag(name: &str) -> Option<(Feature, bool)> {
    Some(match name {
        "nodejs_compat" => (Feature::NodeCompat, true),
        "no_nodejs_compat" => (Feature::NodeCompat, false),
        "nodejs_compat_v2" => (Feature::NodeCompatV2, true),
        "no_nodejs_compat_v2" => (Feature::NodeCompatV2, false),
        "nodejs_als" => (Feature::NodeAls, true),
        "no_nodejs_als" => (Feature::NodeAls, false),
        "nodejs_compat_populate_process_env" => (Feature::ProcessEnv, true),
        "nodejs_compat_do_not_populate_process_env" => (Feature::ProcessEnv, false),
        "allow_eval_during_startup" => (Feature::EvalAtStartup, true),
        "disallow_eval_during_startup" => (Feature::EvalAtStartup, false),
        "expose_global_message_channel" => (Feature::MessageChannel, true),
        "no_expose_global_message_channel" => (Feature::MessageChannel, false),
        "enable_nodejs_http_server_modules" => (Feature::HttpServer, true),
        "disable_nodejs_http_server_modules" => (Feature::HttpServer, false),
        "enable_nodejs_global_timers" => (Feature::GlobalTimers, true),
        "no_nodejs_global_timers" => (Feature::GlobalTimers, false),
        "workflows_preserve_non_retryable_error_message" => (Feature::PreserveNonRetryable, true),
        "workflows_replace_non_retryable_error_message" => (Feature::PreserveNonRetryable, false),
        "web_socket_auto_reply_to_close" => (Feature::WebSocketAutoReply, true),
        "web_socket_manual_reply_to_close" => (Feature::WebSocketAutoReply, false),
        _ => {
            return MODULE_GATES.iter().enumerate().find_map(|(i, gate)| {
                (gate.on == name)
                    .then_some((Feature::Module(i), true))
                    .or((gate.off == name).then_some((Feature::Module(i), false)))
            });
        }
    })
}

/// Why compatibility settings are refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CompatError {
    #[error("compatibility date {date:?} is not a date of the form YYYY-MM-DD")]
    InvalidDate { date: String },
    #[error("unknown compatibility flag {flag:?}; known flags: {}", known())]
    UnknownFlag { flag: String },
    #[error("compatibility flags {on:?} and {off:?} contradict each other")]
    Contradictory { on: String, off: String },
}

impl CompatError {
    /// A bounded label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            CompatError::InvalidDate { .. } => "invalid_date",
            CompatError::UnknownFlag { .. } => "unknown_flag",
            CompatError::Contradictory { .. } => "contradictory_flags",
        }
    }
}

fn known() -> String {
    FLAGS
        .iter()
        .map(|(name, _)| *name)
        .chain(MODULE_GATES.iter().flat_map(|gate| [gate.on, gate.off]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Everything a Worker's compatibility date and flags turn on, as workerd
/// decides it ([`Compat::from_settings`]). The engine takes this one value;
/// a new flag is one field here and the code that reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Compat {
    /// Node.js modules and globals.
    pub node: NodeCompat,
    /// Whether `process.env` holds the Worker's text bindings: with Node.js
    /// compatibility on, `nodejs_compat_populate_process_env` or a date from
    /// 2025-04-01 (workerd's `populateProcessEnv`).
    pub process_env: bool,
    /// Whether the Worker's top-level code may use `eval` and `new
    /// Function` (requests never may): `allow_eval_during_startup`, on from
    /// 2025-06-01.
    pub eval_at_startup: bool,
    /// Whether `MessageChannel` and `MessagePort` are globals:
    /// `expose_global_message_channel`, on from 2025-08-15.
    pub message_channel: bool,
    /// Whether `node:http` has its server: `enable_nodejs_http_server_modules`,
    /// implied by `node:http`'s own gate from 2025-09-01 (workerd's rule).
    pub http_server: bool,
    /// Whether the timer globals are `node:timers`' (`setTimeout` returns
    /// a `Timeout`): `enable_nodejs_global_timers`, implied by Node.js
    /// compatibility from 2026-02-10 (workerd's rule).
    pub global_timers: bool,
    /// Whether a workflow instance that `run()` ends by a
    /// `NonRetryableError` reports that error's name and message, not
    /// `WorkflowFatalError`'s: `workflows_preserve_non_retryable_error_message`,
    /// on from 2026-05-14 (docs/workflows.md).
    pub preserve_non_retryable: bool,
    /// Whether a peer's WebSocket close is answered by the runtime at once
    /// (the close event then sees `readyState` CLOSED), not left to the
    /// Worker's own `close()` (CLOSING until then):
    /// `web_socket_auto_reply_to_close`, on from 2026-04-07.
    pub web_socket_auto_reply: bool,
    /// Which [`MODULE_GATES`] are open, by index (with Node.js
    /// compatibility on: its flag, or a date from the gate's).
    pub module_gates: [bool; MODULE_GATES.len()],
}

impl Compat {
    /// Whether Node built-in `name` (without `node:`) may load as far as
    /// its own gate goes: `Err` names the flag that would open it.
    pub fn module_gate(&self, name: &str) -> Result<(), &'static ModuleGate> {
        match MODULE_GATES
            .iter()
            .position(|gate| gate.modules.contains(&name))
        {
            Some(i) if !self.module_gates[i] => Err(&MODULE_GATES[i]),
            _ => Ok(()),
        }
    }

    /// Node.js compatibility `node` with every module gate open: what a
    /// Worker of today's date gets (tests and embedders that set it).
    pub fn node(node: NodeCompat) -> Self {
        Self {
            node,
            module_gates: [true; MODULE_GATES.len()],
            ..Self::default()
        }
    }
}

/// What `date` (none: before every date) and `flags` turn on for Node.js
/// compatibility; the same errors as [`Compat::from_settings`].
pub fn resolve(date: Option<&str>, flags: &[String]) -> Result<NodeCompat, CompatError> {
    Compat::from_settings(date, flags).map(|c| c.node)
}

impl Compat {
    /// What `date` (none: before every date) and `flags` turn on; an
    /// unknown or contradictory flag, or a malformed date, is an error.
    pub fn from_settings(date: Option<&str>, flags: &[String]) -> Result<Self, CompatError> {
        let date = date.map(Date::parse).transpose()?;
        let set = explicit_flags(flags)?;
        let explicit = |feature| {
            set.iter()
                .find(|(f, _, _)| *f == feature)
                .map(|(_, on, _)| *on)
        };
        let from = |since: Date| date.is_some_and(|d| d >= since);
        let node = explicit(Feature::NodeCompat).unwrap_or(from(NODE_COMPAT_DATE));
        let v2 = explicit(Feature::NodeCompatV2)
            .unwrap_or(from(NODE_COMPAT_DATE) || (node && from(NODE_COMPAT_V2_IMPLIED_DATE)));
        let als = explicit(Feature::NodeAls).unwrap_or(false);
        let node_compat = if v2 {
            NodeCompat::V2
        } else if node {
            NodeCompat::V1
        } else if als {
            NodeCompat::Als
        } else {
            NodeCompat::Off
        };
        let module_gates: [bool; MODULE_GATES.len()] = std::array::from_fn(|i| {
            node_compat.modules()
                && explicit(Feature::Module(i)).unwrap_or(from(MODULE_GATES[i].since))
        });
        Ok(Self {
            node: node_compat,
            process_env: node
                && explicit(Feature::ProcessEnv).unwrap_or(from(PROCESS_ENV_IMPLIED_DATE)),
            eval_at_startup: explicit(Feature::EvalAtStartup).unwrap_or(from(EVAL_AT_STARTUP_DATE)),
            message_channel: explicit(Feature::MessageChannel)
                .unwrap_or(from(MESSAGE_CHANNEL_DATE)),
            module_gates,
            http_server: module_gates[HTTP_GATE]
                && explicit(Feature::HttpServer).unwrap_or(from(HTTP_SERVER_IMPLIED_DATE)),
            global_timers: node_compat.modules()
                && explicit(Feature::GlobalTimers).unwrap_or(from(GLOBAL_TIMERS_IMPLIED_DATE)),
            preserve_non_retryable: explicit(Feature::PreserveNonRetryable)
                .unwrap_or(from(PRESERVE_NON_RETRYABLE_DATE)),
            web_socket_auto_reply: explicit(Feature::WebSocketAutoReply)
                .unwrap_or(from(WEB_SOCKET_AUTO_REPLY_DATE)),
        })
    }
}

/// The flags named, each with its feature and whether it turns it on; an
/// unknown flag, or two that contradict each other, is an error.
fn explicit_flags(flags: &[String]) -> Result<Vec<(Feature, bool, &str)>, CompatError> {
    let mut set: Vec<(Feature, bool, &str)> = Vec::with_capacity(flags.len());
    for name in flags {
        let Some((feature, on)) = flag(name) else {
            return Err(CompatError::UnknownFlag { flag: name.clone() });
        };
        if let Some((_, _, other)) = set.iter().find(|(f, o, _)| *f == feature && *o != on) {
            let (on, off) = if on {
                (name.as_str(), *other)
            } else {
                (*other, name.as_str())
            };
            return Err(CompatError::Contradictory {
                on: on.to_owned(),
                off: off.to_owned(),
            });
        }
        set.push((feature, on, name));
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_date_turns_node_compat_on_from_2026_08_04() {
        assert_eq!(resolve(None, &[]), Ok(NodeCompat::Off));
        assert_eq!(resolve(Some("2026-08-03"), &[]), Ok(NodeCompat::Off));
        assert_eq!(resolve(Some("2026-08-04"), &[]), Ok(NodeCompat::V2));
        assert_eq!(
            resolve(Some("2026-09-01"), &flags(&["no_nodejs_compat_v2"])),
            Ok(NodeCompat::V1)
        );
        assert_eq!(
            resolve(
                Some("2026-09-01"),
                &flags(&["no_nodejs_compat", "no_nodejs_compat_v2"])
            ),
            Ok(NodeCompat::Off)
        );
    }

    fn eval_at_startup(date: Option<&str>, flags: &[String]) -> Result<bool, CompatError> {
        Compat::from_settings(date, flags).map(|c| c.eval_at_startup)
    }

    fn process_env(date: Option<&str>, flags: &[String]) -> Result<bool, CompatError> {
        Compat::from_settings(date, flags).map(|c| c.process_env)
    }

    #[test]
    fn message_channel_from_2025_08_15_or_by_flag() {
        let channel = |date, names: &[&str]| {
            Compat::from_settings(date, &flags(names)).map(|c| c.message_channel)
        };
        assert_eq!(channel(None, &[]), Ok(false));
        assert_eq!(channel(Some("2025-08-14"), &[]), Ok(false));
        assert_eq!(channel(Some("2025-08-15"), &[]), Ok(true));
        assert_eq!(
            channel(Some("2024-01-01"), &["expose_global_message_channel"]),
            Ok(true)
        );
        assert_eq!(
            channel(Some("2026-01-01"), &["no_expose_global_message_channel"]),
            Ok(false)
        );
    }

    #[test]
    fn preserve_non_retryable_from_2026_05_14_or_by_flag() {
        let preserve = |date, names: &[&str]| {
            Compat::from_settings(date, &flags(names)).map(|c| c.preserve_non_retryable)
        };
        assert_eq!(preserve(None, &[]), Ok(false));
        assert_eq!(preserve(Some("2026-05-13"), &[]), Ok(false));
        assert_eq!(preserve(Some("2026-05-14"), &[]), Ok(true));
        assert_eq!(
            preserve(
                Some("2025-01-01"),
                &["workflows_preserve_non_retryable_error_message"]
            ),
            Ok(true)
        );
        assert_eq!(
            preserve(
                Some("2026-06-01"),
                &["workflows_replace_non_retryable_error_message"]
            ),
            Ok(false)
        );
    }

    #[test]
    fn web_socket_auto_reply_from_2026_04_07_or_by_flag() {
        let auto = |date, names: &[&str]| {
            Compat::from_settings(date, &flags(names)).map(|c| c.web_socket_auto_reply)
        };
        assert_eq!(auto(None, &[]), Ok(false));
        assert_eq!(auto(Some("2026-04-06"), &[]), Ok(false));
        assert_eq!(auto(Some("2026-04-07"), &[]), Ok(true));
        assert_eq!(
            auto(Some("2025-01-01"), &["web_socket_auto_reply_to_close"]),
            Ok(true)
        );
        assert_eq!(
            auto(Some("2026-11-01"), &["web_socket_manual_reply_to_close"]),
            Ok(false)
        );
        assert!(matches!(
            auto(
                Some("2026-11-01"),
                &[
                    "web_socket_auto_reply_to_close",
                    "web_socket_manual_reply_to_close"
                ]
            ),
            Err(CompatError::Contradictory { .. })
        ));
    }

    #[test]
    fn global_timers_with_node_compat_from_2026_02_10_or_by_flag() {
        let timers = |date, names: &[&str]| {
            Compat::from_settings(date, &flags(names)).map(|c| c.global_timers)
        };
        assert_eq!(timers(Some("2026-02-10"), &[]), Ok(false));
        assert_eq!(timers(Some("2026-02-09"), &["nodejs_compat"]), Ok(false));
        assert_eq!(timers(Some("2026-02-10"), &["nodejs_compat"]), Ok(true));
        assert_eq!(timers(Some("2026-08-04"), &[]), Ok(true));
        assert_eq!(
            timers(
                Some("2025-01-01"),
                &["nodejs_compat", "enable_nodejs_global_timers"]
            ),
            Ok(true)
        );
        assert_eq!(
            timers(Some("2026-11-01"), &["no_nodejs_global_timers"]),
            Ok(false)
        );
        assert_eq!(
            timers(
                Some("2026-11-01"),
                &["no_nodejs_compat", "no_nodejs_compat_v2"]
            ),
            Ok(false)
        );
    }

    #[test]
    fn http_server_with_node_http_from_2025_09_01_or_by_flag() {
        assert!(MODULE_GATES[HTTP_GATE].modules.contains(&"http"));
        let server = |date, names: &[&str]| {
            Compat::from_settings(date, &flags(names)).map(|c| c.http_server)
        };
        assert_eq!(server(Some("2025-09-01"), &[]), Ok(false));
        assert_eq!(server(Some("2025-08-31"), &["nodejs_compat"]), Ok(false));
        assert_eq!(server(Some("2025-09-01"), &["nodejs_compat"]), Ok(true));
        assert_eq!(
            server(
                Some("2025-08-20"),
                &["nodejs_compat", "enable_nodejs_http_server_modules"]
            ),
            Ok(true)
        );
        assert_eq!(
            server(
                Some("2026-01-01"),
                &["nodejs_compat", "disable_nodejs_http_server_modules"]
            ),
            Ok(false)
        );
        // No server without node:http itself.
        assert_eq!(
            server(
                Some("2026-01-01"),
                &["nodejs_compat", "disable_nodejs_http_modules"]
            ),
            Ok(false)
        );
    }

    #[test]
    fn node_module_gates_open_with_node_compat_from_their_dates() {
        let gate = |date, names: &[&str], module| {
            Compat::from_settings(date, &flags(names)).map(|c| c.module_gate(module).is_ok())
        };
        let node = ["nodejs_compat"];
        assert_eq!(gate(Some("2025-09-14"), &node, "fs"), Ok(false));
        assert_eq!(gate(Some("2025-09-15"), &node, "fs"), Ok(true));
        assert_eq!(gate(Some("2025-09-15"), &node, "fs/promises"), Ok(true));
        assert_eq!(gate(Some("2025-08-14"), &node, "https"), Ok(false));
        assert_eq!(gate(Some("2025-08-15"), &node, "https"), Ok(true));
        assert_eq!(gate(Some("2025-09-30"), &node, "vm"), Ok(false));
        // Modules without a gate load whenever Node.js modules do.
        assert_eq!(gate(None, &node, "buffer"), Ok(true));
        // A gate's own flag opens it at any date, never without Node.js.
        let fs = ["nodejs_compat", "enable_nodejs_fs_module"];
        assert_eq!(gate(Some("2024-01-01"), &fs, "fs"), Ok(true));
        assert_eq!(
            gate(Some("2026-01-01"), &["enable_nodejs_fs_module"], "fs"),
            Ok(false)
        );
        let off = ["nodejs_compat", "disable_nodejs_fs_module"];
        assert_eq!(gate(Some("2026-01-01"), &off, "fs"), Ok(false));
        assert_eq!(gate(Some("2026-01-01"), &off, "os"), Ok(true));
        assert!(matches!(
            Compat::from_settings(
                None,
                &flags(&["enable_nodejs_fs_module", "disable_nodejs_fs_module"])
            ),
            Err(CompatError::Contradictory { .. })
        ));
        assert_eq!(
            Compat::from_settings(Some("2024-01-01"), &flags(&node))
                .map(|c| c.module_gate("fs").err().map(|g| g.on)),
            Ok(Some("enable_nodejs_fs_module"))
        );
    }

    #[test]
    fn eval_during_startup_from_2025_06_01_or_by_flag() {
        assert_eq!(eval_at_startup(None, &[]), Ok(false));
        assert_eq!(eval_at_startup(Some("2025-05-31"), &[]), Ok(false));
        assert_eq!(eval_at_startup(Some("2025-06-01"), &[]), Ok(true));
        let allow = flags(&["allow_eval_during_startup"]);
        assert_eq!(eval_at_startup(Some("2024-01-01"), &allow), Ok(true));
        let disallow = flags(&["disallow_eval_during_startup"]);
        assert_eq!(eval_at_startup(Some("2026-01-01"), &disallow), Ok(false));
    }

    #[test]
    fn nodejs_compat_implies_v2_after_2024_09_23() {
        let on = flags(&["nodejs_compat"]);
        assert_eq!(resolve(Some("2024-09-22"), &on), Ok(NodeCompat::V1));
        assert_eq!(resolve(Some("2024-09-23"), &on), Ok(NodeCompat::V2));
        assert_eq!(resolve(None, &on), Ok(NodeCompat::V1));
        assert_eq!(
            resolve(Some("2024-01-01"), &flags(&["nodejs_compat_v2"])),
            Ok(NodeCompat::V2)
        );
        assert_eq!(
            resolve(Some("2024-01-01"), &flags(&["nodejs_als"])),
            Ok(NodeCompat::Als)
        );
    }

    #[test]
    fn node_compat_from_2025_04_01_populates_process_env() {
        let on = flags(&["nodejs_compat"]);
        assert_eq!(process_env(Some("2025-03-31"), &on), Ok(false));
        assert_eq!(process_env(Some("2025-04-01"), &on), Ok(true));
        assert_eq!(process_env(Some("2026-08-04"), &[]), Ok(true));
        assert_eq!(process_env(Some("2025-11-01"), &[]), Ok(false));
        let asked = flags(&["nodejs_compat", "nodejs_compat_populate_process_env"]);
        assert_eq!(process_env(None, &asked), Ok(true));
        let refused = flags(&["nodejs_compat", "nodejs_compat_do_not_populate_process_env"]);
        assert_eq!(process_env(Some("2026-01-01"), &refused), Ok(false));
        // Without Node.js compatibility there is no process to fill.
        let alone = flags(&["nodejs_compat_populate_process_env"]);
        assert_eq!(process_env(Some("2026-01-01"), &alone), Ok(false));
    }

    #[test]
    fn unknown_and_contradictory_flags_and_bad_dates_are_refused() {
        let error = resolve(None, &flags(&["nodejs_compatt"])).unwrap_err();
        assert_eq!(error.kind(), "unknown_flag");
        let message = error.to_string();
        assert!(message.contains("\"nodejs_compatt\""), "{message}");
        assert!(
            message.contains("nodejs_compat, no_nodejs_compat"),
            "{message}"
        );
        assert_eq!(
            resolve(None, &flags(&["nodejs_compat", "no_nodejs_compat"])),
            Err(CompatError::Contradictory {
                on: "nodejs_compat".into(),
                off: "no_nodejs_compat".into()
            })
        );
        for bad in [
            "2026-8-4",
            "2026-13-01",
            "2026-01-32",
            "yesterday",
            "2026-01-01-01",
        ] {
            assert!(
                matches!(
                    resolve(Some(bad), &[]),
                    Err(CompatError::InvalidDate { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(Date::parse("2026-08-04").unwrap().to_string(), "2026-08-04");
    }
}
