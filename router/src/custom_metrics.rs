//! The custom metrics API (`custom.metrics.k8s.io/v1beta2`), one group of
//! the aggregated API server ([`crate::aggregated`]): the runtime nodes'
//! pressure ([`crate::pressure`]) in the shape a HorizontalPodAutoscaler of
//! type `Pods` reads (docs/autoscaling.md).
//!
//! `GET .../namespaces/{ns}/pods/*/{metric}` answers a `MetricValueList`
//! with one item per node the router sampled, each describing that node's
//! pod (the chart names a node's Lease after its pod, in the nodes'
//! namespace); `.../pods/{name}/{metric}` answers that pod's alone. Another
//! namespace has no nodes: an empty list. A `labelSelector` is not
//! evaluated (the router does not read pods); the HPA controller keeps the
//! values of the pods its own selector matches. The apiserver authorized
//! the caller (`get` on `pods.custom.metrics.k8s.io`) before proxying.

use http::{Response, StatusCode};

use crate::kube_shapes::{Body, json, status};
use crate::pressure::{NodePressure, Pressure};

/// The group and version served.
pub const GROUP: &str = "custom.metrics.k8s.io";
pub const VERSION: &str = "v1beta2";
/// The path prefix of the group.
pub const PREFIX: &str = "/apis/custom.metrics.k8s.io/";

/// A pressure signal served per node pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Warm isolates evicted per second because the warm sets were full
    /// (by count or by heap): more Workers are hot than the node holds.
    WarmSetEvictions,
    /// Requests in flight per engine thread, running or waiting for it.
    InFlightPerThread,
}

impl Metric {
    pub const ALL: [Metric; 2] = [Metric::WarmSetEvictions, Metric::InFlightPerThread];

    /// Its name in the API.
    pub fn name(self) -> &'static str {
        match self {
            Metric::WarmSetEvictions => "warm_set_evictions_per_second",
            Metric::InFlightPerThread => "in_flight_requests_per_thread",
        }
    }

    fn of(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    fn value(self, node: &NodePressure) -> f64 {
        match self {
            Metric::WarmSetEvictions => node.evictions_per_second,
            Metric::InFlightPerThread => node.in_flight_per_thread,
        }
    }
}

/// What a request to the group asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// `GET /apis/custom.metrics.k8s.io/v1beta2`.
    Discovery,
    /// One metric of the pods of a namespace (`pod` `None` for `*`).
    Pods {
        namespace: &'a str,
        pod: Option<&'a str>,
        metric: &'a str,
    },
}

/// The route of `path`, if it is one.
fn route(path: &str) -> Option<Route<'_>> {
    let rest = path.strip_prefix(PREFIX)?.strip_prefix(VERSION)?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::Discovery);
    }
    let rest = rest.strip_prefix("/namespaces/")?;
    let mut parts = rest.split('/');
    let (namespace, pods, pod, metric) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if pods != "pods" || parts.next().is_some() || namespace.is_empty() || metric.is_empty() {
        return None;
    }
    // The apiserver proxies `*` percent-encoded.
    let every = matches!(pod, "*" | "%2A" | "%2a");
    let pod = (!every).then_some(pod);
    Some(Route::Pods {
        namespace,
        pod,
        metric,
    })
}

/// One GET of the group, from the front proxy; the nodes live in
/// `nodes_namespace`.
pub fn handle(path: &str, pressure: &Pressure, nodes_namespace: &str) -> Response<Body> {
    match route(path) {
        Some(Route::Discovery) => resource_list(),
        Some(Route::Pods {
            namespace,
            pod,
            metric,
        }) => {
            let Some(metric) = Metric::of(metric) else {
                return status(
                    StatusCode::NOT_FOUND,
                    &format!("no metric {metric} for pods: the router serves {}", names()),
                );
            };
            let nodes = if namespace == nodes_namespace {
                pressure.nodes()
            } else {
                Vec::new()
            };
            pods(namespace, pod, metric, &nodes)
        }
        None => status(
            StatusCode::NOT_FOUND,
            "not found: GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/pods/{name or *}/{metric}",
        ),
    }
}

fn names() -> String {
    Metric::ALL.map(Metric::name).join(", ")
}

/// The `MetricValueList` of `metric` for `pod` (or every node) in
/// `namespace`; a named pod that is no node is not found.
fn pods(
    namespace: &str,
    pod: Option<&str>,
    metric: Metric,
    nodes: &[NodePressure],
) -> Response<Body> {
    let items: Vec<serde_json::Value> = nodes
        .iter()
        .filter(|node| pod.is_none_or(|pod| pod == node.node))
        .map(|node| metric_value(namespace, metric, node))
        .collect();
    if let (Some(pod), true) = (pod, items.is_empty()) {
        return status(
            StatusCode::NOT_FOUND,
            &format!(
                "no {} for pod {namespace}/{pod}: not a node the router sampled",
                metric.name()
            ),
        );
    }
    let list = serde_json::json!({
        "kind": "MetricValueList",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {},
        "items": items,
    });
    json(StatusCode::OK, &list)
}

