//! Pebble, the ACME test server, and pebble-challtestsrv as its DNS server:
//! every name resolves to one IPv4 address (the router's HTTP listener), so
//! Pebble's HTTP-01 validation of any host reaches the router on port 80.
//! Pebble's API (and its management API) speak HTTPS with a certificate of
//! a [`TestCa`] made here; [`Pebble::api_ca_pem`] is that CA for clients.

use std::ffi::OsStr;
use std::net::Ipv4Addr;
use std::time::Duration;

use tempfile::TempDir;

use super::{READY_WITHIN, binary};
use crate::Error;
use crate::component::Component;
use crate::pki::{Leaf, TestCa};
use crate::port::free_ports;
use crate::process::Process;

/// A running Pebble and its DNS server.
pub struct Pebble {
    pebble: Process,
    dns: Process,
    api_port: u16,
    management_port: u16,
    dns_port: u16,
    api_ca: TestCa,
    _dir: TempDir,
}

impl std::fmt::Debug for Pebble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pebble")
            .field("api_port", &self.api_port)
            .field("dns_port", &self.dns_port)
            .finish_non_exhaustive()
    }
}

impl Pebble {
    /// Starts the DNS server answering every A query with `http_ip`, then
    /// Pebble validating HTTP-01 on `http_ip`'s port 80, issuing
    /// certificates valid for `validity`; returns once all listen.
    pub fn start(http_ip: Ipv4Addr, validity: Duration) -> Result<Self, Error> {
        let dir = tempfile::tempdir().map_err(Error::TempDir)?;
        let [api_port, management_port, dns_port, dns_management] =
            free_ports::<4>().map_err(Error::FreePort)?;
        let dns_args = [
            format!("-dnsserver=127.0.0.1:{dns_port}"),
            format!("-management=127.0.0.1:{dns_management}"),
            format!("-defaultIPv4={http_ip}"),
            "-defaultIPv6=".to_owned(),
            "-http01=".to_owned(),
            "-https01=".to_owned(),
            "-tlsalpn01=".to_owned(),
            "-doh=".to_owned(),
        ];
        let log = dir.path().join("pebble-challtestsrv.log");
        let mut dns = Process::spawn(
            "pebble-challtestsrv",
            &binary("pebble-challtestsrv")?,
            dns_args,
            &[],
            &log,
        )?;
        dns.wait_listening(Component::PebbleDns, &[dns_management], READY_WITHIN)?;

        let api_ca = TestCa::new("pebble-api")?;
        let cert = api_ca.issue(Leaf::server("pebble", &["localhost", "127.0.0.1"]))?;
        let (cert_path, key_path) = (dir.path().join("api.crt"), dir.path().join("api.key"));
        cert.write(&cert_path, &key_path)?;
        let config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{api_port}"),
            "managementListenAddress": format!("127.0.0.1:{management_port}"),
            "certificate": cert_path, "privateKey": key_path,
            "httpPort": 80, "tlsPort": 5001, "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "retryAfter": {"authz": 1, "order": 1},
            "profiles": {"default": {"description": "tests", "validityPeriod": validity.as_secs()}},
        }});
        let config_path = dir.path().join("pebble.json");
        std::fs::write(&config_path, config.to_string()).map_err(|source| Error::WriteFile {
            path: config_path.clone(),
            source,
        })?;
        let args = [
            format!("-config={}", config_path.display()),
            format!("-dnsserver=127.0.0.1:{dns_port}"),
        ];
        // No random sleep before validating, no nonces refused at random,
        // and every order validated anew (no authorization reused).
        let envs: [(&str, &OsStr); 3] = [
            ("PEBBLE_VA_NOSLEEP", "1".as_ref()),
            ("PEBBLE_WFE_NONCEREJECT", "0".as_ref()),
            ("PEBBLE_AUTHZREUSE", "0".as_ref()),
        ];
        let log = dir.path().join("pebble.log");
        let mut pebble = Process::spawn("pebble", &binary("pebble")?, args, &envs, &log)?;
        pebble.wait_listening(
            Component::Pebble,
            &[api_port, management_port],
            READY_WITHIN,
        )?;
        Ok(Self {
            pebble,
            dns,
            api_port,
            management_port,
            dns_port,
            api_ca,
            _dir: dir,
        })
    }

    /// The ACME directory URL (HTTPS, [`Pebble::api_ca_pem`]).
    pub fn directory_url(&self) -> String {
        format!("https://localhost:{}/dir", self.api_port)
    }

    /// The URL of the issuing root's PEM on the management API (HTTPS,
    /// [`Pebble::api_ca_pem`]); a new root each time Pebble starts.
    pub fn issuing_root_url(&self) -> String {
        format!("https://localhost:{}/roots/0", self.management_port)
    }

    /// The CA of Pebble's own HTTPS APIs (not of what it issues).
    pub fn api_ca_pem(&self) -> String {
        self.api_ca.cert_pem()
    }

    /// The DNS server every name resolves through (`host:port`).
    pub fn dns_addr(&self) -> String {
        format!("127.0.0.1:{}", self.dns_port)
    }

    /// Pebble's process (its log tells each validation).
    pub fn process(&self) -> &Process {
        &self.pebble
    }

    /// The DNS server's process.
    pub fn dns_process(&self) -> &Process {
        &self.dns
    }
}
