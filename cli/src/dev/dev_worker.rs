//! One Worker as `isolane dev` serves it ([`DevWorker`]) and its
//! compatibility settings as written ([`Compatibility`]): what each source
//! of Workers (a script, a folder of Worker YAML, a wrangler project) makes.

use isolane_worker::{Bundle, Route, Triggers, WorkerKey};

/// A Worker's compatibility date and flags, as written (the fields of a
/// Worker YAML, or `isolane dev`'s flags for one script).
#[derive(Debug, Clone, Default)]
pub struct Compatibility {
    pub date: Option<String>,
    pub flags: Vec<String>,
}

impl Compatibility {
    /// Checks the settings as the operator's webhook does.
    pub fn check(&self) -> Result<(), isolane_worker::CompatError> {
        isolane_worker::compat::resolve(self.date.as_deref(), &self.flags).map(|_| ())
    }
}

/// One Worker as `isolane dev` serves it.
#[derive(Debug, Clone)]
pub struct DevWorker {
    /// The Worker (`dev/<file stem>` for a script).
    pub key: WorkerKey,
    /// The bundle the operator would write for it.
    pub bundle: Bundle,
    /// Its routes, as declared.
    pub routes: Vec<Route>,
    /// Cron schedules.
    pub triggers: Option<Triggers>,
    /// Static assets served before (or after) it (a wrangler project's
    /// `assets`).
    pub assets: Option<std::sync::Arc<isolane_assets::Site>>,
}
