//! The node's flags for a cluster's R2 buckets (`--r2-s3-*`); the
//! credentials come from the environment (a Secret), never a command line.

use std::path::PathBuf;

use super::super::R2Error;
use super::S3Settings;

/// Where a cluster's R2 buckets are: an S3-compatible store (docs/r2.md).
#[derive(Debug, Clone, clap::Args)]
pub struct R2S3Args {
    /// The S3 API's endpoint (`http(s)://host:port`). Unset: this node
    /// serves no R2 buckets (a binding's calls throw).
    #[arg(long, env = "ISOLANE_R2_S3_ENDPOINT", value_name = "URL")]
    pub r2_s3_endpoint: Option<String>,
    /// The region requests are signed for.
    #[arg(long, env = "ISOLANE_R2_S3_REGION", default_value = "us-east-1")]
    pub r2_s3_region: String,
    /// The one S3 bucket holding every namespace's R2 buckets (made when
    /// missing).
    #[arg(long, env = "ISOLANE_R2_S3_BUCKET", default_value = "isolane-r2")]
    pub r2_s3_bucket: String,
    /// Put before `<namespace>/<bucket>/` in that bucket (empty, or
    /// ending in `/`).
    #[arg(long, env = "ISOLANE_R2_S3_PREFIX", default_value = "")]
    pub r2_s3_prefix: String,
    #[arg(long, env = "ISOLANE_R2_S3_ACCESS_KEY_ID", hide_env_values = true)]
    pub r2_s3_access_key_id: Option<String>,
    #[arg(long, env = "ISOLANE_R2_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub r2_s3_secret_access_key: Option<String>,
    /// Where bodies being written wait before they are sent (default: the
    /// system's temporary folder).
    #[arg(long, env = "ISOLANE_R2_S3_TEMP_DIR", value_name = "PATH")]
    pub r2_s3_temp_dir: Option<PathBuf>,
}

impl R2S3Args {
    /// The settings, when an endpoint is named.
    pub fn settings(&self) -> Option<S3Settings> {
        let endpoint = self.r2_s3_endpoint.clone()?;
        Some(S3Settings {
            endpoint,
            region: self.r2_s3_region.clone(),
            bucket: self.r2_s3_bucket.clone(),
            prefix: self.r2_s3_prefix.clone(),
            access_key: self.r2_s3_access_key_id.clone().unwrap_or_default(),
            secret_key: self.r2_s3_secret_access_key.clone().unwrap_or_default(),
            temp_dir: self
                .r2_s3_temp_dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join("isolane-r2")),
        })
    }

    /// `store` with the S3 store, when one is named.
    pub fn apply(&self, store: crate::Store) -> Result<crate::Store, R2Error> {
        match self.settings() {
            Some(settings) => store.with_r2_s3(settings),
            None => Ok(store),
        }
    }
}
