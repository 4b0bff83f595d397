//! One `Execute` call in HTTP terms, however it travels.
//!
//! The router decides once what a node runs — a [`Call`]: the request the
//! Worker sees (method, absolute URL, headers) and which Worker, revision and
//! thread run it — and reads back an [`Answer`] (status, headers, outcome),
//! then a body whose failed end carries an outcome too ([`Failed`]).
//!
//! Over the network a call travels as the `Execute` frames, and the functions
//! here are the only code that converts: [`Call::encode`] / [`Call::decode`]
//! for the request head, [`Answer::encode`] / [`Answer::decode`] for the
//! response head. A node in the router's own process (`isolane dev`) is
//! handed the [`Call`] and gives back the [`Answer`] as they are, so nothing
//! is encoded, parsed or copied twice on that path.

use std::pin::Pin;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri};
use prost::bytes::Bytes;

use crate::runtime::v1::{Header, Outcome, RequestHead, ResponseHead, ScheduledTick};

/// What a node is asked to run.
#[derive(Debug, Clone)]
pub struct Call {
    /// The request as the Worker sees it: method, absolute URL and headers.
    /// Its body travels beside it.
    pub request: http::Request<()>,
    /// `namespace/name`.
    pub worker_id: String,
    /// The revision to run.
    pub revision: String,
    /// The engine thread placement chose.
    pub thread: u32,
    /// The request's id, for logs.
    pub request_id: String,
    /// Time left for the whole call, in ms; 0: none.
    pub deadline_ms: u64,
    /// The body's length, when the client announced it.
    pub body_length: Option<u64>,
    /// Run the Worker's `scheduled` handler for this tick instead of `fetch`.
    pub scheduled: Option<ScheduledTick>,
    /// Only compile the revision on the thread (the router's prewarm).
    pub prewarm: bool,
    /// With `prewarm`: only where it fits without evicting an isolate.
    pub standby: bool,
    /// The caller reads an answer as one `whole` message when its body is
    /// complete with its head (`RequestHead.whole_answer`).
    pub whole_answer: bool,
}

/// Why a request head from the wire is not a request.
#[derive(Debug, thiserror::Error)]
#[error("invalid request head: bad {field}")]
pub struct InvalidHead {
    /// Which part of the head.
    pub field: &'static str,
}

impl Call {
    /// Whether the request has no body to read, whatever its stream carries:
    /// GET and HEAD requests, and those that announce a length of 0.
    pub fn bodyless(&self) -> bool {
        let method = self.request.method();
        method == Method::GET || method == Method::HEAD || self.body_length == Some(0)
    }

    /// The head as the first frame of the request stream.
    pub fn encode(&self) -> RequestHead {
        let headers = self
            .request
            .headers()
            .iter()
            .map(|(name, value)| {
                Header::new(name.as_str(), Bytes::copy_from_slice(value.as_bytes()))
            })
            .collect();
        RequestHead {
            method: self.request.method().as_str().to_owned(),
            url: absolute_url(self.request.uri()),
            headers,
            worker_id: self.worker_id.clone(),
            revision: self.revision.clone(),
            thread: self.thread,
            request_id: self.request_id.clone(),
            deadline_ms: self.deadline_ms,
            body_length: self.body_length,
            scheduled: self.scheduled.clone(),
            prewarm: self.prewarm,
            standby: self.standby,
            whole_answer: self.whole_answer,
        }
    }

    /// The call a request stream's head asks for. The URL must be absolute.
    pub fn decode(head: RequestHead) -> Result<Self, InvalidHead> {
        let invalid = |field| InvalidHead { field };
        let method = Method::from_bytes(head.method.as_bytes()).map_err(|_| invalid("method"))?;
        let uri: Uri = head.url.parse().map_err(|_| invalid("url"))?;
        if uri.scheme().is_none() || uri.authority().is_none() {
            return Err(invalid("url"));
        }
        let mut request = http::Request::new(());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.reserve(head.headers.len());
        for header in head.headers {
            let name = HeaderName::from_bytes(header.name.as_bytes())
                .map_err(|_| invalid("header name"))?;
            let value = HeaderValue::from_maybe_shared(header.value)
                .map_err(|_| invalid("header value"))?;
            headers.append(name, value);
        }
        Ok(Self {
            request,
            worker_id: head.worker_id,
            revision: head.revision,
            thread: head.thread,
            request_id: head.request_id,
            deadline_ms: head.deadline_ms,
            body_length: head.body_length,
            scheduled: head.scheduled,
            prewarm: head.prewarm,
            standby: head.standby,
            whole_answer: head.whole_answer,
        })
    }
}

