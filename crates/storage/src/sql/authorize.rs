//! What an object's SQL may do, as Cloudflare allows it (SQLite's
//! authorizer, asked for each action of a statement as it is prepared):
//! no `ATTACH`/`DETACH`, no transaction or savepoint of the application's
//! own (`transactionSync` is the way; [`Policy::transaction`] tells the
//! error apart), only the `PRAGMA`s below, and no table, index or trigger
//! named `_cf_…` (Cloudflare's own). The engine's own statements (its
//! savepoints, the checkpoint, the size) run [`Policy::trusted`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

/// PRAGMAs that only read (an argument names a table or index).
const READ_PRAGMAS: &[&str] = &[
    "data_version",
    "foreign_key_check",
    "foreign_key_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// PRAGMAs an application may also set: they change how its own
/// statements run, never where files go or how the engine keeps them.
const SET_PRAGMAS: &[&str] = &[
    "case_sensitive_like",
    "defer_foreign_keys",
    "foreign_keys",
    "ignore_check_constraints",
    "legacy_alter_table",
    "optimize",
    "recursive_triggers",
    "reverse_unordered_selects",
];

/// The authorizer's state, shared with its hook.
#[derive(Debug, Default)]
pub(super) struct Policy {
    /// The engine's own statement: everything goes.
    trusted: AtomicBool,
    /// The last refusal was a transaction statement.
    transaction: AtomicBool,
}

impl Policy {
    /// Installs the authorizer on `conn`.
    pub(super) fn install(conn: &Connection) -> Arc<Self> {
        let policy = Arc::new(Self::default());
        let hook = policy.clone();
        conn.authorizer(Some(move |context: AuthContext<'_>| hook.decide(&context)));
        policy
    }

    /// Runs `work` (the engine's own statements) with everything allowed.
    pub(super) fn trusted<T>(&self, work: impl FnOnce() -> T) -> T {
        self.trusted.store(true, Ordering::Relaxed);
        let out = work();
        self.trusted.store(false, Ordering::Relaxed);
        out
    }

    /// Whether the last refusal was of a transaction statement (and
    /// forgets it).
    pub(super) fn transaction(&self) -> bool {
        self.transaction.swap(false, Ordering::Relaxed)
    }

    fn decide(&self, context: &AuthContext<'_>) -> Authorization {
        if self.trusted.load(Ordering::Relaxed) {
            return Authorization::Allow;
        }
        let allowed = match &context.action {
            AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
                self.transaction.store(true, Ordering::Relaxed);
                false
            }
            AuthAction::Attach { .. } | AuthAction::Detach { .. } => false,
            AuthAction::Pragma { pragma_name, .. } => pragma_allowed(pragma_name),
            action => name_of(action).is_none_or(|name| !name.starts_with("_cf_")),
        };
        if allowed {
            Authorization::Allow
        } else {
            Authorization::Deny
        }
    }
}

/// Whether `PRAGMA name` is one an application may run: a read (whose
/// argument, if any, names a table or index) or a setting of its own.
fn pragma_allowed(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    READ_PRAGMAS.contains(&name.as_str()) || SET_PRAGMAS.contains(&name.as_str())
}

/// The table, index, trigger or view an action names, if any.
fn name_of<'a>(action: &AuthAction<'a>) -> Option<&'a str> {
    match *action {
        AuthAction::CreateTable { table_name }
        | AuthAction::CreateTempTable { table_name }
        | AuthAction::DropTable { table_name }
        | AuthAction::DropTempTable { table_name }
        | AuthAction::Insert { table_name }
        | AuthAction::Delete { table_name }
        | AuthAction::Read { table_name, .. }
        | AuthAction::Update { table_name, .. }
        | AuthAction::AlterTable { table_name, .. }
        | AuthAction::Analyze { table_name }
        | AuthAction::CreateVtable { table_name, .. }
        | AuthAction::DropVtable { table_name, .. } => Some(table_name),
        AuthAction::CreateIndex { index_name, .. }
        | AuthAction::CreateTempIndex { index_name, .. }
        | AuthAction::DropIndex { index_name, .. }
        | AuthAction::DropTempIndex { index_name, .. } => Some(index_name),
        AuthAction::CreateTrigger { trigger_name, .. }
        | AuthAction::CreateTempTrigger { trigger_name, .. }
        | AuthAction::DropTrigger { trigger_name, .. }
        | AuthAction::DropTempTrigger { trigger_name, .. } => Some(trigger_name),
        AuthAction::CreateView { view_name }
        | AuthAction::CreateTempView { view_name }
        | AuthAction::DropView { view_name, .. }
        | AuthAction::DropTempView { view_name, .. } => Some(view_name),
        _ => None,
    }
}
