//! End-to-end tests against a real kube-apiserver: the whole system, as users run it.
//!
//! Helpers, each in a module named for what it does: [`aggregated`] (an
//! aggregated API on loopback registered with the API server), [`process`] (the project's
//! binaries under test; running them, waiting on conditions with deadlines and
//! the test PKI are `isolane-testenv`'s), [`operator`] (the
//! operator as a process), [`workers`] (Workers, bundles and conditions through
//! the API), [`certs`] (a throwaway CA for webhooks), [`http`] (admin endpoints),
//! [`images`] (the OCI images `make images` builds, and what is in them),
//! [`bundles`] (bundles pushed to a test registry and switched by digest);
//! for the whole system: [`cluster`] (operator, runtime nodes and router as
//! processes), [`kubectl`] (Worker manifests applied as a user does),
//! [`ingress`] (requests through the router), [`load`] (continuous traffic
//! and a tally of every request), [`loopback`] (a server of the test that
//! Workers report to) and [`prometheus`] (a real Prometheus
//! scraping them); [`tools`] (`helm` and `kubectl` run as users run them);
//! [`tenant`] (a ServiceAccount bound to a role, and its kubeconfig).
#![forbid(unsafe_code)]

pub mod aggregated;
pub mod bundles;
pub mod certs;
pub mod cluster;
pub mod images;
pub mod ingress;
pub mod kubectl;
pub mod load;
pub mod loopback;
pub mod operator;
pub mod process;
pub mod prometheus;
pub mod release;
pub mod tenant;
pub mod tools;
pub mod websocket;
pub use isolane_testenv::http_probe as http;
pub use isolane_testenv::workers;
