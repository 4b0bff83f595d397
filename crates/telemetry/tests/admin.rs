//! The admin server: routes as a function, then once over a real socket.

use std::time::Duration;

use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use isolane_telemetry::{AdminServer, Readiness};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

fn server() -> (AdminServer, Readiness, prometheus::IntCounter) {
    let registry = prometheus::Registry::new();
    let counter = prometheus::IntCounter::new("isolane_test_requests_total", "Requests seen.")
        .expect("a valid metric");
    registry
        .register(Box::new(counter.clone()))
        .expect("registered once");
    let readiness = Readiness::new();
    (
        AdminServer::new(registry, readiness.clone()),
        readiness,
        counter,
    )
}

fn request(method: Method, path: &str) -> Request<()> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(())
        .expect("a valid request")
}

async fn call(server: &AdminServer, method: Method, path: &str) -> (StatusCode, String) {
    let response = server.respond(&request(method, path));
    let status = response.status();
    let body = response.into_body().collect().await;
    let body = body.expect("infallible body").to_bytes();
    (status, String::from_utf8(body.to_vec()).expect("text"))
}

#[tokio::test]
async fn live_always() {
    let (server, readiness, _) = server();
    let _watch = readiness.register("watch");
    for path in ["/live", "/livez"] {
        assert_eq!(call(&server, Method::GET, path).await.0, StatusCode::OK);
        assert_eq!(call(&server, Method::HEAD, path).await.0, StatusCode::OK);
    }
}

#[tokio::test]
async fn ready_when_every_component_is() {
    let (server, readiness, _) = server();
    let watch = readiness.register("worker-watch");
    let leases = readiness.register("leases");
    for path in ["/ready", "/readyz"] {
        let (status, body) = call(&server, Method::GET, path).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "not ready: worker-watch, leases\n");
    }
    watch.set_ready();
    let (status, body) = call(&server, Method::GET, "/readyz").await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "not ready: leases\n")
    );
    leases.set_ready();
    assert_eq!(call(&server, Method::GET, "/ready").await.0, StatusCode::OK);
}

#[tokio::test]
async fn metrics_in_text_format() {
    let (server, _, counter) = server();
    counter.inc_by(3);
    let response = server.respond(&request(Method::GET, "/metrics"));
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()[header::CONTENT_TYPE],
        prometheus::TEXT_FORMAT
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        body.contains("# TYPE isolane_test_requests_total counter"),
        "{body}"
    );
    assert!(body.contains("isolane_test_requests_total 3"), "{body}");
}

#[tokio::test]
async fn metrics_in_openmetrics_format_when_the_scraper_asks() {
    let (server, _, counter) = server();
    counter.inc_by(3);
    let mut request = request(Method::GET, "/metrics");
    request.headers_mut().insert(
        header::ACCEPT,
        header::HeaderValue::from_static(
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4",
        ),
    );
    let response = server.respond(&request);
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text; version=1.0.0"),
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        body.contains("# TYPE isolane_test_requests counter"),
        "{body}"
    );
    assert!(body.contains("isolane_test_requests_total 3"), "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
}

#[tokio::test]
async fn unknown_paths_and_methods() {
    let (server, _, _) = server();
    assert_eq!(
        call(&server, Method::GET, "/").await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        call(&server, Method::GET, "/metricsz").await.0,
        StatusCode::NOT_FOUND
    );
    let response = server.respond(&request(Method::POST, "/ready"));
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()[header::ALLOW], "GET, HEAD");
}

/// One HTTP/1.1 request over a fresh connection; the raw response.
async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nhost: admin\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

#[tokio::test]
async fn serves_on_a_real_socket_and_shuts_down() {
    let (server, readiness, counter) = server();
    let component = readiness.register("startup");
    counter.inc();
    let bound = server.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = bound.local_addr();
    assert_ne!(addr.port(), 0);
    let token = CancellationToken::new();
    let serving = tokio::spawn(bound.serve(token.clone().cancelled_owned()));

    assert!(get(addr, "/livez").await.starts_with("HTTP/1.1 200"));
    let not_ready = get(addr, "/readyz").await;
    assert!(not_ready.starts_with("HTTP/1.1 503"), "{not_ready}");
    assert!(not_ready.ends_with("not ready: startup\n"), "{not_ready}");
    component.set_ready();
    assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
    assert!(
        get(addr, "/metrics")
            .await
            .contains("isolane_test_requests_total 1")
    );

    token.cancel();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server stops once cancelled")
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still listening"
    );
}

#[tokio::test]
async fn bind_errors_name_the_address() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    let (server, _, _) = server();
    let error = server.bind(addr).await.unwrap_err();
    assert_eq!(error.kind(), "bind");
    assert!(error.to_string().contains(&addr.to_string()), "{error}");
}
