//! Sending one request to one server, and comparing two answers after the
//! app's normalisation.

use std::collections::HashMap;
use std::io::Read as _;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use regex::Regex;

use super::manifest::{App, RequestSpec};

/// One request may take this long, body included (a runtime that hangs
/// answers "timed out", which is a difference like any other).
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// Headers that say how a message travelled, not what it says: HTTP's own,
/// and those Isolane's router adds to every answer (which node and revision
/// ran it, and the request id; docs/router.md), as `isolane dev` runs the
/// router's proxy.
const TRANSPORT_HEADERS: &[&str] = &[
    "date",
    "server",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "x-isolane-node",
    "x-isolane-revision",
    "x-request-id",
];

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// What a server answered: status, headers (lower-case names, in order) and
/// the body as sent, or why there was no answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub type Outcome = Result<Answer, String>;

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The answers so far of one app on one server, by request name.
pub type Seen = HashMap<String, Outcome>;

/// Fills `{{req}}`, `{{req#header}}`, `{{other:req}}`, `{{other:req#header}}`.
pub fn substitute(text: &str, same: &Seen, other: &Seen) -> String {
    static PLACEHOLDER: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let placeholder = PLACEHOLDER.get_or_init(|| {
        Regex::new(r"\{\{(other:)?([a-zA-Z0-9_-]+)(?:#([a-z0-9-]+))?\}\}").unwrap()
    });
    placeholder
        .replace_all(text, |c: &regex::Captures<'_>| {
            let seen = if c.get(1).is_some() { other } else { same };
            let name = &c[2];
            match seen.get(name) {
                Some(Ok(answer)) => match c.get(3) {
                    Some(header) => answer.header(header.as_str()).unwrap_or("").to_owned(),
                    None => String::from_utf8_lossy(&answer.body).into_owned(),
                },
                Some(Err(_)) => String::new(),
                None => panic!("{{{{{name}}}}} names no earlier request"),
            }
        })
        .into_owned()
}

/// Sends `spec` (placeholders filled) to the server at `addr` as `app`'s host.
pub async fn send(
    client: &HttpClient,
    addr: SocketAddr,
    app: &App,
    spec: &RequestSpec,
    same: &Seen,
    other: &Seen,
) -> Outcome {
    let path = substitute(&spec.path, same, other);
    let mut request = http::Request::builder()
        .method(spec.method.as_str())
        .uri(format!("http://{addr}{path}"))
        .header(http::header::HOST, app.host());
    for (name, value) in &spec.headers {
        request = request.header(name, substitute(value, same, other));
    }
    let body = match (&spec.body, &spec.body_hex) {
        (Some(text), _) => substitute(text, same, other).into_bytes(),
        (None, Some(hex)) => hex::decode(hex).unwrap(),
        (None, None) => Vec::new(),
    };
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes()
            .to_vec();
        Ok(Answer {
            status,
            headers,
            body,
        })
    };
    tokio::time::timeout(REQUEST_DEADLINE, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("timed out after {REQUEST_DEADLINE:?}")))
}

/// An answer as compared: status, headers that matter, decoded and
/// normalised body.
#[derive(Debug, PartialEq, Eq)]
struct Comparable {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

fn comparable(answer: &Answer, app: &App, index: usize) -> Comparable {
    let mut headers: Vec<(String, String)> = answer
        .headers
        .iter()
        .filter(|(n, _)| {
            !TRANSPORT_HEADERS.contains(&n.as_str())
                && !app.manifest.ignore_headers.iter().any(|i| i == n)
        })
        .cloned()
        .collect();
    // Order between different names carries no meaning; order within one
    // name (Set-Cookie) does, and a stable sort keeps it.
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let body = decode(answer);
    let mut body = match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => format!(
            "<{} bytes: {}>",
            e.as_bytes().len(),
            hex::encode(e.as_bytes())
        ),
    };
    for (regex, with) in app.rules.iter().chain(&app.request_rules[index]) {
        body = regex.replace_all(&body, with.as_str()).into_owned();
    }
    Comparable {
        status: answer.status,
        headers,
        body,
    }
}