/// `uri` as `Display` writes it, without the formatting machinery (on
/// every call's path: about a tenth of the instructions).
fn absolute_url(uri: &Uri) -> String {
    let (scheme, authority) = (uri.scheme_str(), uri.authority());
    let (path, query) = (uri.path(), uri.query());
    let mut url = String::with_capacity(
        scheme.map_or(0, |s| s.len() + 3)
            + authority.map_or(0, |a| a.as_str().len())
            + path.len()
            + query.map_or(0, |q| q.len() + 1),
    );
    if let Some(scheme) = scheme {
        url.push_str(scheme);
        url.push_str("://");
    }
    if let Some(authority) = authority {
        url.push_str(authority.as_str());
    }
    url.push_str(path);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    url
}

/// A node's answer to a call, before its body.
#[derive(Debug)]
pub struct Answer {
    /// The Worker's status, or the error page's.
    pub status: StatusCode,
    /// The Worker's response headers (or the error page's).
    pub headers: HeaderMap,
    /// How the Worker did; anything but [`Outcome::Ok`] is answered by the
    /// router as the outcome says.
    pub outcome: Outcome,
    /// Why, when the outcome is not `Ok`.
    pub reason: String,
    /// How long to wait before asking again (a quarantined Worker).
    pub retry_after_ms: Option<u32>,
    /// The body's exact length, when known.
    pub body_length: Option<u64>,
    /// A `101`'s WebSocket: handed over in process, or made from the
    /// call's `socket` frames over gRPC.
    pub upgrade: Option<crate::socket::Upgrade>,
}

/// Why a response head from the wire is not an answer.
#[derive(Debug, thiserror::Error)]
#[error("the response status {status} is not an HTTP status")]
pub struct InvalidAnswer {
    /// The status the node sent.
    pub status: u32,
}

impl Answer {
    /// A successful answer of `body_length` bytes made without running a
    /// Worker (a static asset's, for one).
    pub fn ok(status: StatusCode, headers: HeaderMap, body_length: u64) -> Self {
        Self {
            status,
            headers,
            outcome: Outcome::Ok,
            reason: String::new(),
            retry_after_ms: None,
            body_length: Some(body_length),
            upgrade: None,
        }
    }

    /// The head as the first frame of the response stream.
    pub fn encode(&self) -> ResponseHead {
        let headers = self
            .headers
            .iter()
            .map(|(name, value)| {
                Header::new(name.as_str(), Bytes::copy_from_slice(value.as_bytes()))
            })
            .collect();
        ResponseHead {
            status: u32::from(self.status.as_u16()),
            headers,
            outcome: self.outcome.into(),
            reason: self.reason.clone(),
            retry_after_ms: self.retry_after_ms,
            body_length: self.body_length,
        }
    }

    /// The answer a response stream's head gives. Headers that are not valid
    /// HTTP are dropped; a status that is not one is refused only when the
    /// Worker's status stands (a refusal's status is the router's).
    pub fn decode(head: ResponseHead) -> Result<Self, InvalidAnswer> {
        let outcome = Outcome::try_from(head.outcome).unwrap_or(Outcome::Unspecified);
        let status = match u16::try_from(head.status)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
        {
            Some(status) => status,
            None if outcome != Outcome::Ok => StatusCode::INTERNAL_SERVER_ERROR,
            None => {
                return Err(InvalidAnswer {
                    status: head.status,
                });
            }
        };
        let mut headers = HeaderMap::with_capacity(head.headers.len());
        for header in head.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(header.name.as_bytes()),
                HeaderValue::from_maybe_shared(header.value),
            ) {
                headers.append(name, value);
            }
        }
        Ok(Self {
            status,
            headers,
            outcome,
            reason: head.reason,
            retry_after_ms: head.retry_after_ms,
            body_length: head.body_length,
            upgrade: None,
        })
    }
}

/// How an answer's body ended when it did not end well: the Worker's stream
/// threw or was cut by a limit, the node's deadline passed, its source failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", outcome.label())]
pub struct Failed {
    /// How it ended.
    pub outcome: Outcome,
    /// The node's detail.
    pub reason: String,
}

