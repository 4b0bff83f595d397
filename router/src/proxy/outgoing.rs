//! The request side of a call: the head sent to the node, and the body as a
//! stream of frames, buffered only when small enough to replay.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::Uri;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::request::Parts;
use http::uri::{PathAndQuery, Scheme};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, BodyStream, StreamBody};
use isolane_proto::call::Call;
use isolane_proto::runtime::v1::{ExecuteRequest, RequestHead};

use super::body::{CallBody, FrameStream};
use super::client::Client;
use super::request_id::RequestId;
use crate::answer::name;
use crate::error::BoxError;

/// The largest body chunk sent in one message; bigger frames are split so a
/// message stays far below gRPC's default 4 MiB limit.
pub const MAX_CHUNK: usize = 256 * 1024;

/// The request body, ready to send.
#[derive(Debug)]
pub enum Outgoing<B> {
    /// The whole body is here (no body, or at most the replay limit): it can be
    /// sent again to another node.
    Replayable(Vec<Bytes>),
    /// Larger than the replay limit: what was read so far, then the rest,
    /// streamed once.
    Streaming {
        /// Chunks read before the limit was crossed.
        prefix: Vec<Bytes>,
        /// The rest of the client's body.
        rest: B,
    },
    /// A streaming body already handed to an attempt; sending it again sends a
    /// truncated body (no end marker), which never happens as such a request
    /// is not retried.
    Taken,
}

impl<B> Outgoing<B>
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    /// Reads `body` until it ends or passes `limit` bytes.
    pub async fn prepare(mut body: B, limit: usize) -> Result<Self, BoxError> {
        if body.is_end_stream() {
            return Ok(Self::Replayable(Vec::new()));
        }
        if body.size_hint().lower() > limit as u64 {
            return Ok(Self::Streaming {
                prefix: Vec::new(),
                rest: body,
            });
        }
        let mut chunks = Vec::new();
        let mut read = 0usize;
        while let Some(frame) = body.frame().await {
            // Request trailers are not carried to the node.
            let Ok(data) = frame.map_err(Into::into)?.into_data() else {
                continue;
            };
            read += data.len();
            if !data.is_empty() {
                chunks.push(data);
            }
            if read > limit {
                return Ok(Self::Streaming {
                    prefix: chunks,
                    rest: body,
                });
            }
        }
        Ok(Self::Replayable(chunks))
    }

    /// What `call` sends with its head on the node's `Calls` stream: no
    /// body, or the whole body when it was read whole and is at most
    /// `calls::WHOLE_REQUEST_LIMIT` bytes; `None`: it opens an `Execute`.
    pub fn whole_for(&self, call: &Call) -> Option<Bytes> {
        match call.bodyless() {
            true => Some(Bytes::new()),
            false => self.whole(isolane_proto::calls::WHOLE_REQUEST_LIMIT),
        }
    }

    /// The whole body when it was read whole and is at most `limit` bytes
    /// (one chunk is shared, not copied).
    fn whole(&self, limit: usize) -> Option<Bytes> {
        let Self::Replayable(chunks) = self else {
            return None;
        };
        match chunks.as_slice() {
            [] => Some(Bytes::new()),
            [one] => (one.len() <= limit).then(|| one.clone()),
            more => {
                let len: usize = more.iter().map(Bytes::len).sum();
                (len <= limit).then(|| more.concat().into())
            }
        }
    }

    /// Whether the body can be sent to another node after a failed attempt.
    pub fn is_replayable(&self) -> bool {
        matches!(self, Self::Replayable(_))
    }

    /// The frames of one attempt: `head`, the body, then the end marker.
    /// A streaming body is moved out. (A request whose body is held whole
    /// and small goes on the node's `Calls` stream instead, with its head.)
    pub fn frames(&mut self, head: RequestHead) -> FrameStream {
        let head = futures::stream::iter([ExecuteRequest::head(head)]);
        match std::mem::replace(self, Self::Taken) {
            Self::Replayable(chunks) => {
                let frames: Vec<ExecuteRequest> = chunks
                    .iter()
                    .flat_map(|c| split(c.clone()))
                    .map(ExecuteRequest::body)
                    .chain([ExecuteRequest::end()])
                    .collect();
                *self = Self::Replayable(chunks);
                FrameStream(Box::pin(head.chain(futures::stream::iter(frames))))
            }
            Self::Streaming { prefix, rest } => {
                let prefix = futures::stream::iter(
                    prefix
                        .into_iter()
                        .flat_map(split)
                        .map(ExecuteRequest::body)
                        .collect::<Vec<_>>(),
                );
                FrameStream(Box::pin(head.chain(prefix).chain(stream_body(rest))))
            }
            Self::Taken => FrameStream(Box::pin(head)),
        }
    }

    /// The body of one attempt on a node in this process, as it is: kept
    /// chunks are shared, not copied; a streaming body is moved out.
    pub fn body(&mut self) -> CallBody {
        match std::mem::replace(self, Self::Taken) {
            Self::Replayable(chunks) => {
                let body = if chunks.is_empty() {
                    http_body_util::Empty::new()
                        .map_err(|never| match never {})
                        .boxed_unsync()
                } else {
                    let frames = chunks.clone().into_iter().map(|c| Ok(Frame::data(c)));
                    StreamBody::new(futures::stream::iter(frames)).boxed_unsync()
                };
                *self = Self::Replayable(chunks);
                body
            }
            Self::Streaming { prefix, rest } => {
                let prefix = prefix.into_iter().map(|c| Ok(Frame::data(c)));
                let rest = BodyStream::new(rest.map_err(Into::into));
                StreamBody::new(futures::stream::iter(prefix).chain(rest)).boxed_unsync()
            }
            // As over gRPC: the body was sent once and cannot be sent again.
            Self::Taken => {
                let taken: BoxError = "the request body was already sent".into();
                StreamBody::new(futures::stream::iter([Err(taken)])).boxed_unsync()
            }
        }
    }
}

