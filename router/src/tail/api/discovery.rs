//! What the tail API tells the apiserver and clients about itself: an
//! `APIResourceList`, so that the apiserver's discovery, kubectl and
//! kube-rs read it as they read any API's.

use http::{Response, StatusCode};

use crate::kube_shapes::{Body, json};

/// The API group of the tail API: a group of its own beside the CRD's
/// `isolane.dev` (an APIService serves a whole group-version, and
/// `isolane.dev/v1alpha1` is the CRD's).
pub const GROUP: &str = "tail.isolane.dev";
/// Its one version.
pub const VERSION: &str = "v1alpha1";
/// The resource and subresource a tail is (`get` on `workers/tail`).
pub const RESOURCE: &str = "workers";
pub const SUBRESOURCE: &str = "tail";

/// `GET /apis/tail.isolane.dev/v1alpha1`: two namespaced subresources,
/// `workers/tail` with the one verb `get`, and `d1databases/migrations`
/// with `get` (name those applied) and `create` (apply). The apiserver's
/// discovery lists them (with parents it makes up), so `kubectl
/// api-resources` shows them.
pub fn resource_list() -> Response<Body> {
    let d1 = &crate::tail::access::D1_MIGRATE;
    let list = serde_json::json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [{
            "name": format!("{RESOURCE}/{SUBRESOURCE}"),
            "singularName": "",
            "namespaced": true,
            "kind": "WorkerTail",
            "verbs": ["get"],
        }, {
            "name": format!("{}/{}", d1.resource, d1.subresource),
            "singularName": "",
            "namespaced": true,
            "kind": "D1Migrations",
            "verbs": ["get", "create"],
        }],
    });
    json(StatusCode::OK, &list)
}