/// An answer's body as a node in the router's process gives it: chunks,
/// then its end (`None`) or how it failed.
pub type AnswerBody = Pin<Box<dyn http_body::Body<Data = Bytes, Error = Failed> + Send + 'static>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_urls_are_written_as_display_writes_them() {
        for text in [
            "https://api.example/a?b=c",
            "http://api.example",
            "http://api.example/",
            "http://[::1]:8080/p/q?",
            "http://h:1/%20x?a=%2F&b",
            "/relative?q",
            "*",
        ] {
            let uri: Uri = text.parse().unwrap();
            assert_eq!(absolute_url(&uri), uri.to_string(), "{text}");
        }
    }

    fn call() -> Call {
        let request = http::Request::builder()
            .method("POST")
            .uri("https://api.example/a?b=c")
            .header("content-type", "text/plain")
            .header("x-many", "1")
            .header("x-many", "2")
            .body(())
            .unwrap();
        Call {
            request,
            worker_id: "ns/w".to_owned(),
            revision: "r1".to_owned(),
            thread: 3,
            request_id: "abc".to_owned(),
            deadline_ms: 1500,
            body_length: Some(12),
            scheduled: Some(ScheduledTick {
                cron: "* * * * *".to_owned(),
                scheduled_time_ms: 42,
            }),
            prewarm: true,
            standby: true,
            whole_answer: true,
        }
    }

    #[test]
    fn a_call_round_trips_through_its_head() {
        let call = call();
        let back = Call::decode(call.encode()).unwrap();
        assert_eq!(back.request.method(), call.request.method());
        assert_eq!(back.request.uri(), call.request.uri());
        assert_eq!(back.request.headers(), call.request.headers());
        assert_eq!(back.encode(), call.encode());
        assert!(!back.bodyless());
    }

    #[test]
    fn heads_that_are_not_requests_are_refused() {
        let field = |edit: fn(&mut RequestHead)| {
            let mut head = call().encode();
            edit(&mut head);
            Call::decode(head).err().map(|e| e.field)
        };
        assert_eq!(field(|h| h.method = "GE T".to_owned()), Some("method"));
        assert_eq!(field(|h| h.url = "/relative".to_owned()), Some("url"));
        assert_eq!(
            field(|h| h.headers[0].name = "bad name".to_owned()),
            Some("header name")
        );
        assert_eq!(
            field(|h| h.headers[0].value = Bytes::from_static(b"a\nb")),
            Some("header value")
        );
        assert_eq!(field(|_| {}), None);
    }

    #[test]
    fn gets_heads_and_empty_bodies_are_bodyless() {
        for (method, length, bodyless) in [
            ("GET", None, true),
            ("HEAD", Some(5), true),
            ("POST", Some(0), true),
            ("POST", None, false),
            ("PUT", Some(1), false),
        ] {
            let mut call = call();
            *call.request.method_mut() = Method::from_bytes(method.as_bytes()).unwrap();
            call.body_length = length;
            assert_eq!(call.bodyless(), bodyless, "{method} {length:?}");
        }
    }

    #[test]
    fn an_answer_round_trips_through_its_head() {
        let mut headers = HeaderMap::new();
        headers.append("set-cookie", HeaderValue::from_static("a=1"));
        headers.append("set-cookie", HeaderValue::from_static("b=2"));
        let answer = Answer {
            status: StatusCode::IM_A_TEAPOT,
            headers,
            outcome: Outcome::Quarantined,
            reason: "why".to_owned(),
            retry_after_ms: Some(3000),
            body_length: Some(7),
            upgrade: None,
        };
        let back = Answer::decode(answer.encode()).unwrap();
        assert_eq!(back.encode(), answer.encode());
        assert_eq!(back.headers, answer.headers);
    }

    #[test]
    fn a_bad_status_is_refused_only_when_it_stands() {
        let head = |outcome: Outcome| ResponseHead {
            status: 1000,
            outcome: outcome.into(),
            headers: vec![Header::new("bad name", "x"), Header::new("ok", "y")],
            ..ResponseHead::default()
        };
        assert_eq!(Answer::decode(head(Outcome::Ok)).unwrap_err().status, 1000);
        let refusal = Answer::decode(head(Outcome::Overloaded)).unwrap();
        assert_eq!(refusal.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(refusal.headers.len(), 1);
    }
}
