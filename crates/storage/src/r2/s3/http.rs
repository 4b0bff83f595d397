//! The S3 store's requests: signed URLs (`rusty-s3`, query-string SigV4
//! with an unsigned payload, so a body streams) sent on hyper's client,
//! which runs on a runtime of the store's own; callers block on it (they
//! are on tokio's blocking pool or a thread of their own, never an engine
//! thread).

use std::path::Path;
use std::time::Duration;

use base64ct::Encoding;
use bytes::Bytes;
use futures::TryStreamExt;
use http_body_util::{BodyExt, Empty, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use rusty_s3::S3Action;

use super::super::R2Error;
use super::S3Settings;

/// How long a signed URL is good for (a slow, big upload included).
pub(super) const SIGNED_FOR: Duration = Duration::from_secs(6 * 3600);

/// The most bytes of an answer that is read whole (lists, errors).
const MAX_ANSWER: usize = 16 << 20;

type Body = BoxBody<Bytes, std::io::Error>;
type Http = Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>;

/// A request about to be sent.
pub(super) struct Request {
    method: ::http::Method,
    url: String,
    headers: Vec<(String, String)>,
    body: Body,
}

fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed()
}

fn method(method: rusty_s3::Method) -> ::http::Method {
    match method {
        rusty_s3::Method::Head => ::http::Method::HEAD,
        rusty_s3::Method::Get => ::http::Method::GET,
        rusty_s3::Method::Post => ::http::Method::POST,
        rusty_s3::Method::Put => ::http::Method::PUT,
        rusty_s3::Method::Delete => ::http::Method::DELETE,
    }
}

/// `text` for XML's character data.
pub(super) fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Request {
    /// `action`, signed, with no body.
    pub(super) fn new<'a, A: S3Action<'a>>(action: &A) -> Self {
        Self {
            method: method(A::METHOD),
            url: action.sign(SIGNED_FOR).to_string(),
            headers: Vec::new(),
            body: empty(),
        }
    }

    /// `action` with `headers` (the `x-amz-*` among them signed).
    pub(super) fn with_headers<'a, A: S3Action<'a>>(
        action: &mut A,
        headers: Vec<(String, String)>,
    ) -> Self {
        for (name, value) in &headers {
            if name.starts_with("x-amz-") {
                action.headers_mut().insert(name.clone(), value.clone());
            }
        }
        Self {
            headers,
            ..Self::new(action)
        }
    }

    /// With one more (unsigned) header.
    pub(super) fn header(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_owned(), value));
        self
    }

    /// With `xml` as the body.
    pub(super) fn xml(mut self, xml: String) -> Self {
        self.headers
            .push(("content-type".into(), "application/xml".into()));
        self.body = Full::new(Bytes::from(xml))
            .map_err(|never| match never {})
            .boxed();
        self
    }

    /// With file `path` (`size` bytes, hex MD5 `md5`) as the body, streamed;
    /// the store checks the MD5.
    pub(super) fn file(mut self, path: &Path, size: u64, md5: &str) -> Result<Self, R2Error> {
        let file = tokio::fs::File::from_std(std::fs::File::open(path)?);
        let stream = tokio_util::io::ReaderStream::with_capacity(file, 256 << 10);
        self.body = StreamBody::new(stream.map_ok(Frame::data)).boxed();
        let md5 = hex::decode(md5).map_err(|e| R2Error::Internal(e.to_string()))?;
        self.headers
            .push(("content-length".into(), size.to_string()));
        self.headers
            .push(("content-md5".into(), base64ct::Base64::encode_string(&md5)));
        Ok(self)
    }
}

/// An answer read whole.
pub(super) struct Answer {
    pub status: u16,
    pub headers: ::http::HeaderMap,
    pub body: Bytes,
}

