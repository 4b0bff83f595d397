//! A Worker's `assets` settings as wrangler writes them (`html_handling`,
//! `not_found_handling`, `run_worker_first`), and the [`Config`] they make
//! with the Worker's compatibility settings. `isolane dev` reads them from
//! the wrangler config; a bundle artifact carries them in its config blob,
//! so the node decides with the same settings.

use serde::{Deserialize, Serialize};

use crate::decision::Config;
use crate::routing::{HtmlHandling, NotFoundHandling, UnknownSetting};
use crate::run_worker_first::{RunWorkerFirst, RunWorkerFirstError};

/// The compatibility flag (on from 2025-04-01) under which a navigation
/// request that no asset matches gets `not_found_handling`, not the Worker.
const NAVIGATION_FLAG: &str = "assets_navigation_prefers_asset_serving";
const NAVIGATION_OFF_FLAG: &str = "assets_navigation_has_no_effect";
const NAVIGATION_DATE: &str = "2025-04-01";

/// wrangler's `assets` keys that decide how requests are answered, and the
/// `binding` that gives the Worker `env.<binding>.fetch` (the folder is the
/// caller's business).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// `env.<binding>`: a Fetcher whose `fetch` answers from the assets
    /// alone ([`crate::Site::fetch`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html_handling: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_found_handling: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_worker_first: Option<RunWorkerFirstSetting>,
}

/// `run_worker_first`: a boolean, or route patterns (`!` excludes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunWorkerFirstSetting {
    All(bool),
    Routes(Vec<String>),
}

/// A setting that is not one Cloudflare knows.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Unknown(#[from] UnknownSetting),
    #[error("assets.run_worker_first: {0}")]
    RunWorkerFirst(#[from] RunWorkerFirstError),
}

impl Settings {
    /// The decisions' settings for a Worker with (or without) a script and
    /// with these compatibility settings.
    pub fn config(
        &self,
        has_worker: bool,
        date: Option<&str>,
        flags: &[String],
    ) -> Result<Config, SettingsError> {
        let html_handling = match &self.html_handling {
            Some(text) => text.parse::<HtmlHandling>()?,
            None => HtmlHandling::default(),
        };
        let not_found_handling = match &self.not_found_handling {
            Some(text) => text.parse::<NotFoundHandling>()?,
            None => NotFoundHandling::default(),
        };
        let run_worker_first = match &self.run_worker_first {
            None => RunWorkerFirst::default(),
            Some(RunWorkerFirstSetting::All(all)) => RunWorkerFirst::from_bool(*all),
            Some(RunWorkerFirstSetting::Routes(routes)) => RunWorkerFirst::from_routes(routes)?,
        };
        let by_date = date.is_some_and(|date| date >= NAVIGATION_DATE);
        let flag = |name: &str| flags.iter().any(|f| f == name);
        Ok(Config {
            html_handling,
            not_found_handling,
            run_worker_first,
            has_worker,
            navigation_prefers_assets: (by_date || flag(NAVIGATION_FLAG))
                && !flag(NAVIGATION_OFF_FLAG),
            ..Config::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrangler_strings_make_the_config_and_the_date_turns_navigation_on() {
        let settings = Settings {
            html_handling: Some("drop-trailing-slash".into()),
            not_found_handling: Some("single-page-application".into()),
            run_worker_first: Some(RunWorkerFirstSetting::Routes(vec!["/api/*".into()])),
            binding: None,
        };
        let config = settings.config(true, Some("2025-04-01"), &[]).unwrap();
        assert_eq!(config.html_handling, HtmlHandling::DropTrailingSlash);
        assert_eq!(
            config.not_found_handling,
            NotFoundHandling::SinglePageApplication
        );
        assert!(config.navigation_prefers_assets);
        let before = settings.config(true, Some("2025-03-31"), &[]).unwrap();
        assert!(!before.navigation_prefers_assets);
        let flagged = [NAVIGATION_FLAG.to_owned()];
        assert!(
            settings
                .config(true, Some("2024-01-01"), &flagged)
                .unwrap()
                .navigation_prefers_assets
        );
        let off = [NAVIGATION_OFF_FLAG.to_owned()];
        assert!(
            !settings
                .config(true, Some("2026-01-01"), &off)
                .unwrap()
                .navigation_prefers_assets
        );
    }

    #[test]
    fn an_unknown_value_names_its_setting() {
        let settings = Settings {
            html_handling: Some("sometimes".into()),
            ..Settings::default()
        };
        let error = settings.config(true, None, &[]).unwrap_err();
        assert!(error.to_string().contains("html_handling"), "{error}");
    }

    #[test]
    fn json_is_wranglers_shape() {
        let settings: Settings =
            serde_json::from_str(r#"{"not_found_handling":"404-page","run_worker_first":true}"#)
                .unwrap();
        assert_eq!(
            settings.run_worker_first,
            Some(RunWorkerFirstSetting::All(true))
        );
        assert_eq!(
            serde_json::to_string(&Settings::default()).unwrap(),
            "{}",
            "nothing set writes nothing"
        );
    }
}
