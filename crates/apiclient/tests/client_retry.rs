//! The binaries' client against a fake apiserver that refuses for now
//! (429 "storage is (re)initializing", `Retry-After: 1`, as kube-apiserver
//! answers while a watch cache (re)initializes): a few quick retries, then
//! the error reaches the caller. With kube's default retry the same list
//! was still unanswered after 45 s (`isolane_apiclient` docs).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use isolane_apiclient::{MAX_RETRIES, client};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const REFUSED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"storage is (re)initializing","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#;
const LISTED: &str =
    r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}"#;

/// A fake apiserver that answers its first `refusals` requests 429 and the
/// rest with an empty ConfigMap list; counts the requests.
async fn fake_apiserver(refusals: usize) -> (kube::Config, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, Arc::clone(&counted), refusals));
        }
    });
    let config = kube::Config::new(url.parse().expect("url"));
    (config, requests)
}

/// Answers each request head on `socket` (GETs: no bodies).
async fn serve(mut socket: TcpStream, requests: Arc<AtomicUsize>, refusals: usize) {
    let mut read = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        let Ok(n) = socket.read(&mut buffer).await else {
            return;
        };
        if n == 0 {
            return;
        }
        read.extend_from_slice(&buffer[..n]);
        while let Some(end) = read.windows(4).position(|window| window == b"\r\n\r\n") {
            read.drain(..end + 4);
            let answer = if requests.fetch_add(1, Ordering::SeqCst) < refusals {
                format!(
                    "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{REFUSED}",
                    REFUSED.len()
                )
            } else {
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{LISTED}",
                    LISTED.len()
                )
            };
            if socket.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// Far longer than the retries take (3 × 1 s), far shorter than kube's
/// default retry of the same answers.
const DEADLINE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_list_refused_for_now_is_retried_a_few_times_then_fails() {
    let (config, requests) = fake_apiserver(usize::MAX).await;
    let api: Api<ConfigMap> = Api::all(client(config).expect("client"));
    let listed = tokio::time::timeout(DEADLINE, api.list(&ListParams::default()))
        .await
        .expect("the list gives up within the deadline");
    match listed {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 429),
        other => panic!("expected the 429 to reach the caller, got {other:?}"),
    }
    let sent = requests.load(Ordering::SeqCst);
    assert_eq!(sent, 1 + MAX_RETRIES as usize, "requests sent");
}

#[tokio::test]
async fn a_list_refused_twice_succeeds_on_a_retry() {
    let (config, requests) = fake_apiserver(2).await;
    let api: Api<ConfigMap> = Api::all(client(config).expect("client"));
    let listed = tokio::time::timeout(DEADLINE, api.list(&ListParams::default()))
        .await
        .expect("the list answers within the deadline")
        .expect("the third request lists");
    assert!(listed.items.is_empty());
    assert_eq!(requests.load(Ordering::SeqCst), 3, "requests sent");
}
