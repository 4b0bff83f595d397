//! A real Prometheus (Debian's `prometheus`, installed by
//! hack/install-deps.sh) scraping admin ports every second, and its HTTP API.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use isolane_testenv::{Process, wait_until};
use serde_json::Value;

use crate::http;

/// What to run: the scrape targets (job name, admin address), rule files to
/// evaluate every second, and `--enable-feature` flags (`exemplar-storage`).
#[derive(Debug, Default)]
pub struct PrometheusOptions<'a> {
    pub targets: &'a [(&'a str, SocketAddr)],
    pub rules: Option<&'a Path>,
    pub features: &'a [&'a str],
}

/// Prometheus on `listen`, its config and data in `dir`, ready (its
/// `/-/ready` answers 200) when this returns.
pub async fn start(dir: &Path, listen: SocketAddr, options: &PrometheusOptions<'_>) -> Process {
    let mut config =
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            .to_owned();
    if let Some(rules) = options.rules {
        config.push_str(&format!("rule_files:\n  - {}\n", rules.display()));
    }
    config.push_str("scrape_configs:\n");
    for (job, addr) in options.targets {
        config.push_str(&format!(
            "  - job_name: {job}\n    static_configs:\n      - targets: ['{addr}']\n"
        ));
    }
    let config_path = dir.join("prometheus.yml");
    std::fs::write(&config_path, config).expect("write prometheus.yml");
    let mut args = vec![
        format!("--config.file={}", config_path.display()),
        format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
        format!("--web.listen-address={listen}"),
        "--log.level=warn".to_owned(),
    ];
    if !options.features.is_empty() {
        args.push(format!("--enable-feature={}", options.features.join(",")));
    }
    let mut prometheus = Process::spawn(
        "prometheus",
        // setpriv finds it on PATH (Debian: /usr/bin/prometheus).
        Path::new("prometheus"),
        args,
        &[],
        &dir.join("prometheus.log"),
    )
    .expect("prometheus starts");
    wait_until("Prometheus to be ready", Duration::from_secs(60), || {
        let exited = prometheus.try_exit();
        async move {
            assert!(exited.is_none(), "prometheus exited: {exited:?}");
            let response = http::get(listen, "/-/ready").await?;
            (response.status == 200).then_some(())
        }
    })
    .await;
    prometheus
}

/// `GET path` on Prometheus's HTTP API, parsed.
pub async fn api(prometheus: SocketAddr, path: &str) -> Option<Value> {
    let response = http::get(prometheus, path).await?;
    serde_json::from_str(&response.body).ok()
}

/// The instant-query result of `query`, or the API's error.
pub async fn query(prometheus: SocketAddr, query: &str) -> Result<Vec<Value>, String> {
    let params = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("query", query)
        .finish();
    let body = api(prometheus, &format!("/api/v1/query?{params}"))
        .await
        .ok_or("no answer")?;
    if body["status"] != "success" {
        return Err(format!("{}: {}", body["errorType"], body["error"]));
    }
    Ok(body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The trace ids of the exemplars Prometheus stored for the series `query`
/// selects (`/api/v1/query_exemplars`, over the last hour).
pub async fn exemplar_trace_ids(
    prometheus: SocketAddr,
    query: &str,
) -> Result<Vec<String>, String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let start = now.saturating_sub(3600).to_string();
    let end = (now + 60).to_string();
    let params = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("query", query)
        .append_pair("start", &start)
        .append_pair("end", &end)
        .finish();
    let body = api(prometheus, &format!("/api/v1/query_exemplars?{params}"))
        .await
        .ok_or("no answer")?;
    if body["status"] != "success" {
        return Err(format!("{}: {}", body["errorType"], body["error"]));
    }
    Ok(body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|series| series["exemplars"].as_array().cloned().unwrap_or_default())
        .filter_map(|exemplar| exemplar["labels"]["trace_id"].as_str().map(str::to_owned))
        .collect())
}
