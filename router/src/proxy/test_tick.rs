//! The test URL of a proxy that has one (`isolane dev`, as `wrangler dev`'s):
//! `GET /__scheduled?cron=<schedule>` on a Worker's host runs its
//! `scheduled` handler once, through the same split, placement, limits and
//! accounting as a request, and answers `Ran scheduled event` (or the
//! handler's failure, as a request's). The router in a cluster never has it:
//! a client cannot fire a Worker's ticks there.

use std::time::SystemTime;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use isolane_proto::runtime::v1::ScheduledTick;

use crate::answer::{ResponseBody, full_body};

/// The path of the test URL.
pub const TEST_SCHEDULED_PATH: &str = "/__scheduled";

/// The schedule of a tick fired without `?cron=`.
const DEFAULT_CRON: &str = "* * * * *";

/// The tick a test URL's query asks for, due now.
pub(super) fn tick(query: Option<&str>) -> ScheduledTick {
    let cron = query
        .into_iter()
        .flat_map(|q| url::form_urlencoded::parse(q.as_bytes()))
        .find(|(name, _)| name == "cron")
        .map_or_else(|| DEFAULT_CRON.to_owned(), |(_, value)| value.into_owned());
    ScheduledTick {
        cron,
        scheduled_time_ms: isolane_worker::cron::unix_millis(SystemTime::now()),
    }
}

/// The answer to the test URL: the node's answer when the tick failed, else
/// `Ran scheduled event` with the node's headers.
pub(super) async fn answer(response: Response<ResponseBody>) -> Response<ResponseBody> {
    if response.status() != StatusCode::OK {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // Read the (empty) body to its end, so the request's accounting completes.
    if let Err(error) = body.collect().await {
        tracing::debug!(%error, "the tick's answer failed while read");
    }
    parts.headers.remove(http::header::CONTENT_LENGTH);
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain;charset=UTF-8"),
    );
    Response::from_parts(
        parts,
        full_body(Bytes::from_static(b"Ran scheduled event\n")),
    )
}
