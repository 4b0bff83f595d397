//! Helpers shared by the router tests.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use isolane_router::metrics::RouterMetrics;
use isolane_router::routes::RoutableWorker;
use isolane_router::{Proxy, ProxyConfig, ResponseBody};
use isolane_worker::{Claim, Route, WorkerKey};
use prometheus::Registry;

/// A proxy with its own registry.
pub fn proxy(config: ProxyConfig, max_worker_series: usize) -> (Proxy, Registry) {
    let registry = Registry::new();
    let metrics = Arc::new(RouterMetrics::register(&registry, max_worker_series).unwrap());
    (Proxy::builder(config, metrics).build(), registry)
}

/// A routable worker `id` at `revision`, answering `host` under `prefix`.
pub fn worker(id: &str, revision: &str, host: &str, prefix: &str) -> RoutableWorker {
    let (namespace, name) = id.split_once('/').expect("an id is namespace/name");
    RoutableWorker {
        claim: Claim {
            worker: WorkerKey::new(namespace, name),
            since: None,
            routes: vec![Route::new(host, prefix)],
        },
        split: isolane_router::split::Split::single(revision),
        triggers: None,
    }
}

/// A request to `http://{host}{path}` with a complete `body` and extra headers.
pub fn request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::new(body.into())).unwrap()
}

/// A GET of `path` on `host` with extra headers.
pub fn get(host: &str, path: &str, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    request("GET", host, path, headers, Bytes::new())
}

/// The whole response body (fails the test on a body error).
pub async fn body(response: Response<ResponseBody>) -> Bytes {
    response.into_body().collect().await.unwrap().to_bytes()
}

/// A header as text.
pub fn header<'a>(response: &'a Response<ResponseBody>, name: &str) -> Option<&'a str> {
    response.headers().get(name).map(|v| v.to_str().unwrap())
}

/// A worker id in namespace `ns` whose first-choice node is `node`.
pub fn worker_preferring(proxy: &Proxy, node: &str) -> String {
    let fleet = proxy.fleet();
    (0..10_000)
        .map(|i| format!("ns/w{i}"))
        .find(|id| fleet.primary(id) == Some(node))
        .expect("some worker prefers every node")
}

/// The registry in the text exposition format.
pub fn exposition(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus::TextEncoder::new()
        .encode_utf8(&registry.gather(), &mut text)
        .unwrap();
    text
}

/// The value of the first sample of `name` (for a histogram, `name_count`)
/// whose labels include `labels`, from the text exposition.
pub fn sample(registry: &Registry, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let text = exposition(registry);
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(series, _)| {
            let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
            metric == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, value)| value.parse().unwrap())
}

/// The distinct values of label `label` on samples of `name`.
pub fn label_values(registry: &Registry, name: &str, label: &str) -> Vec<String> {
    let text = exposition(registry);
    let mut values: Vec<String> = text
        .lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .filter_map(|line| {
            let start = line.find(&format!("{label}=\""))? + label.len() + 2;
            let end = start + line[start..].find('"')?;
            Some(line[start..end].to_owned())
        })
        .collect();
    values.sort();
    values.dedup();
    values
}

/// A local control plane with the Worker CRD installed and served, and the
/// given namespaces created.
pub async fn control_plane_with_workers(namespaces: &[&str]) -> isolane_testenv::ControlPlane {
    use kube::api::ListParams;
    let cp = isolane_testenv::ControlPlane::start().await.unwrap();
    cp.apply_file(concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/worker.yaml"))
        .await
        .unwrap();
    for namespace in namespaces {
        cp.create_namespace(namespace).await.unwrap();
    }
    // The CRD is served once it is established.
    let workers: kube::Api<isolane_crds::Worker> = kube::Api::all(cp.client());
    isolane_testenv::wait_until(
        "the Worker CRD to be served",
        Duration::from_secs(20),
        || async { workers.list(&ListParams::default().limit(1)).await },
    )
    .await;
    cp
}