/// The frames of the rest of a body, then the end marker. If the client's
/// body fails, the stream stops without the end marker: the node sees a
/// truncated body.
fn stream_body<B>(body: B) -> impl Stream<Item = ExecuteRequest> + Send + 'static
where
    B: Body<Data = Bytes> + Send + Unpin + 'static,
{
    futures::stream::unfold(Some(body), |body| async move {
        let mut body = body?;
        loop {
            match body.frame().await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => {
                        let frames: Vec<ExecuteRequest> =
                            split(data).map(ExecuteRequest::body).collect();
                        return Some((futures::stream::iter(frames), Some(body)));
                    }
                    _ => continue,
                },
                Some(Err(_)) => return None,
                None => {
                    let end = vec![ExecuteRequest::end()];
                    return Some((futures::stream::iter(end), None));
                }
            }
        }
    })
    .flatten()
}

/// `chunk` in pieces of at most [`MAX_CHUNK`] bytes (no copy).
fn split(mut chunk: Bytes) -> impl Iterator<Item = Bytes> {
    std::iter::from_fn(move || {
        if chunk.is_empty() {
            None
        } else {
            Some(chunk.split_to(chunk.len().min(MAX_CHUNK)))
        }
    })
}

/// Headers that describe one connection, not the request (RFC 9110 §7.6.1).
const HOP_BY_HOP: &[HeaderName] = &[
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
];

/// Whether `name` is hop-by-hop whatever the message says.
pub fn is_always_hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(name)
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

/// Whether `name` is hop-by-hop here, including names listed in `Connection`.
pub fn is_hop_by_hop(name: &HeaderName, headers: &HeaderMap) -> bool {
    is_always_hop_by_hop(name)
        || headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|listed| listed.trim().eq_ignore_ascii_case(name.as_str()))
}

