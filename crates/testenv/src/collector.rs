//! A throwaway OpenTelemetry Collector for trace tests: the binary
//! `hack/build-otelcol.sh` caches (an OTLP receiver, gRPC and HTTP, on
//! free ports of 127.0.0.1, and the file exporter), killed on drop. Every
//! span it receives is written to a JSON-lines file in OTLP's JSON
//! encoding, which [`Collector::spans`] reads back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use crate::Error;
use crate::component::Component;
use crate::config::Config;
use crate::port::free_port;
use crate::process::Process;

/// The collector release `hack/build-otelcol.sh` builds.
pub const OTELCOL_VERSION: &str = "v0.165.0";
/// How long the collector may take to listen.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running collector.
pub struct Collector {
    process: Process,
    grpc_port: u16,
    http_port: u16,
    spans_file: PathBuf,
    _dir: TempDir,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("grpc_port", &self.grpc_port)
            .field("http_port", &self.http_port)
            .finish_non_exhaustive()
    }
}

/// One span as the collector received it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceivedSpan {
    /// `service.name` of the process that sent it.
    pub service: String,
    pub name: String,
    /// Lower-case hex, as in `traceparent`.
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    /// OTLP's `SpanKind` number (2 server, 3 client).
    pub kind: u64,
    /// Attribute values as text (numbers and booleans formatted).
    pub attributes: BTreeMap<String, String>,
}

// === impl Collector ===

impl Collector {
    /// Starts the cached collector; returns once both receivers listen.
    pub fn start() -> Result<Self, Error> {
        let binary = Config::from_env().cached("otelcol", OTELCOL_VERSION)?;
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let grpc_port = free_port().map_err(Error::FreePort)?;
        let http_port = free_port().map_err(Error::FreePort)?;
        let spans_file = dir.path().join("spans.jsonl");
        let config = dir.path().join("otelcol.yaml");
        let text = config_yaml(grpc_port, http_port, &spans_file);
        std::fs::write(&config, text).map_err(|source| Error::WriteFile {
            path: config.clone(),
            source,
        })?;
        let log = dir.path().join("otelcol.log");
        let args = [format!("--config=file:{}", config.display())];
        let mut process = Process::spawn("otelcol", &binary, args, &[], &log)?;
        process.wait_listening(Component::Collector, &[grpc_port, http_port], READY_WITHIN)?;
        Ok(Self {
            process,
            grpc_port,
            http_port,
            spans_file,
            _dir: dir,
        })
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for OTLP over gRPC.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// `OTEL_EXPORTER_OTLP_ENDPOINT` for OTLP over HTTP (a base URL).
    pub fn http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Every span received so far (written out within 100 ms of arrival).
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let text = std::fs::read_to_string(&self.spans_file).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .flat_map(|batch| spans_of(&batch))
            .collect()
    }

    /// The collector's process (its log names a refused export).
    pub fn process(&self) -> &Process {
        &self.process
    }
}

fn config_yaml(grpc_port: u16, http_port: u16, spans_file: &Path) -> String {
    format!(
        "receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{grpc_port}
      http:
        endpoint: 127.0.0.1:{http_port}
exporters:
  file:
    path: {path}
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
",
        path = spans_file.display()
    )
}

/// The spans of one exported batch (`ExportTraceServiceRequest` as JSON).
fn spans_of(batch: &Value) -> Vec<ReceivedSpan> {
    let list = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut spans = Vec::new();
    for resource in list(batch, "resourceSpans") {
        let service = attributes(resource.get("resource").unwrap_or(&Value::Null))
            .remove("service.name")
            .unwrap_or_default();
        for scope in list(&resource, "scopeSpans") {
            for span in list(&scope, "spans") {
                let text = |key: &str| {
                    span.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                spans.push(ReceivedSpan {
                    service: service.clone(),
                    name: text("name"),
                    trace_id: text("traceId").to_ascii_lowercase(),
                    span_id: text("spanId").to_ascii_lowercase(),
                    parent_span_id: text("parentSpanId").to_ascii_lowercase(),
                    kind: span.get("kind").and_then(Value::as_u64).unwrap_or(0),
                    attributes: attributes(&span),
                });
            }
        }
    }
    spans
}

/// An OTLP JSON `attributes` list as name → text.
fn attributes(owner: &Value) -> BTreeMap<String, String> {
    let Some(list) = owner.get("attributes").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    list.iter()
        .filter_map(|kv| {
            let key = kv.get("key")?.as_str()?.to_owned();
            let value = kv.get("value")?.as_object()?.values().next()?;
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some((key, text))
        })
        .collect()
}
