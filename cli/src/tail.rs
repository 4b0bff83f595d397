//! `isolane tail <worker>`: a Worker's invocations, live, from a cluster.
//!
//! The command reads the caller's own kubeconfig (its current context, or
//! `--context`) and, by default, asks the Kubernetes API server for
//! `GET /apis/tail.isolane.dev/v1alpha1/namespaces/{ns}/workers/{name}/tail`
//! with whatever credential the kubeconfig holds (exec plugins, client
//! certificates, tokens: kube-rs's client); the apiserver proxies it to the
//! router's tail API (an aggregated API, `isolane_router::tail::api`). With
//! `--endpoint`, it sends the user's bearer token to the router's own tail
//! endpoint instead. Either way the router asks Kubernetes whether the user
//! may `get` `workers/tail` in the namespace and then fans in the Worker's
//! events from every node (`isolane_router::tail`). Events print as
//! `isolane dev` prints them ([`TailFormat`]); the filters apply here.

use std::hash::{Hash, Hasher};

use anyhow::Context as _;
use bytes::Bytes;
use clap::Args;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use isolane_worker::{Inert, TailEvent, TailFormat};
use tokio::io::AsyncWriteExt;

use crate::cluster::{self, Body, refusal_message};

mod api;

#[derive(Debug, Args)]
pub struct TailArgs {
    /// The Worker's name.
    worker: String,
    /// Its namespace (default: the kubeconfig context's, else `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// The router's own tail endpoint, e.g. http://isolane-router-tail:8081
    /// (default: through the Kubernetes API server, the tail API).
    #[arg(long, env = "ISOLANE_TAIL_ENDPOINT")]
    endpoint: Option<String>,
    /// The kubeconfig context whose user's token is sent (default: current).
    #[arg(long)]
    context: Option<String>,
    /// `pretty` or `json` (one object a line).
    #[arg(long, default_value = "pretty")]
    format: TailFormat,
    /// Only invocations that ended `ok`, or with an `error` (an exception or
    /// a limit), or `canceled`.
    #[arg(long, value_parser = ["ok", "error", "canceled"])]
    status: Option<String>,
    /// Only these HTTP methods (repeatable).
    #[arg(long = "method")]
    methods: Vec<String>,
    /// Show this fraction of invocations (0 < R ≤ 1), chosen by request id.
    #[arg(long, default_value_t = 1.0, value_parser = parse_rate)]
    sampling_rate: f64,
    /// Only invocations whose console lines or exceptions contain this text.
    #[arg(long)]
    search: Option<String>,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if rate > 0.0 && rate <= 1.0 {
        Ok(rate)
    } else {
        Err("the sampling rate must be in (0, 1]".to_owned())
    }
}

/// The longest line kept from the endpoint (an event is at most ~130 KiB
/// of console text, plus exceptions).
const MAX_LINE: usize = 4 << 20;

/// Why `isolane tail` stopped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(String);

pub async fn run(args: TailArgs) -> anyhow::Result<()> {
    let config = cluster::kubeconfig(args.context.as_deref()).await?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let Some(endpoint) = &args.endpoint else {
        return api::run(config, &namespace, &args).await;
    };
    let token = cluster::bearer_token(&config.auth_info, "isolane tail")?;
    let uri: http::Uri = format!(
        "{}/v1/tail/{namespace}/{}",
        endpoint.trim_end_matches('/'),
        args.worker
    )
    .parse()
    .context("the tail endpoint is not a URL")?;
    let response = open(uri, &token).await?;
    let status = response.status();
    let body = response.into_body();
    if !status.is_success() {
        return Err(refusal(status, body).await.into());
    }
    print_events(body, &args).await
}

/// `GET uri` with the bearer `token`, over HTTP/1.1: the response head.
async fn open(uri: http::Uri, token: &str) -> anyhow::Result<http::Response<Incoming>> {
    cluster::send(http::Method::GET, uri, token, Bytes::new()).await
}

/// Why the endpoint refused: its JSON `error`, else its body as text, with
/// its control characters escaped (it came over the wire to a terminal).
async fn refusal<B: Body>(status: http::StatusCode, body: B) -> Refused {
    Refused(format!(
        "tail refused ({status}): {}",
        Inert(&refusal_message(body).await)
    ))
}

/// Prints the stream's events, one a line, as `args` filter and format them.
async fn print_events<B: Body>(mut body: B, args: &TailArgs) -> anyhow::Result<()> {
    let filter = Filter::from(args);
    let mut out = tokio::io::stdout();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.context("the tail stream broke")?.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(at) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            if let Some(text) = filter.print(args.format, &line) {
                out.write_all(text.as_bytes()).await?;
                out.flush().await?;
            }
        }
        if pending.len() > MAX_LINE {
            pending.clear();
        }
    }
    Ok(())
}

struct Filter {
    status: Option<String>,
    methods: Vec<String>,
    rate: f64,
    search: Option<String>,
}

