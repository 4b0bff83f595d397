//! A project Worker's code: its `main` read with the project's module
//! rules, or, for an assets-only project (wrangler's `assets` with no
//! `main`), one stand-in module. An assets-only project's assets say so
//! (`AssetFiles::has_worker` false, the artifact's config `assets_only`):
//! the asset server then answers every request itself, an unmatched one
//! with `not_found_handling`'s single page or 404 page, else an empty 404,
//! as Cloudflare answers for an assets-only Worker, and no request enters
//! an isolate. The stand-in is there because a Worker version is code that
//! nodes load: it hands a request to the assets binding (by default
//! [`ASSETS_ONLY_BINDING`]), which answers the same way.

use std::path::PathBuf;

use isolane_worker::{Module, ModuleKind, Modules};

use super::Config;
use super::build::BuildError;
use super::spec::ProjectWorker;
use crate::bundle::{self, Code, CodeError};

/// The assets-only Worker's module name.
pub const ASSETS_ONLY_MAIN: &str = "assets-only.js";

/// The assets binding an assets-only project without its own `binding` gets.
pub const ASSETS_ONLY_BINDING: &str = "ASSETS";

/// Gives an assets-only project's `assets` a binding when it names none.
pub(super) fn bind_assets_only(config: &mut Config) {
    if config.main.is_some() {
        return;
    }
    if let Some(assets) = &mut config.assets {
        let binding = &mut assets.settings.binding;
        binding.get_or_insert_with(|| ASSETS_ONLY_BINDING.to_owned());
    }
}

/// Why a project Worker's code cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ProjectCodeError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Code(#[from] CodeError),
}

impl ProjectWorker {
    /// The Worker's modules (or one script), as `isolane dev` serves them
    /// and `isolane deploy` ships them; `config` is the project's. A
    /// project with its own wrangler is built first (`build.rs`).
    pub fn code(&self, config: &Config) -> Result<Code, ProjectCodeError> {
        match (&self.main, &self.build) {
            (Some(_), Some(build)) => {
                let out = build.run()?;
                let main = build.main();
                let name = main.file_name().map(|n| n.to_string_lossy());
                let name = name.as_deref().unwrap_or("index.js");
                Ok(bundle::load_output(out, name, &self.rules)?)
            }
            (Some(main), None) => Ok(bundle::load(main, &self.rules)?),
            (None, _) => {
                let assets = config.assets.as_ref();
                let binding = assets.and_then(|a| a.settings.binding.as_deref());
                Ok(Code::Modules(assets_only(
                    binding.unwrap_or(ASSETS_ONLY_BINDING),
                )))
            }
        }
    }

    /// The main module's path (in the build's output when built), or the
    /// assets-only module's name.
    pub fn main_path(&self) -> PathBuf {
        match (&self.main, &self.build) {
            (Some(_), Some(build)) => build.main(),
            (Some(main), None) => main.clone(),
            (None, _) => PathBuf::from(ASSETS_ONLY_MAIN),
        }
    }
}

fn assets_only(binding: &str) -> Modules {
    let name = serde_json::Value::from(binding);
    let source = format!(
        "export default {{ fetch(request, env) {{ return env[{name}].fetch(request); }} }};\n"
    );
    let module = Module::new(ASSETS_ONLY_MAIN, ModuleKind::ESModule, source);
    Modules::new(ASSETS_ONLY_MAIN, vec![module])
        .unwrap_or_else(|error| unreachable!("one ES module named as its main: {error}"))
}
