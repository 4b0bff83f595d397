//! Reload: when the script or a file in the Worker folder changes, read the
//! Workers again and serve the new revisions, as the operator and router
//! would roll them out: each changed Worker's new revision is compiled on
//! its thread (the router's prewarm gate) before it takes requests, and
//! requests already running finish on the old one. A folder that no longer
//! reads (a YAML error, a missing file) keeps the Workers served now, with
//! the error logged.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, DebouncedEvent, new_debouncer};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::project::Source;
use super::serving::Serving;

/// Changes closer together than this are one reload (an editor's save
/// writes, renames and touches in a burst).
const DEBOUNCE: Duration = Duration::from_millis(150);

/// Why changes cannot be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {path} for changes")]
pub struct WatchError {
    path: String,
    #[source]
    source: notify::Error,
}

/// Reloads `serving` from `source` on every change, until `stop`.
pub async fn run(
    source: Source,
    serving: Serving,
    stop: CancellationToken,
) -> Result<(), WatchError> {
    let (changed, mut changes) = mpsc::unbounded_channel::<()>();
    let watched = source.path().to_path_buf();
    // A folder's Worker YAMLs, the script's own file name, or a project.
    let script = match &source {
        Source::Script { path, .. } => Concern::Script(path.file_name().map(PathBuf::from)),
        Source::Folder(_) => Concern::Yaml,
        Source::Wrangler { file, .. } => {
            let root = crate::bundle::root(file);
            // Events name absolute paths.
            Concern::Project(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()))
        }
    };
    let mut debouncer = new_debouncer(DEBOUNCE, None, move |result: DebounceEventResult| {
        if let Ok(events) = result
            && events.iter().any(|e| changes_content(e, &script))
        {
            let _ = changed.send(());
        }
    })
    .map_err(|source| watch_error(&watched, source))?;
    // A script is watched through its folder: editors replace files by
    // renaming, which a watch on the file itself would lose.
    // wrangler's output folder is watched whole (its modules may be in
    // subfolders).
    let (target, mode) = match &source {
        Source::Script { path, .. } if path.is_dir() => (path.as_path(), RecursiveMode::Recursive),
        Source::Script { path, .. } => (crate::bundle::root(path), RecursiveMode::NonRecursive),
        Source::Folder(dir) => (dir.as_path(), RecursiveMode::NonRecursive),
        // A project's folder whole: its config, `.dev.vars` or `.env` and code.
        Source::Wrangler { file, .. } => (crate::bundle::root(file), RecursiveMode::Recursive),
    };
    debouncer
        .watch(target, mode)
        .map_err(|source| watch_error(&watched, source))?;
    tracing::info!(path = %watched.display(), "watching for changes");
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            next = changes.recv() => if next.is_none() { return Ok(()) },
        }
        // Changes that came meanwhile are this reload's too.
        while changes.try_recv().is_ok() {}
        match read(&source).await {
            Ok(project) => serving.reload(&project),
            Err(error) => {
                tracing::error!(
                    error = format!("{error:#}"),
                    "reload failed; still serving the previous Workers"
                );
            }
        }
    }
}

/// The Workers of `source`, read off the runtime's thread: a project's
/// build (its wrangler) takes seconds, and this runtime also serves
/// requests.
async fn read(source: &Source) -> anyhow::Result<super::project::Project> {
    let source = source.clone();
    tokio::task::spawn_blocking(move || source.load())
        .await
        .unwrap_or_else(|joined| Err(anyhow::anyhow!("reading the Workers: {joined}")))
}

/// Whether `event` may have changed what a file holds (not a read: another
/// process opening the script is no reason to reload) at a path that
/// concerns the Workers.
fn changes_content(event: &DebouncedEvent, script: &Concern) -> bool {
    let writes = match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Other => false,
        _ => true,
    };
    writes && event.paths.iter().any(|path| concerns(script, path))
}

/// Which changes concern the Workers.
enum Concern {
    /// The script (by file name) and the modules beside it.
    Script(Option<PathBuf>),
    /// A folder's Worker YAMLs.
    Yaml,
    /// Any file of a wrangler project's folder but hidden ones (the state
    /// under `.isolane`, `.git`), except `.dev.vars*` and `.env*`, and
    /// `node_modules`.
    Project(PathBuf),
}

/// Whether a change at `changed` concerns the Workers.
fn concerns(script: &Concern, changed: &Path) -> bool {
    match script {
        // The script itself, or any file a module rule types (an import).
        Concern::Script(name) => {
            changed.file_name().map(PathBuf::from) == *name
                || isolane_worker::ModuleKind::from_path(&changed.to_string_lossy()).is_some()
        }
        Concern::Yaml => changed
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml"),
        Concern::Project(root) => {
            let relative = changed.strip_prefix(root).unwrap_or(changed);
            relative.components().all(|part| {
                let part = part.as_os_str().to_string_lossy();
                part != "node_modules"
                    && (!part.starts_with('.')
                        || part.starts_with(".dev.vars")
                        || part.starts_with(".env")
                        || part == "."
                        || part == "..")
            })
        }
    }
}

fn watch_error(path: &Path, source: notify::Error) -> WatchError {
    WatchError {
        path: path.display().to_string(),
        source,
    }
}