/// The body with its `Content-Encoding` undone (compressors may choose
/// different bytes for the same content).
fn decode(answer: &Answer) -> Vec<u8> {
    let mut out = Vec::new();
    let decoded = match answer.header("content-encoding") {
        Some("gzip") => flate2::read::GzDecoder::new(&answer.body[..]).read_to_end(&mut out),
        Some("deflate") => flate2::read::ZlibDecoder::new(&answer.body[..]).read_to_end(&mut out),
        _ => return answer.body.clone(),
    };
    match decoded {
        // Encoded twice (a runtime compressing a body that the Worker had
        // already compressed): say so, and show what is inside.
        Ok(_) if out.starts_with(&[0x1f, 0x8b]) => {
            let mut inner = b"<gzip inside gzip> ".to_vec();
            match flate2::read::GzDecoder::new(&out[..]).read_to_end(&mut inner) {
                Ok(_) => inner,
                Err(_) => out,
            }
        }
        Ok(_) => out,
        Err(e) => format!(
            "<undecodable {:?} body: {e}>",
            answer.header("content-encoding")
        )
        .into_bytes(),
    }
}

/// `None` when the two answers are the same once normalised, else what differs.
pub fn difference(isolane: &Outcome, workerd: &Outcome, app: &App, index: usize) -> Option<String> {
    let (isolane, workerd) = match (isolane, workerd) {
        (Ok(a), Ok(b)) => (comparable(a, app, index), comparable(b, app, index)),
        (Err(a), Err(b)) if a == b => return None,
        (a, b) => {
            return Some(format!("isolane {} / workerd {}", brief(a), brief(b)));
        }
    };
    if isolane == workerd {
        return None;
    }
    let mut what = Vec::new();
    if isolane.status != workerd.status {
        what.push(format!("status {} vs {}", isolane.status, workerd.status));
    }
    let names: std::collections::BTreeSet<&str> = isolane
        .headers
        .iter()
        .chain(&workerd.headers)
        .map(|(n, _)| n.as_str())
        .collect();
    for name in names {
        let values = |c: &Comparable| -> Vec<String> {
            c.headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .collect()
        };
        let (a, b) = (values(&isolane), values(&workerd));
        if a != b {
            what.push(format!("header {name}: {a:?} vs {b:?}"));
        }
    }
    if isolane.body != workerd.body {
        what.push(format!(
            "body: {}",
            first_difference(&isolane.body, &workerd.body)
        ));
    }
    Some(what.join("; "))
}

fn brief(outcome: &Outcome) -> String {
    match outcome {
        Ok(answer) => format!("answered {}", answer.status),
        Err(e) => format!("failed: {e}"),
    }
}

/// Where two bodies part, with a little context from each.
fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let start = at.saturating_sub(30);
    let excerpt = |s: &str| -> String {
        let from = (start..=at.min(s.len()))
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(at);
        s[from..].chars().take(90).collect()
    };
    format!(
        "at byte {at}: isolane {:?} vs workerd {:?}",
        excerpt(a),
        excerpt(b)
    )
}

/// workerd's answer is the reference: it must be what the app means to
/// answer, or the comparison proves nothing.
pub fn check_reference(workerd: &Outcome, spec: &RequestSpec) -> Result<(), String> {
    let answer = workerd
        .as_ref()
        .map_err(|e| format!("workerd failed: {e}"))?;
    match spec.status {
        Some(expected) if expected != answer.status => Err(format!(
            "workerd answered {} where the manifest expects {expected}",
            answer.status
        )),
        None if answer.status >= 500 => Err(format!(
            "workerd answered {} ({}): fix the app or give \"status\" in its manifest",
            answer.status,
            String::from_utf8_lossy(&answer.body)
                .chars()
                .take(200)
                .collect::<String>()
        )),
        _ => Ok(()),
    }
}
