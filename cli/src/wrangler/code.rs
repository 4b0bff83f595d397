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

use std::path::Path;

use isolane_worker::{Module, ModuleKind, Modules};

use super::Config;
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

impl ProjectWorker {
    /// The Worker's modules (or one script), as `isolane dev` serves them
    /// and `isolane deploy` ships them; `config` is the project's.
    pub fn code(&self, config: &Config) -> Result<Code, CodeError> {
        match &self.main {
            Some(main) => bundle::load(main, &self.rules),
            None => {
                let assets = config.assets.as_ref();
                let binding = assets.and_then(|a| a.settings.binding.as_deref());
                Ok(Code::Modules(assets_only(
                    binding.unwrap_or(ASSETS_ONLY_BINDING),
                )))
            }
        }
    }

    /// The main module's path, or the assets-only module's name.
    pub fn main_path(&self) -> &Path {
        self.main
            .as_deref()
            .unwrap_or_else(|| Path::new(ASSETS_ONLY_MAIN))
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
