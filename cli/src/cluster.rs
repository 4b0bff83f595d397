//! The cluster of your kubeconfig, as `isolane tail` and `isolane d1
//! migrations … --remote` reach it: the kubeconfig (its current context,
//! or `--context`), then either the Kubernetes API server with kube-rs's
//! client (exec plugins, client certificates, OIDC, tokens: as kubectl),
//! which proxies to the router's aggregated API (group
//! [`GROUP`]), or, with `--endpoint`, the router's own tail endpoint, sent
//! the kubeconfig user's bearer token ([`send`]).

use anyhow::Context as _;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use isolane_worker::Inert;
use secrecy::ExposeSecret;

/// The router's aggregated API's group and version, and its APIService's
/// name.
pub const GROUP: &str = "tail.isolane.dev";
pub const VERSION: &str = "v1alpha1";
pub const API_SERVICE: &str = "v1alpha1.tail.isolane.dev";

/// Your kubeconfig, at `context` (default: its current context).
pub async fn kubeconfig(context: Option<&str>) -> anyhow::Result<kube::Config> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    kube::Config::from_kubeconfig(&options)
        .await
        .context("reading your kubeconfig")
}

/// The kubeconfig user's bearer token, which `command` sends to the
/// router's own endpoint.
pub fn bearer_token(auth: &kube::config::AuthInfo, command: &str) -> anyhow::Result<String> {
    if let Some(token) = &auth.token {
        return Ok(token.expose_secret().to_owned());
    }
    if let Some(file) = &auth.token_file {
        return std::fs::read_to_string(file)
            .map(|t| t.trim().to_owned())
            .with_context(|| format!("reading the token file {file}"));
    }
    anyhow::bail!(
        "your kubeconfig's user has no bearer token (a token or tokenFile): {command} --endpoint sends it to the router, which checks it with a TokenReview (without --endpoint, any kubeconfig user works, through the Kubernetes API server)"
    )
}

/// `method uri` with the bearer `token` and `body` (JSON when not empty),
/// over HTTP/1.1 to the router's tail endpoint: the response head.
pub async fn send(
    method: http::Method,
    uri: http::Uri,
    token: &str,
    body: Bytes,
) -> anyhow::Result<http::Response<Incoming>> {
    if uri.scheme_str() != Some("http") {
        anyhow::bail!("the tail endpoint must be an http:// URL (put TLS in front of it)");
    }
    let authority = uri
        .authority()
        .context("the tail endpoint has no host")?
        .clone();
    let port = authority.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((authority.host(), port))
        .await
        .with_context(|| format!("connecting to {authority}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("talking to the tail endpoint")?;
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::HOST, authority.as_str())
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    if !body.is_empty() {
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    let request = request
        .body(Full::new(body))
        .context("building the request")?;
    sender
        .send_request(request)
        .await
        .context("the tail endpoint did not answer")
}

/// The message of a refusal's body: its JSON `error` (the tail endpoint's)
/// or `message` (a Kubernetes `Status`), else the body as text.
pub async fn refusal_message<B: Body>(body: B) -> String {
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            let message = v.get("error").or_else(|| v.get("message"))?;
            message.as_str().map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned())
}

/// A response body read here: the router's (hyper's) or the apiserver's
/// (kube-rs's).
pub trait Body:
    hyper::body::Body<Data = Bytes, Error: std::error::Error + Send + Sync + 'static> + Unpin
{
}

impl<B> Body for B where
    B: hyper::body::Body<Data = Bytes, Error: std::error::Error + Send + Sync + 'static> + Unpin
{
}

/// What a command asks of the aggregated API, as its refusals say it.
#[derive(Debug, Clone, Copy)]
pub struct Need {
    /// What was refused: `tail`, `D1 migrations`.
    pub what: &'static str,
    /// Doing it needs: `get on workers/tail`.
    pub permission: &'static str,
    /// The chart's ClusterRole that grants it.
    pub role: &'static str,
}

/// Why the API server (or the aggregated API behind it) refused `need` in
/// `namespace` with `status` and `message`, said so that the reader knows
/// what to ask for.
pub fn api_refusal(need: Need, status: StatusCode, namespace: &str, message: &str) -> String {
    let Need {
        what,
        permission,
        role,
    } = need;
    let message = Inert(message);
    match status {
        StatusCode::FORBIDDEN => format!(
            "{what} refused ({status}): {message}\n\
             it needs {permission} in the API groups isolane.dev and {GROUP} \
             in namespace {namespace}: ask for a RoleBinding to the ClusterRole \
             {role} there"
        ),
        StatusCode::NOT_FOUND | StatusCode::SERVICE_UNAVAILABLE => format!(
            "{what}: Isolane's aggregated API ({GROUP}) is not available ({status}): \
             {message}\n\
             the Kubernetes API server has no working APIService {API_SERVICE}: is Isolane \
             installed with it (chart value tailApi.enabled), and is the APIService \
             Available? kubectl get apiservice {API_SERVICE}"
        ),
        StatusCode::UNAUTHORIZED => format!(
            "{what} refused ({status}): {message}\n\
             the Kubernetes API server did not accept your kubeconfig's credentials"
        ),
        _ => format!("{what} refused ({status}): {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAIL: Need = Need {
        what: "tail",
        permission: "get on workers/tail",
        role: "isolane-worker-tail",
    };

    #[test]
    fn a_refusal_says_what_to_ask_for() {
        let forbidden = api_refusal(TAIL, StatusCode::FORBIDDEN, "team-b", "no");
        assert!(
            forbidden.starts_with("tail refused (403 Forbidden): no\n")
                && forbidden.contains("get on workers/tail")
                && forbidden.contains("in namespace team-b")
                && forbidden.contains("isolane-worker-tail"),
            "{forbidden}"
        );
        let missing = api_refusal(TAIL, StatusCode::NOT_FOUND, "a", "not found");
        assert!(
            missing.contains(
                "tail: Isolane's aggregated API (tail.isolane.dev) is not available (404"
            ) && missing.contains("kubectl get apiservice v1alpha1.tail.isolane.dev"),
            "{missing}"
        );
    }

    #[test]
    fn a_missing_token_names_the_command() {
        let auth = kube::config::AuthInfo::default();
        let error = bearer_token(&auth, "isolane d1 migrations apply --remote").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("isolane d1 migrations apply --remote --endpoint sends it"),
            "{error}"
        );
    }
}