/// The text between `open` and `close` in `text`.
fn between<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// R2's error for S3's error answer `body` (status `status`).
pub(super) fn error_of(status: u16, body: &str) -> R2Error {
    let code = between(body, "<Code>", "</Code>").unwrap_or_default();
    match code {
        "NoSuchUpload" => R2Error::NoSuchUpload,
        "InvalidPart" | "InvalidPartOrder" => R2Error::InvalidPart,
        "EntityTooSmall" => R2Error::EntityTooSmall,
        "EntityTooLarge" => R2Error::EntityTooLarge,
        "KeyTooLongError" => R2Error::InvalidObjectName,
        "InvalidDigest" | "BadDigest" => R2Error::Internal("the body changed on its way".into()),
        _ => {
            let message = between(body, "<Message>", "</Message>").unwrap_or_default();
            R2Error::Internal(format!("the S3 store answered {status} {code}: {message}"))
        }
    }
}

impl Answer {
    /// The answer, or R2's error for S3's (which may come with a 200).
    pub(super) fn ok(self) -> Result<Self, R2Error> {
        let text = String::from_utf8_lossy(&self.body);
        if (200..300).contains(&self.status) && !text.contains("<Error>") {
            return Ok(self);
        }
        Err(error_of(self.status, &text))
    }

    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The store's HTTP client and its runtime.
pub(super) struct S3Client {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    http: Http,
    bucket: rusty_s3::Bucket,
    credentials: rusty_s3::Credentials,
}

impl std::fmt::Debug for S3Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Client")
            .field("bucket", &self.bucket.base_url().as_str())
            .finish_non_exhaustive()
    }
}

impl Drop for S3Client {
    fn drop(&mut self) {
        // Dropped wherever the last handle goes, maybe inside a runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn settings_error(what: &str, error: impl std::fmt::Display) -> R2Error {
    R2Error::Internal(format!("the S3 store's {what}: {error}"))
}

/// A client for HTTP and HTTPS (the public web's roots).
fn http_client() -> Http {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map(|b| b.with_root_certificates(roots).with_no_client_auth())
    .unwrap_or_else(|_| {
        rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth()
    });
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(https)
}

impl S3Client {
    pub(super) fn new(settings: &S3Settings) -> Result<Self, R2Error> {
        let endpoint = settings
            .endpoint
            .parse()
            .map_err(|e| settings_error("endpoint", e))?;
        let bucket = rusty_s3::Bucket::new(
            endpoint,
            rusty_s3::UrlStyle::Path,
            settings.bucket.clone(),
            settings.region.clone(),
        )
        .map_err(|e| settings_error("bucket", e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("isolane-s3")
            .enable_all()
            .build()
            .map_err(|e| settings_error("runtime", e))?;
        let handle = runtime.handle().clone();
        let http = {
            let _entered = runtime.enter();
            http_client()
        };
        Ok(Self {
            runtime: Some(runtime),
            handle,
            http,
            bucket,
            credentials: rusty_s3::Credentials::new(&settings.access_key, &settings.secret_key),
        })
    }

    pub(super) fn bucket(&self) -> &rusty_s3::Bucket {
        &self.bucket
    }

    pub(super) fn credentials(&self) -> &rusty_s3::Credentials {
        &self.credentials
    }

    /// Blocks on `future` on the store's runtime.
    pub(super) fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        self.handle.block_on(future)
    }

    /// Sends `request`; the answer's head and its body, unread.
    pub(super) async fn send(
        &self,
        request: Request,
    ) -> Result<::http::Response<Incoming>, R2Error> {
        let mut builder = ::http::Request::builder()
            .method(request.method)
            .uri(request.url);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(request.body)
            .map_err(|e| R2Error::Internal(format!("an S3 request: {e}")))?;
        self.http
            .request(request)
            .await
            .map_err(|e| R2Error::Internal(format!("the S3 store: {e:?}")))
    }

    /// Sends `request` and reads its answer whole (at most 16 MiB).
    pub(super) fn call(&self, request: Request) -> Result<Answer, R2Error> {
        self.block_on(async {
            let response = self.send(request).await?;
            let (parts, body) = response.into_parts();
            let body = http_body_util::Limited::new(body, MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| R2Error::Internal(format!("the S3 store's answer: {e}")))?
                .to_bytes();
            Ok(Answer {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            })
        })
    }
}