/// What the router adds to the request beyond what the client sent.
#[derive(Debug)]
pub struct HeadContext<'a> {
    /// The host as the client sent it (with port).
    pub host: &'a str,
    /// `namespace/name`.
    pub worker_id: &'a str,
    /// Revision to run.
    pub revision: &'a str,
    /// The request id (a trusted proxy's `x-request-id`, or one generated):
    /// the Worker sees it as `x-request-id`.
    pub request_id: &'a RequestId,
    /// The client: its address is appended to `x-forwarded-for`; only a
    /// trusted proxy's (`--trusted-proxies`) headers saying where the
    /// request came from ([`says_where_from`]) are kept, anyone else's are
    /// dropped and [`CLIENT_ADDRESS`] set to its address. `None` for the
    /// router's own requests and callers whose address is not known.
    pub client: Option<&'a Client>,
}

/// The headers in which the client's address reaches a Worker under the
/// names Cloudflare and common proxies give it: from an untrusted client,
/// each is its connection's address (so a Worker that reads
/// `cf-connecting-ip`, as on Cloudflare, gets the truth); from a trusted
/// proxy, what the proxy sent. The first is always set, as Cloudflare sets
/// it; the others (which Cloudflare does not add by default) replace what a
/// client sent, and are not added when it sent none: one header more per
/// request, not three.
pub const CLIENT_ADDRESS: [HeaderName; 3] = [
    HeaderName::from_static("cf-connecting-ip"),
    HeaderName::from_static("true-client-ip"),
    HeaderName::from_static("x-real-ip"),
];

/// Whether `name` is a header in which a client says where the request came
/// from (its address, scheme or host): kept only from a trusted proxy.
pub fn says_where_from(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "x-forwarded-for"
            | "x-forwarded-proto"
            | "x-forwarded-host"
            | "forwarded"
            | "cf-connecting-ip"
            | "true-client-ip"
            | "x-real-ip"
    )
}

/// The client's request names no host a URL can carry.
#[derive(Debug, thiserror::Error)]
#[error("the request's host {host:?} cannot be a URL's authority")]
pub struct InvalidHost {
    /// The host as the client sent it.
    pub host: String,
}