impl From<&TailArgs> for Filter {
    fn from(args: &TailArgs) -> Self {
        Self {
            status: args.status.clone(),
            methods: args
                .methods
                .iter()
                .map(|m| m.to_ascii_uppercase())
                .collect(),
            rate: args.sampling_rate,
            search: args.search.clone(),
        }
    }
}

impl Filter {
    /// What to print for one line from the endpoint, if anything.
    fn print(&self, format: TailFormat, line: &[u8]) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(line).ok()?;
        if let Some(n) = value.get("dropped_events").and_then(|n| n.as_u64()) {
            return Some(format.dropped(n));
        }
        let event: TailEvent = serde_json::from_value(value).ok()?;
        self.keeps(&event).then(|| format.render(&event))
    }

    fn keeps(&self, event: &TailEvent) -> bool {
        let status = match self.status.as_deref() {
            Some("ok") => event.outcome == "ok",
            Some("canceled") => event.outcome == "canceled",
            Some(_) => event.outcome != "ok" && event.outcome != "canceled",
            None => true,
        };
        let method = self.methods.is_empty() || self.methods.contains(&event.method);
        let search = self.search.as_deref().is_none_or(|s| {
            event.logs.iter().any(|l| l.message.contains(s))
                || event
                    .exceptions
                    .iter()
                    .any(|e| e.message.contains(s) || e.name.contains(s))
        });
        status && method && search && self.sampled(&event.request_id)
    }

    fn sampled(&self, request_id: &str) -> bool {
        if self.rate >= 1.0 {
            return true;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        request_id.hash(&mut hasher);
        (hasher.finish() as f64 / u64::MAX as f64) < self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(outcome: &str, method: &str, line: &str) -> Vec<u8> {
        let mut json = serde_json::to_vec(&TailEvent {
            worker: "a/w".into(),
            namespace: "a".into(),
            revision: "r".into(),
            node: "n".into(),
            thread: 0,
            request_id: "1".into(),
            outcome: outcome.into(),
            status: 200,
            method: method.into(),
            url: "/".into(),
            timestamp_ms: 0,
            wall_ms: 1.0,
            cpu_ms: 1.0,
            logs: vec![isolane_worker::LogLine {
                level: "log".into(),
                message: line.into(),
                timestamp_ms: 0,
            }],
            exceptions: vec![],
            dropped_lines: 0,
        })
        .unwrap();
        json.push(b'\n');
        json
    }

    #[test]
    fn the_sampling_rate_keeps_that_share_of_request_ids_and_always_the_same() {
        let filter = |rate| Filter {
            status: None,
            methods: vec![],
            rate,
            search: None,
        };
        let ids: Vec<String> = (0..2000).map(|i| format!("req-{i}")).collect();
        let kept = |rate| ids.iter().filter(|id| filter(rate).sampled(id)).count();
        assert_eq!(kept(1.0), 2000);
        let tenth = kept(0.1);
        assert!((100..=300).contains(&tenth), "{tenth} of 2000 at 0.1");
        let half = kept(0.5);
        assert!((800..=1200).contains(&half), "{half} of 2000 at 0.5");
        // A request is in or out whoever tails it (the same hash every time),
        // and what a lower rate keeps a higher one keeps too.
        for id in &ids {
            assert_eq!(filter(0.5).sampled(id), filter(0.5).sampled(id));
            assert!(!filter(0.1).sampled(id) || filter(0.5).sampled(id));
        }
    }

    #[test]
    fn filters_by_status_method_and_search() {
        let filter = Filter {
            status: Some("error".into()),
            methods: vec!["POST".into()],
            rate: 1.0,
            search: Some("needle".into()),
        };
        let pretty = TailFormat::Pretty;
        assert!(
            filter
                .print(pretty, &event("exception", "POST", "a needle"))
                .is_some()
        );
        assert!(
            filter
                .print(pretty, &event("ok", "POST", "a needle"))
                .is_none()
        );
        assert!(
            filter
                .print(pretty, &event("exception", "GET", "a needle"))
                .is_none()
        );
        assert!(
            filter
                .print(pretty, &event("exception", "POST", "hay"))
                .is_none()
        );
        assert_eq!(
            filter.print(pretty, b"{\"dropped_events\":3,\"node\":\"n\"}\n"),
            Some(pretty.dropped(3))
        );
    }

    #[test]
    fn a_console_line_s_terminal_controls_print_escaped() {
        let filter = Filter {
            status: None,
            methods: vec![],
            rate: 1.0,
            search: None,
        };
        let attack = "\x1b[2J\x1b]0;pwned\x07\rfake\nline";
        let text = filter
            .print(TailFormat::Pretty, &event("ok", "GET", attack))
            .unwrap();
        assert!(
            !text.contains(['\x1b', '\x07', '\r']),
            "raw controls in {text:?}"
        );
        assert!(
            text.ends_with("\n  \\x1b[2J\\x1b]0;pwned\\x07\\rfake\\nline\n"),
            "{text:?}"
        );
        assert_eq!(text.lines().count(), 2, "{text:?}");
    }
}
