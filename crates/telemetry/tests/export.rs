//! Spans reach a real OpenTelemetry Collector (isolane_testenv::Collector)
//! over both OTLP transports, with the parent a W3C `traceparent` named.

use std::time::Duration;

use isolane_telemetry::propagation;
use isolane_telemetry::traces::{Exporter, SamplerSetting, TraceSettings, Transport};
use isolane_testenv::{Collector, wait_until_blocking};
use tracing_subscriber::layer::SubscriberExt as _;

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

fn settings(endpoint: String, transport: Transport) -> TraceSettings {
    TraceSettings {
        endpoint,
        endpoint_is_signal: false,
        transport,
        service_name: "isolane-export-test".to_owned(),
        sampler: SamplerSetting::ParentBasedAlwaysOn,
    }
}

/// Sends one span, child of the client's `traceparent`, through `settings`;
/// returns the `traceparent` a call made from it would carry.
fn send(settings: &TraceSettings, name: &'static str) -> String {
    let exporter = Exporter::start(settings).expect("the exporter starts");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(exporter.tracer()));
    let mut outgoing = String::new();
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::trace_span!("export.test", test.name = name);
        let incoming = format!("00-{TRACE}-{PARENT}-01");
        propagation::set_parent_from(&span, |key| {
            (key == "traceparent").then_some(incoming.as_str())
        });
        propagation::inject(&span, |key, value| {
            if key == "traceparent" {
                outgoing = value;
            }
        });
    });
    // Dropping the exporter flushes it.
    drop(exporter);
    outgoing
}

fn check(collector: &Collector, name: &str, outgoing: &str) {
    let span = wait_until_blocking("the span at the collector", Duration::from_secs(30), || {
        collector
            .spans()
            .into_iter()
            .find(|s| s.attributes.get("test.name").map(String::as_str) == Some(name))
    });
    assert_eq!(span.trace_id, TRACE, "{span:#?}");
    assert_eq!(span.parent_span_id, PARENT, "{span:#?}");
    assert_eq!(span.service, "isolane-export-test");
    assert_eq!(outgoing, format!("00-{TRACE}-{}-01", span.span_id));
}

#[test]
fn spans_reach_a_collector_over_grpc_and_http_protobuf() {
    let collector = Collector::start().expect("the collector starts");
    let grpc = send(
        &settings(collector.grpc_endpoint(), Transport::Grpc),
        "grpc",
    );
    check(&collector, "grpc", &grpc);
    let http = send(
        &settings(collector.http_endpoint(), Transport::HttpProtobuf),
        "http",
    );
    check(&collector, "http", &http);
}
