//! The Isolane router: HTTP ingress in front of the runtime nodes.
//!
//! A request comes in over HTTP/1.1 or HTTP/2 ([`server`]), is matched to a
//! Worker by host and longest path prefix ([`routes`]), placed on a runtime node
//! by bounded-load consistent hashing and on a thread of that node by jump hash
//! ([`fleet`], over [`isolane_placement`]), and sent to that node as a streaming
//! gRPC `Execute` call on the router thread's own HTTP/2 connection
//! ([`channels`]); the node's answer streams back ([`proxy`]). Routes come from
//! a watch of Worker resources and nodes from a watch of node Leases
//! ([`watch`]). [`Proxy`] is the main type: the HTTP application as an async
//! function, composed by the `isolane-router` binary (with the watches and the
//! admin server) and usable on its own, with routes and nodes set directly
//! (`isolane dev`, tests). `docs/router.md` covers flags, rules and metrics.
//! [`tail`] serves `isolane tail`: a Worker's invocations from every node,
//! to callers Kubernetes authorises (docs/tail.md). [`aggregated`] serves
//! the tail API and the nodes' [`pressure`] as the custom metrics API
//! behind the Kubernetes API server (docs/autoscaling.md). [`tls`] is the
//! HTTPS ingress's certificates, by SNI from labelled Secrets (docs/tls.md).
#![forbid(unsafe_code)]

mod accept;
pub mod aggregated;
mod answer;
pub mod channels;
pub mod config;
pub mod cron;
pub mod custom_metrics;
mod error;
pub mod fleet;
pub mod front_proxy;
mod kube_shapes;
pub mod losses;
pub mod metrics;
pub mod pressure;
pub mod prewarm;
pub mod proxy;
pub mod routes;
pub mod server;
pub mod sockets;
pub mod split;
pub mod tail;
pub mod thread_spread;
pub mod tls;
pub mod watch;
pub mod websocket;
mod worker_load;

pub use error::{BoxError, Error};
pub use metrics::RouterMetrics;
pub use proxy::{Proxy, ProxyBuilder, ProxyConfig, ResponseBody};
