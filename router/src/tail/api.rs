//! The tail API, one group of the aggregated API server
//! ([`crate::aggregated`], `--tail-api-addr`): tails through the Kubernetes
//! API server, as an aggregated API (an `APIService` for
//! `tail.isolane.dev/v1alpha1`, as metrics-server serves `metrics.k8s.io`).
//!
//! `GET /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/workers/{name}/tail`
//! sent to the apiserver with any credential a kubeconfig holds (exec
//! plugins, client certificates, OIDC, tokens) is authenticated there,
//! authorized there (`get` on `workers/tail` in group `tail.isolane.dev`),
//! and proxied here over TLS with the apiserver's front-proxy client
//! certificate and the caller's identity in headers
//! ([`crate::front_proxy`]). The
//! router asks Kubernetes the tail endpoint's question too — may that
//! identity `get` `workers/tail` in group `isolane.dev` there — by a
//! SubjectAccessReview, cached as the tail endpoint caches it
//! ([`super::access`]), and streams the same JSON lines as the tail
//! endpoint ([`super::stream`]).
//!
//! The same group serves `d1databases/migrations`: `POST` (verb `create`)
//! applies a D1 database's migrations, `GET` names those applied
//! ([`super::d1_migrations::through_api`], `isolane d1 migrations
//! apply|list --remote`), with the D1 migrations endpoint's own review.
//!
//! Expected flow: TLS handshake (a client certificate chained to the
//! front-proxy CA, else no HTTP at all); the certificate's name is an
//! allowed one (else 401); `GET /apis/tail.isolane.dev/v1alpha1` answers
//! discovery; a tail or a migration needs a user header (else 401), then
//! the review.
//! Nothing here makes a TokenReview: the apiserver authenticated the
//! caller, and a request that did not come through it never gets past the
//! handshake.

pub mod discovery;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use tracing::{debug, info};

use super::TailBody;
use super::access::{Access, D1_MIGRATE, Refused, TAIL};
use super::d1_migrations;
use super::review::Reviewer;
use crate::Proxy;
use crate::front_proxy::FrontProxy;
use crate::kube_shapes::status;
use discovery::{GROUP, RESOURCE, SUBRESOURCE, VERSION};

/// The path prefix of the tail API's group.
pub const PREFIX: &str = "/apis/tail.isolane.dev/";

/// What a request to the tail API asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// `GET /apis/tail.isolane.dev/v1alpha1`.
    Discovery,
    /// A Worker's tail.
    Tail { namespace: &'a str, name: &'a str },
    /// A D1 database's migrations ([`super::d1_migrations`]).
    D1Migrations {
        namespace: &'a str,
        database: &'a str,
    },
}

/// The route of `path`, if it is one.
fn route(path: &str) -> Option<Route<'_>> {
    let rest = path
        .strip_prefix("/apis/")?
        .strip_prefix(GROUP)?
        .strip_prefix('/')?
        .strip_prefix(VERSION)?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::Discovery);
    }
    let rest = rest.strip_prefix("/namespaces/")?;
    let (namespace, rest) = rest.split_once('/')?;
    let (resource, rest) = rest.split_once('/')?;
    let (name, subresource) = rest.split_once('/')?;
    if (resource, subresource) == (RESOURCE, SUBRESOURCE) && super::is_worker(namespace, name) {
        return Some(Route::Tail { namespace, name });
    }
    let d1 = (D1_MIGRATE.resource, D1_MIGRATE.subresource);
    let valid =
        isolane_telemetry::is_dns_label(namespace) && isolane_worker::d1::is_database_name(name);
    ((resource, subresource) == d1 && valid).then_some(Route::D1Migrations {
        namespace,
        database: name,
    })
}

/// One request of the tail API's group, from the front proxy (the
/// aggregated API server checked it): a GET but for D1 migrations' POST.
pub async fn handle<B, R>(
    request: Request<B>,
    front: &FrontProxy,
    proxy: &Proxy,
    access: &Access<R>,
) -> Response<TailBody>
where
    B: hyper::body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
    R: Reviewer,
{
    let route = match route(request.uri().path()) {
        Some(Route::Discovery) => return discovery::resource_list(),
        Some(route) => route,
        None => {
            return status(
                StatusCode::NOT_FOUND,
                "not found: GET /apis/tail.isolane.dev/v1alpha1/namespaces/{namespace}/workers/{name}/tail, GET or POST …/namespaces/{namespace}/d1databases/{database}/migrations",
            );
        }
    };
    let Some(user) = front.identity(request.headers()) else {
        return status(
            StatusCode::UNAUTHORIZED,
            "no user: the Kubernetes API server names the caller in the request",
        );
    };
    let (namespace, name) = match route {
        Route::Tail { namespace, name } => (namespace, name),
        Route::D1Migrations {
            namespace,
            database,
        } => {
            let database = (namespace.to_owned(), database.to_owned());
            return d1_migrations::through_api(request, user, database, proxy, access).await;
        }
        Route::Discovery => return discovery::resource_list(),
    };
    if request.method() != http::Method::GET {
        return status(StatusCode::METHOD_NOT_ALLOWED, "a tail is a GET");
    }
    let user = match access.authorize_user(&TAIL, user, namespace, name).await {
        Ok(user) => user,
        Err(refused) => return refused_tail(&refused, namespace, name),
    };
    let worker_id = format!("{namespace}/{name}");
    info!(worker.id = %worker_id, user = %user, "tail opened through the Kubernetes API");
    super::stream(proxy, &worker_id)
}

/// A refused tail as a `Status`, logged as the tail endpoint logs it.
fn refused_tail(refused: &Refused, namespace: &str, name: &str) -> Response<TailBody> {
    if refused.is_notable() {
        info!(namespace, worker = name, error = %refused, "tail refused");
    } else {
        debug!(namespace, worker = name, error = %refused, "tail refused");
    }
    status(refused.status(), &refused.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_discovery_and_tails_and_nothing_else() {
        let base = "/apis/tail.isolane.dev/v1alpha1";
        assert_eq!(route(base), Some(Route::Discovery));
        assert_eq!(route(&format!("{base}/")), Some(Route::Discovery));
        assert_eq!(
            route(&format!("{base}/namespaces/team-a/workers/hello.v2/tail")),
            Some(Route::Tail {
                namespace: "team-a",
                name: "hello.v2"
            })
        );
        assert_eq!(
            route(&format!(
                "{base}/namespaces/team-a/d1databases/orders/migrations"
            )),
            Some(Route::D1Migrations {
                namespace: "team-a",
                database: "orders"
            })
        );
        for path in [
            "/apis",
            "/apis/tail.isolane.dev",
            "/apis/tail.isolane.dev/v1",
            "/apis/isolane.dev/v1alpha1/namespaces/a/workers/w/tail",
            &format!("{base}/namespaces/a/workers/w"),
            &format!("{base}/namespaces/a/workers/w/logs"),
            &format!("{base}/namespaces/A_/workers/w/tail"),
            &format!("{base}/namespaces/a/pods/w/tail"),
            &format!("{base}/namespaces/a/d1databases/orders"),
            &format!("{base}/namespaces/a/d1databases/orders/tail"),
            &format!("{base}/namespaces/a/workers/orders/migrations"),
            &format!("{base}/namespaces/A/d1databases/orders/migrations"),
            &format!("{base}/namespaces/a/d1databases/-x/migrations"),
            &format!("{base}/namespaces/a/d1databases/o/r/migrations"),
        ] {
            assert_eq!(route(path), None, "{path}");
        }
    }
}
