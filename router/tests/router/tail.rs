//! The tail endpoint's access check against a real kube-apiserver
//! (isolane-testenv), on a real socket: one address sending bogus tokens
//! makes at most its burst of TokenReviews — counted by the apiserver's own
//! `apiserver_request_total` — and is answered 429 with `Retry-After` past
//! it, while a ServiceAccount token that tailed just before still opens
//! tails from that same address.

use std::net::SocketAddr;
use std::time::Instant;

use isolane_router::ProxyConfig;
use isolane_router::tail::{self, limit};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::support::proxy;

const NAMESPACE: &str = "team-a";

/// A ServiceAccount of `NAMESPACE` allowed to tail there; its token.
async fn reader(cp: &isolane_testenv::ControlPlane) -> String {
    let client = cp.client();
    let post = PostParams::default();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let account = ServiceAccount {
        metadata: meta("reader"),
        ..ServiceAccount::default()
    };
    accounts.create(&post, &account).await.unwrap();
    let role = Role {
        metadata: meta("tail"),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![tail::access::GROUP.to_owned()]),
            resources: Some(vec!["workers/tail".to_owned()]),
            verbs: vec![tail::access::VERB.to_owned()],
            ..PolicyRule::default()
        }]),
    };
    Api::<Role>::namespaced(client.clone(), NAMESPACE)
        .create(&post, &role)
        .await
        .unwrap();
    let binding = RoleBinding {
        metadata: meta("reader-tails"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: "tail".to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: "reader".to_owned(),
            namespace: Some(NAMESPACE.to_owned()),
            ..Subject::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(client.clone(), NAMESPACE)
        .create(&post, &binding)
        .await
        .unwrap();
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            bound_object_ref: None,
        },
        ..TokenRequest::default()
    };
    accounts
        .create_token_request("reader", &post, &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// TokenReviews the apiserver has answered, by its own metrics.
async fn token_reviews(client: &kube::Client) -> f64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap();
    text.lines()
        .filter(|line| line.starts_with("apiserver_request_total{"))
        .filter(|line| line.contains(r#"resource="tokenreviews""#))
        .filter(|line| line.contains(r#"verb="POST""#))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// The status and `Retry-After` of a tail of `hello` with `token`; the
/// connection is dropped after the head (an open tail streams on).
async fn open(addr: SocketAddr, token: &str) -> (u16, Option<String>) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /v1/tail/{NAMESPACE}/hello HTTP/1.1\r\nhost: tail\r\nauthorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the endpoint closed before its head");
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head[9..12].parse().unwrap();
    let retry_after = head
        .lines()
        .find_map(|line| line.strip_prefix("retry-after: "))
        .map(str::to_owned);
    (status, retry_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bogus_tokens_from_one_address_make_at_most_a_burst_of_token_reviews() {
    let cp = isolane_testenv::ControlPlane::start().await.unwrap();
    cp.create_namespace(NAMESPACE).await.unwrap();
    let token = reader(&cp).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (proxy, _registry) = proxy(ProxyConfig::default(), 50);
    let shutdown = CancellationToken::new();
    let access = std::sync::Arc::new(tail::access::Access::new(cp.client()));
    tokio::spawn(tail::serve(listener, proxy, access, shutdown.clone()));

    let before = token_reviews(&cp.client()).await;
    let started = Instant::now();
    assert_eq!(open(addr, &token).await, (200, None), "the reader tails");
    let (mut refused, mut throttled) = (0, 0);
    for n in 0..100 {
        match open(addr, &format!("bogus-{n}")).await {
            (401, None) => refused += 1,
            (429, Some(_)) => throttled += 1,
            other => panic!("bogus token {n}: {other:?}"),
        }
        // The reader's token, kept, opens tails from the same address.
        assert_eq!(open(addr, &token).await.0, 200);
    }
    let elapsed = started.elapsed();
    let reviews = token_reviews(&cp.client()).await - before;

    // The burst, plus what the bucket earned while the test ran.
    let budget = limit::PER_CLIENT.burst + limit::PER_CLIENT.per_second * elapsed.as_secs_f64();
    assert!(
        reviews <= budget.floor(),
        "{reviews} TokenReviews in {elapsed:?}, budget {budget}"
    );
    assert_eq!(
        f64::from(refused + 1),
        reviews,
        "one review per 401 and the reader's"
    );
    assert_eq!(refused + throttled, 100);
    assert!(throttled >= 80, "{throttled} of 100 throttled");
    shutdown.cancel();
}
