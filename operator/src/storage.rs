//! The KV store's schema, the operator's to migrate: at start, and again
//! with backoff until the database answers, so an operator started before
//! its database still brings the schema up once the database is there.
//! Runtime nodes never migrate; they check the version on first use.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The first retry's wait; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Applies the missing migrations, retrying until they are applied or
/// `shutdown` is cancelled.
pub async fn migrate(settings: isolane_storage::PostgresSettings, shutdown: CancellationToken) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        match isolane_storage::migrate(&settings).await {
            Ok(version) => {
                info!(version, "the KV store's schema is current");
                return;
            }
            Err(error) => warn!(
                %error,
                kind = error.kind(),
                retry_in_s = backoff.as_secs(),
                "cannot migrate the KV store's schema yet"
            ),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
