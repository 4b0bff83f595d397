//! An aggregated API served on loopback and registered with the API server
//! as a cluster registers one: an `APIService` pointing at a Service whose
//! ExternalName is `127.0.0.1` (the test apiserver runs with
//! `--enable-aggregator-routing`, so it dials that address), trusting the
//! given CA.

use std::net::SocketAddr;
use std::path::Path;

use isolane_testenv::{ControlPlane, Leaf, TestCa};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

/// One group and version of an aggregated API and where it is served.
#[derive(Debug, Clone, Copy)]
pub struct AggregatedApi<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub group_priority_minimum: i32,
    pub version_priority: i32,
    /// The Service's namespace (which must exist) and name.
    pub namespace: &'a str,
    pub service: &'a str,
}

impl AggregatedApi<'_> {
    /// The DNS name the API server checks the serving certificate against.
    pub fn service_host(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }

    /// The router's flags to serve the aggregated APIs on `addr` with a
    /// certificate of `ca` for [`Self::service_host`], written into `dir`.
    pub fn router_args(&self, ca: &TestCa, dir: &Path, addr: SocketAddr) -> Vec<String> {
        let name = self.service_host();
        let serving = ca
            .issue(Leaf::server(self.service, &[name.as_str()]))
            .expect("a serving certificate");
        let (cert, key) = (dir.join("api.crt"), dir.join("api.key"));
        serving
            .write(&cert, &key)
            .expect("write the serving certificate");
        vec![
            "--tail-api-addr".to_owned(),
            addr.to_string(),
            "--tail-api-cert-file".to_owned(),
            cert.display().to_string(),
            "--tail-api-key-file".to_owned(),
            key.display().to_string(),
        ]
    }

    /// Creates the ExternalName Service and the `APIService` for `port` on
    /// loopback, with `ca_pem` as its CA bundle.
    pub async fn register(&self, cp: &ControlPlane, port: u16, ca_pem: &str) {
        let service = Service {
            metadata: ObjectMeta {
                name: Some(self.service.to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("ExternalName".to_owned()),
                external_name: Some("127.0.0.1".to_owned()),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        };
        Api::<Service>::namespaced(cp.client(), self.namespace)
            .create(&PostParams::default(), &service)
            .await
            .expect("create the aggregated API's Service");
        let api_service = APIService {
            metadata: ObjectMeta {
                name: Some(format!("{}.{}", self.version, self.group)),
                ..ObjectMeta::default()
            },
            spec: Some(APIServiceSpec {
                group: Some(self.group.to_owned()),
                version: Some(self.version.to_owned()),
                group_priority_minimum: self.group_priority_minimum,
                version_priority: self.version_priority,
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                service: Some(ServiceReference {
                    namespace: Some(self.namespace.to_owned()),
                    name: Some(self.service.to_owned()),
                    port: Some(i32::from(port)),
                }),
                insecure_skip_tls_verify: None,
            }),
            status: None,
        };
        Api::<APIService>::all(cp.client())
            .create(&PostParams::default(), &api_service)
            .await
            .expect("create the APIService");
    }
}