/// What the Worker sees of a client's request, and which Worker and
/// revision run it (thread and deadline are filled in per attempt). The one
/// place that decides it, for a node over gRPC and one in this process alike.
pub fn call_for(parts: &Parts, context: &HeadContext<'_>) -> Result<Call, InvalidHost> {
    let trusted = context.client.is_some_and(Client::trusted);
    // TLS terminated here, or (from a trusted proxy) before it.
    let over_https = context
        .client
        .is_some_and(|client| client.came_over_https(&parts.headers));
    let scheme = if over_https {
        Scheme::HTTPS
    } else {
        Scheme::HTTP
    };
    let invalid = || InvalidHost {
        host: context.host.to_owned(),
    };
    let path = parts
        .uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let uri = Uri::builder()
        .scheme(scheme)
        .authority(context.host)
        .path_and_query(path)
        .build()
        .map_err(|_| invalid())?;
    let host = HeaderValue::from_str(context.host).map_err(|_| invalid())?;
    let mut request = http::Request::new(());
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.reserve(parts.headers.len() + 3 + CLIENT_ADDRESS.len());
    let mut forwarded_for: Option<Vec<u8>> = None;
    // Which of `CLIENT_ADDRESS` an untrusted client sent (the first is set
    // in any case).
    let mut claimed = [true, false, false];
    // Most requests have no `Connection` header naming more hop-by-hop
    // headers: then no header needs looking it up.
    let names_more = parts.headers.contains_key(header::CONNECTION);
    for (name, value) in &parts.headers {
        if is_always_hop_by_hop(name) || (names_more && is_hop_by_hop(name, &parts.headers)) {
            continue;
        }
        // The Worker sees the host the request was routed by (for an
        // absolute-form request line, its authority, not the Host header).
        // The request id is the router's to set (the client's, when usable,
        // is the one set).
        if name == header::HOST || name == name::REQUEST_ID {
            continue;
        }
        // What an untrusted client says about where it came from is dropped.
        if !trusted && says_where_from(name) {
            if let Some(i) = CLIENT_ADDRESS.iter().position(|known| known == name) {
                claimed[i] = true;
            }
            continue;
        }
        if name.as_str() == "x-forwarded-for" {
            let list = forwarded_for.get_or_insert_with(Vec::new);
            if !list.is_empty() {
                list.extend_from_slice(b", ");
            }
            list.extend_from_slice(value.as_bytes());
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    headers.insert(header::HOST, host);
    if let Some(id) = context.request_id.header() {
        headers.insert(name::REQUEST_ID, id.clone());
    }
    if let (false, Some(client)) = (trusted, context.client) {
        for (name, claimed) in CLIENT_ADDRESS.into_iter().zip(claimed) {
            if claimed {
                headers.insert(name, client.forwarded().clone());
            }
        }
    }
    let forwarded_for = match (forwarded_for, context.client) {
        (Some(mut list), Some(client)) => {
            list.extend_from_slice(b", ");
            list.extend_from_slice(client.forwarded().as_bytes());
            HeaderValue::from_bytes(&list).ok()
        }
        (None, Some(client)) => Some(client.forwarded().clone()),
        (Some(list), None) => HeaderValue::from_bytes(&list).ok(),
        (None, None) => None,
    };
    if let Some(value) = forwarded_for {
        headers.insert(name::FORWARDED_FOR, value);
    }
    let body_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    Ok(Call {
        request,
        worker_id: context.worker_id.to_owned(),
        revision: context.revision.to_owned(),
        thread: 0,
        request_id: context.request_id.as_str().to_owned(),
        deadline_ms: 0,
        body_length,
        scheduled: None,
        prewarm: false,
        standby: false,
        whole_answer: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use http_body_util::{Full, StreamBody};
    use isolane_proto::runtime::v1::execute_request::Frame as F;

    fn kinds(frames: &[ExecuteRequest]) -> Vec<String> {
        frames
            .iter()
            .map(|f| match &f.frame {
                Some(F::Head(_)) => "head".to_owned(),
                Some(F::Body(b)) => format!("body{}", b.len()),
                Some(F::End(_)) => "end".to_owned(),
                Some(F::Socket(_)) => "socket".to_owned(),
                None => "none".to_owned(),
            })
            .collect()
    }

    #[tokio::test]
    async fn small_bodies_are_replayable() {
        let mut out = Outgoing::prepare(Full::new(Bytes::from_static(b"hello")), 10)
            .await
            .unwrap();
        assert!(out.is_replayable());
        for _ in 0..2 {
            let frames: Vec<_> = out.frames(RequestHead::default()).collect().await;
            assert_eq!(kinds(&frames), ["head", "body5", "end"]);
        }
        let mut empty = Outgoing::prepare(Full::new(Bytes::new()), 10)
            .await
            .unwrap();
        assert!(empty.is_replayable());
        let frames: Vec<_> = empty.frames(RequestHead::default()).collect().await;
        assert_eq!(kinds(&frames), ["head", "end"]);
    }

    #[tokio::test]
    async fn large_bodies_stream_once() {
        let chunks = (0..5)
            .map(|_| Ok::<_, std::io::Error>(http_body::Frame::data(Bytes::from(vec![7u8; 4]))));
        let body = StreamBody::new(futures::stream::iter(chunks));
        let mut out = Outgoing::prepare(body, 10).await.unwrap();
        assert!(!out.is_replayable());
        let frames: Vec<_> = out.frames(RequestHead::default()).collect().await;
        assert_eq!(
            kinds(&frames),
            ["head", "body4", "body4", "body4", "body4", "body4", "end"]
        );
        let big = Full::new(Bytes::from(vec![0u8; MAX_CHUNK * 2 + 1]));
        let mut out = Outgoing::prepare(big, 10).await.unwrap();
        let frames: Vec<_> = out.frames(RequestHead::default()).collect().await;
        let expected = format!("body{MAX_CHUNK}");
        assert_eq!(
            kinds(&frames),
            ["head", &expected, &expected, "body1", "end"]
        );
    }

    #[tokio::test]
    async fn a_failing_body_ends_without_the_end_marker() {
        let chunks = vec![
            Ok(http_body::Frame::data(Bytes::from(vec![1u8; 20]))),
            Err(std::io::Error::other("client went away")),
        ];
        let body = StreamBody::new(futures::stream::iter(chunks));
        let mut out = Outgoing::prepare(body, 10).await.unwrap();
        let frames: Vec<_> = out.frames(RequestHead::default()).collect().await;
        assert_eq!(kinds(&frames), ["head", "body20"]);
    }

    #[test]
    fn hop_by_hop_headers_are_dropped_and_forwarding_added() {
        let request = http::Request::builder()
            .uri("/a/b?c=d")
            .header("host", "api.test:8080")
            .header("connection", "keep-alive, x-private")
            .header("keep-alive", "timeout=5")
            .header("x-private", "1")
            .header("x-forwarded-for", "10.0.0.1")
            .header("content-length", "12")
            .header("accept", "text/plain")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        let head = call_for(
            &parts,
            &HeadContext {
                host: "api.test:8080",
                worker_id: "ns/w",
                revision: "r1",
                request_id: &id(),
                client: Some(&client(true)),
            },
        )
        .unwrap()
        .encode();
        assert_eq!(head.url, "http://api.test:8080/a/b?c=d");
        assert_eq!(head.body_length, Some(12));
        let names: Vec<(&str, &[u8])> = head
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_ref()))
            .collect();
        assert_eq!(
            names,
            [
                ("content-length", b"12".as_slice()),
                ("accept", b"text/plain"),
                ("host", b"api.test:8080"),
                ("x-request-id", b"abc"),
                ("x-forwarded-for", b"10.0.0.1, 192.0.2.7"),
            ]
        );
    }

    fn id() -> RequestId {
        RequestId::from_client(Some(&HeaderValue::from_static("abc")))
    }

    fn client(trusted: bool) -> Client {
        Client::new("192.0.2.7".parse().unwrap(), trusted)
    }

    fn head_for(request: http::Request<()>, host: &str, trusted: bool) -> RequestHead {
        let (parts, ()) = request.into_parts();
        call_for(
            &parts,
            &HeadContext {
                host,
                worker_id: "ns/w",
                revision: "r1",
                request_id: &id(),
                client: Some(&client(trusted)),
            },
        )
        .unwrap()
        .encode()
    }

    #[test]
    fn the_worker_sees_the_request_id_once() {
        // A client's id that was not usable is replaced by the router's.
        let request = http::Request::builder()
            .uri("/")
            .header("x-request-id", "not usable")
            .body(())
            .unwrap();
        let head = head_for(request, "api.test", false);
        assert_eq!(header_values(&head, "x-request-id"), [b"abc"]);
        // A router's own request (a cron tick) carries it too.
        let request = http::Request::builder().uri("/").body(()).unwrap();
        let head = head_for(request, "api.test", false);
        assert_eq!(header_values(&head, "x-request-id"), [b"abc"]);
    }

    #[test]
    fn a_host_that_is_no_authority_is_refused() {
        for host in ["", "a b", "a/b"] {
            let (parts, ()) = http::Request::builder()
                .uri("/")
                .body(())
                .unwrap()
                .into_parts();
            let context = HeadContext {
                host,
                worker_id: "ns/w",
                revision: "r1",
                request_id: &id(),
                client: None,
            };
            assert_eq!(call_for(&parts, &context).unwrap_err().host, host);
        }
    }

    fn header_values<'a>(head: &'a RequestHead, name: &str) -> Vec<&'a [u8]> {
        head.headers
            .iter()
            .filter(|h| h.name == name)
            .map(|h| h.value.as_ref())
            .collect()
    }

    #[test]
    fn an_untrusted_client_cannot_say_where_it_came_from() {
        let request = || {
            http::Request::builder()
                .uri("/")
                .header("host", "api.test")
                .header("x-forwarded-for", "10.0.0.1")
                .header("x-forwarded-proto", "https")
                .header("forwarded", "for=10.0.0.1;proto=https")
                .body(())
                .unwrap()
        };
        let head = head_for(request(), "api.test", false);
        assert_eq!(head.url, "http://api.test/");
        assert_eq!(header_values(&head, "x-forwarded-for"), [b"192.0.2.7"]);
        assert!(header_values(&head, "x-forwarded-proto").is_empty());
        assert!(header_values(&head, "forwarded").is_empty());
        // From a trusted proxy, both are kept.
        let head = head_for(request(), "api.test", true);
        assert_eq!(head.url, "https://api.test/");
        assert_eq!(
            header_values(&head, "x-forwarded-for"),
            [b"10.0.0.1, 192.0.2.7"]
        );
    }

    #[test]
    fn a_request_over_the_https_ingress_has_an_https_url() {
        let request = http::Request::builder()
            .uri("/a?b")
            .header("x-forwarded-proto", "http")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        let client = client(false).over_https(true);
        let head = call_for(
            &parts,
            &HeadContext {
                host: "api.test",
                worker_id: "ns/w",
                revision: "r1",
                request_id: &id(),
                client: Some(&client),
            },
        )
        .unwrap()
        .encode();
        assert_eq!(head.url, "https://api.test/a?b");
        // What the client said of its scheme is dropped, as over plain HTTP.
        assert!(header_values(&head, "x-forwarded-proto").is_empty());
    }

    #[test]
    fn an_untrusted_client_cannot_say_which_address_it_has() {
        let request = || {
            http::Request::builder()
                .uri("/")
                .header("cf-connecting-ip", "10.9.9.9")
                .header("True-Client-IP", "10.9.9.8")
                .header("x-real-ip", "10.9.9.7")
                .header("x-real-ip", "10.9.9.6")
                .body(())
                .unwrap()
        };
        // Replaced by the connection's address, once each.
        let head = head_for(request(), "api.test", false);
        for name in ["cf-connecting-ip", "true-client-ip", "x-real-ip"] {
            assert_eq!(header_values(&head, name), [b"192.0.2.7"], "{name}");
        }
        // A client that sent none gets `cf-connecting-ip` alone, as on
        // Cloudflare.
        let plain = || http::Request::builder().uri("/").body(()).unwrap();
        let head = head_for(plain(), "api.test", false);
        assert_eq!(header_values(&head, "cf-connecting-ip"), [b"192.0.2.7"]);
        assert!(header_values(&head, "true-client-ip").is_empty());
        assert!(header_values(&head, "x-real-ip").is_empty());
        // A trusted proxy's are kept as it sent them, and none added.
        let head = head_for(request(), "api.test", true);
        assert_eq!(header_values(&head, "cf-connecting-ip"), [b"10.9.9.9"]);
        assert_eq!(header_values(&head, "true-client-ip"), [b"10.9.9.8"]);
        assert_eq!(
            header_values(&head, "x-real-ip"),
            [b"10.9.9.7".as_slice(), b"10.9.9.6"]
        );
        let head = head_for(plain(), "api.test", true);
        assert!(header_values(&head, "cf-connecting-ip").is_empty());
        // A caller whose address is not known gets none of them.
        let (parts, ()) = request().into_parts();
        let context = HeadContext {
            host: "api.test",
            worker_id: "ns/w",
            revision: "r1",
            request_id: &id(),
            client: None,
        };
        let head = call_for(&parts, &context).unwrap().encode();
        for name in ["cf-connecting-ip", "true-client-ip", "x-real-ip"] {
            assert!(header_values(&head, name).is_empty(), "{name}");
        }
    }

    #[test]
    fn the_worker_sees_the_host_the_request_was_routed_by() {
        // `GET http://a.example/x HTTP/1.1` with `Host: b.example`: routed by
        // the authority (RFC 9112 §3.2.2), and that is the Host sent on.
        let request = http::Request::builder()
            .uri("http://a.example/x")
            .header("host", "b.example")
            .body(())
            .unwrap();
        let head = head_for(request, "a.example", false);
        assert_eq!(head.url, "http://a.example/x");
        assert_eq!(header_values(&head, "host"), [b"a.example"]);
    }
}
