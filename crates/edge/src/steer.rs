//! Which runtime a new connection is served on, from its first request:
//! a server whose runtimes each serve some of its work best (`isolane dev`
//! runs a Worker on one engine thread) looks at the first request's head
//! before handing the connection over, so the connection lands where the
//! Worker it asks for lives and its requests need no hop.
//!
//! The head is peeked (`MSG_PEEK`), not read: hyper reads it again as
//! usual. Only what has arrived when the connection is first readable is
//! looked at (clients send a request head in one write); a head that is
//! not complete by then, an HTTP/2 connection, or a Host that names nothing
//! leave the choice to the spread's turn.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;

/// The bytes of a first request head looked at, at most.
const PEEKED: usize = 4096;

/// The headers of a first request head parsed, at most.
const HEADERS: usize = 32;

/// Chooses a runtime (an index into the spread) from a request's `Host`
/// and path; `None` leaves it to the turn.
pub type Steer = Arc<dyn Fn(&str, &str) -> Option<Steered> + Send + Sync>;

/// Where a [`Steer`] sends a connection, and what the connection holds
/// until it ends (a server counting its connections per runtime, to
/// spread them, gets the guard of its count back here).
pub struct Steered {
    /// An index into the spread.
    pub runtime: usize,
    /// Dropped when the connection ends.
    pub hold: Option<Box<dyn Send>>,
}

impl Steered {
    /// To `runtime`, holding nothing.
    pub fn to(runtime: usize) -> Self {
        Self {
            runtime,
            hold: None,
        }
    }
}

/// Where `steer` sends the first request on `stream`, waiting at most
/// `timeout` for its first bytes.
pub(crate) async fn choose(
    stream: &TcpStream,
    steer: &Steer,
    timeout: Duration,
) -> Option<Steered> {
    tokio::time::timeout(timeout, stream.readable())
        .await
        .ok()?
        .ok()?;
    let mut head = [0u8; PEEKED];
    let len = stream.peek(&mut head).await.ok()?;
    let (host, path) = host_and_path(head.get(..len)?)?;
    steer(host, path)
}

/// The `Host` header and path of a complete HTTP/1 request head.
fn host_and_path(head: &[u8]) -> Option<(&str, &str)> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    if !request.parse(head).ok()?.is_complete() {
        return None;
    }
    let path = request.path?;
    let host = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))?;
    let host = std::str::from_utf8(host.value).ok()?;
    // An absolute-form target's path is what the proxy routes by too.
    let path = path.find("://").map_or(path, |scheme| {
        let rest = &path[scheme + 3..];
        rest.find('/').map_or("/", |at| &rest[at..])
    });
    Some((host, path.split('?').next().unwrap_or(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_head_gives_its_host_and_path() {
        let head = b"GET /api/items?x=1 HTTP/1.1\r\nUser-Agent: t\r\nhost: a.test:8787\r\n\r\n";
        assert_eq!(host_and_path(head), Some(("a.test:8787", "/api/items")));
        let absolute = b"GET http://b.test/x/y HTTP/1.1\r\nHost: b.test\r\n\r\n";
        assert_eq!(host_and_path(absolute), Some(("b.test", "/x/y")));
    }

    #[test]
    fn a_partial_or_foreign_head_gives_nothing() {
        assert_eq!(host_and_path(b"GET / HTTP/1.1\r\nHost: a.test\r\n"), None);
        assert_eq!(host_and_path(b"GET / HTTP/1.1\r\n\r\n"), None);
        assert_eq!(host_and_path(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), None);
        assert_eq!(host_and_path(b"\x16\x03\x01\x02\x00"), None);
    }
}