/// One node's value, describing its pod.
fn metric_value(namespace: &str, metric: Metric, node: &NodePressure) -> serde_json::Value {
    let timestamp = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(node.sampled_at);
    serde_json::json!({
        "describedObject": {
            "kind": "Pod",
            "namespace": namespace,
            "name": node.node,
            "apiVersion": "/v1",
        },
        "metric": { "name": metric.name() },
        "timestamp": timestamp,
        "windowSeconds": node.window.as_secs().max(1),
        "value": quantity(metric.value(node)),
    })
}

/// `value` as a Kubernetes quantity in thousandths (`1500m`), as
/// metrics-server and the adapters write fractional values.
fn quantity(value: f64) -> String {
    let milli = (value * 1000.0).round().max(0.0);
    format!("{milli:.0}m")
}

/// `GET /apis/custom.metrics.k8s.io/v1beta2`: each metric as a namespaced
/// resource `pods/{metric}` with the verb `get`, as custom metrics
/// adapters list theirs.
fn resource_list() -> Response<Body> {
    let resources: Vec<serde_json::Value> = Metric::ALL
        .iter()
        .map(|metric| {
            serde_json::json!({
                "name": format!("pods/{}", metric.name()),
                "singularName": "",
                "namespaced": true,
                "kind": "MetricValueList",
                "verbs": ["get"],
            })
        })
        .collect();
    let list = serde_json::json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": resources,
    });
    json(StatusCode::OK, &list)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use http_body_util::BodyExt;

    use super::*;

    #[test]
    fn routes_discovery_and_pod_metrics_and_nothing_else() {
        let base = "/apis/custom.metrics.k8s.io/v1beta2";
        assert_eq!(route(base), Some(Route::Discovery));
        assert_eq!(route(&format!("{base}/")), Some(Route::Discovery));
        assert_eq!(
            route(&format!("{base}/namespaces/isolane/pods/*/m")),
            Some(Route::Pods {
                namespace: "isolane",
                pod: None,
                metric: "m"
            })
        );
        assert_eq!(
            route(&format!("{base}/namespaces/isolane/pods/%2A/m")),
            route(&format!("{base}/namespaces/isolane/pods/*/m")),
            "as the apiserver proxies it"
        );
        assert_eq!(
            route(&format!("{base}/namespaces/isolane/pods/node-0/m")),
            Some(Route::Pods {
                namespace: "isolane",
                pod: Some("node-0"),
                metric: "m"
            })
        );
        for path in [
            "/apis/custom.metrics.k8s.io/v1beta1",
            &format!("{base}/namespaces/isolane/services/*/m"),
            &format!("{base}/namespaces/isolane/pods/*"),
            &format!("{base}/namespaces/isolane/pods/*/m/x"),
            &format!("{base}/namespaces//pods/*/m"),
        ] {
            assert_eq!(route(path), None, "{path}");
        }
    }

    fn node(name: &str, rate: f64) -> NodePressure {
        NodePressure {
            node: name.to_owned(),
            evictions_per_second: rate,
            window: Duration::from_secs(25),
            in_flight_per_thread: 0.5,
            sampled_at: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        }
    }

    async fn body(response: Response<Body>) -> serde_json::Value {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_list_describes_each_node_pod() {
        let nodes = [node("node-a", 12.3456), node("node-b", 0.0)];
        let list = body(pods("isolane", None, Metric::WarmSetEvictions, &nodes)).await;
        assert_eq!(list["kind"], "MetricValueList");
        assert_eq!(list["apiVersion"], "custom.metrics.k8s.io/v1beta2");
        let first = &list["items"][0];
        assert_eq!(first["describedObject"]["kind"], "Pod");
        assert_eq!(first["describedObject"]["name"], "node-a");
        assert_eq!(first["describedObject"]["namespace"], "isolane");
        assert_eq!(first["metric"]["name"], "warm_set_evictions_per_second");
        assert_eq!(first["value"], "12346m");
        assert_eq!(first["windowSeconds"], 25);
        assert_eq!(first["timestamp"], "1970-01-01T00:00:00Z");
        assert_eq!(list["items"][1]["value"], "0m");
        let one = pods("isolane", Some("node-b"), Metric::InFlightPerThread, &nodes);
        let one = body(one).await;
        assert_eq!(one["items"].as_array().unwrap().len(), 1);
        assert_eq!(one["items"][0]["value"], "500m");
        let missing = pods("isolane", Some("node-c"), Metric::InFlightPerThread, &nodes);
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn discovery_lists_every_metric_and_other_namespaces_are_empty() {
        let list = body(handle(
            "/apis/custom.metrics.k8s.io/v1beta2",
            &Pressure::default(),
            "isolane",
        ))
        .await;
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "pods/warm_set_evictions_per_second",
                "pods/in_flight_requests_per_thread"
            ]
        );
        let path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/other/pods/*/in_flight_requests_per_thread";
        let empty = body(handle(path, &Pressure::default(), "isolane")).await;
        assert_eq!(empty["items"], serde_json::json!([]));
        let unknown = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/isolane/pods/*/cpu";
        let refused = handle(unknown, &Pressure::default(), "isolane");
        assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    }
}
