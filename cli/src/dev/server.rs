//! The HTTP/1.1 and h2c front end of `isolane dev`: hyper, one engine call per
//! request, the worker's thread chosen by a hash of its id.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use isolane_engine::{Body, Engine, REASON_HEADER};
use isolane_telemetry::edge;

use super::Routes;

/// How long in-flight connections get after Ctrl-C.
const GRACE: Duration = Duration::from_secs(10);

pub async fn serve(listen: SocketAddr, engine: Engine, routes: Arc<Routes>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    tracing::info!(address = %local, url = %format!("http://{local}/"), threads = engine.threads(), "listening");
    // Silent clients cannot hold a connection open (`isolane_telemetry::edge`).
    let builder = edge::server_builder(edge::HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    // The cron schedules run beside the server, until it stops.
    let mut schedules = tokio::task::JoinSet::new();
    for (bundle, schedule) in routes.schedules() {
        tracing::info!(worker.id = %bundle.id, cron = schedule.expr(), "cron schedule");
        schedules.spawn(super::scheduled::run_schedule(
            engine.clone(),
            bundle.clone(),
            schedule.clone(),
        ));
    }
    let mut stop = std::pin::pin!(isolane_telemetry::shutdown_signal());
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
            _ = &mut stop => break,
        };
        let engine = engine.clone();
        let routes = routes.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            if !edge::first_bytes(&stream, edge::HEADER_READ_TIMEOUT).await {
                return;
            }
            let service = service_fn(move |request| {
                let engine = engine.clone();
                let routes = routes.clone();
                async move { Ok::<_, Infallible>(handle(&engine, &routes, request).await) }
            });
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(error = %error, "connection ended with an error");
            }
        });
    }
    tracing::info!("shutting down");
    drop(listener);
    if tokio::time::timeout(GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the grace period");
    }
    Ok(())
}

async fn handle(
    engine: &Engine,
    routes: &Routes,
    request: http::Request<Incoming>,
) -> http::Response<Body> {
    let host = request
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().host())
        .unwrap_or("")
        .to_owned();
    let hops = request
        .headers()
        .get(isolane_engine::HOPS_HEADER)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u32>().ok())
        .unwrap_or(0);
    if hops > MAX_HOPS {
        return loop_detected(hops);
    }
    let Some(bundle) = routes.resolve(&host, request.uri().path()) else {
        return no_route(&host, request.uri().path());
    };
    if request.uri().path() == super::scheduled::PATH {
        return super::scheduled::on_demand(engine, bundle, request.uri().query()).await;
    }
    let threads = u32::try_from(engine.threads()).unwrap_or(u32::MAX);
    let thread = isolane_placement::thread_for(&bundle.id, threads) as usize;
    let request = request.map(Body::wrap);
    match engine.execute(thread, bundle.clone(), request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::info!(worker.id = %bundle.id, thread, reason = error.reason(), %error, "request failed");
            error.to_response()
        }
    }
}

/// Requests that looped through workers more often than this are refused,
/// as the router does (`isolane_router::proxy::MAX_HOPS`).
const MAX_HOPS: u32 = 4;

fn loop_detected(hops: u32) -> http::Response<Body> {
    let body = format!(
        "{{\"error\":\"the request looped through workers {hops} times\",\"reason\":\"loop_detected\"}}\n"
    );
    let mut response = http::Response::new(Body::from(body));
    *response.status_mut() = http::StatusCode::LOOP_DETECTED;
    response.headers_mut().insert(
        REASON_HEADER,
        http::HeaderValue::from_static("loop_detected"),
    );
    response
}

fn no_route(host: &str, path: &str) -> http::Response<Body> {
    let body = format!(
        "{{\"error\":\"no worker is routed for this host and path\",\"host\":{host:?},\"path\":{path:?},\"reason\":\"no_route\"}}\n"
    );
    let mut response = http::Response::new(Body::from(body));
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
        .headers_mut()
        .insert(REASON_HEADER, http::HeaderValue::from_static("no_route"));
    response
}
