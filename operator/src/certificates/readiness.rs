//! The Worker's `CertificateReady` condition, from its admitted hosts, the
//! hosts it declares but lost, and what cert-manager says of each
//! Certificate: `Issued` (every admitted host's Certificate is Ready),
//! `Pending` (cert-manager is working on one), `Failed` (an issuance
//! failed: cert-manager's message), `HostNotAdmitted` (no host of the
//! Worker is its own, so none gets a Certificate), `WildcardNotCovered`
//! (its only hosts are wildcard routes no Certificate can be asked for; with
//! other hosts, the message says so). A host covered by a namespace's
//! wildcard Certificate reads that Certificate.

use kube::core::DynamicObject;

use crate::routes::Holder;

/// The condition type.
pub const CERTIFICATE_READY: &str = "CertificateReady";

/// What cert-manager says of one admitted host's Certificate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The host.
    pub host: String,
    /// Its `Ready` condition: status and message.
    pub ready: Option<(String, String)>,
    /// The message of an `Issuing` condition that failed.
    pub failed: Option<String>,
}

impl Observed {
    /// What `certificate` (for `host`; `None` when not made yet) says.
    pub fn read(host: &str, certificate: Option<&DynamicObject>) -> Self {
        let conditions = certificate
            .and_then(|c| c.data.pointer("/status/conditions"))
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        let find = |type_: &str| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(|t| t.as_str()) == Some(type_))
        };
        let text = |c: &serde_json::Value, field: &str| {
            c.get(field)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned()
        };
        let ready = find("Ready").map(|c| (text(c, "status"), text(c, "message")));
        let failed = find("Issuing")
            .filter(|c| text(c, "status") == "False" && text(c, "reason") == "Failed")
            .map(|c| text(c, "message"));
        Self {
            host: host.to_owned(),
            ready,
            failed,
        }
    }

    /// Whether the Certificate is Ready.
    pub fn is_ready(&self) -> bool {
        self.ready
            .as_ref()
            .is_some_and(|(status, _)| status == "True")
    }
}

/// The condition as (status, reason, message), or `None` when the Worker
/// declares no host (nothing to certify). `uncovered`: why its admitted
/// wildcard hosts, if any, get no Certificate.
pub fn condition(
    observed: &[Observed],
    lost: &[(String, Holder)],
    uncovered: Option<&str>,
) -> Option<(&'static str, &'static str, String)> {
    let lost_note = || {
        let named: Vec<String> = lost
            .iter()
            .map(|(host, holder)| format!("{host} {holder}"))
            .collect();
        format!(
            "no certificate for hosts not admitted: {}",
            named.join("; ")
        )
    };
    let mut message = if !observed.is_empty() {
        verdict(observed)
    } else if !lost.is_empty() {
        ("False", "HostNotAdmitted", lost_note())
    } else if let Some(uncovered) = uncovered {
        return Some(("False", "WildcardNotCovered", uncovered.to_owned()));
    } else {
        return None;
    };
    if !observed.is_empty() && !lost.is_empty() {
        message.2 = format!("{}; {}", message.2, lost_note());
    }
    if let Some(uncovered) = uncovered {
        message.2 = format!("{}; {uncovered}", message.2);
    }
    Some(message)
}

/// The condition for the admitted hosts' Certificates (`observed`, not empty).
fn verdict(observed: &[Observed]) -> (&'static str, &'static str, String) {
    let hosts = |of: &[&Observed]| {
        of.iter()
            .map(|o| o.host.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(failed) = observed
        .iter()
        .find(|o| o.failed.is_some() && !o.is_ready())
    {
        let why = failed.failed.clone().unwrap_or_default();
        let text = format!("issuing the certificate for {} failed: {why}", failed.host);
        ("False", "Failed", text)
    } else if observed.iter().all(Observed::is_ready) {
        let all: Vec<&Observed> = observed.iter().collect();
        (
            "True",
            "Issued",
            format!("certificates issued for {}", hosts(&all)),
        )
    } else {
        let waiting: Vec<&Observed> = observed.iter().filter(|o| !o.is_ready()).collect();
        let said = waiting
            .iter()
            .filter_map(|o| o.ready.as_ref().map(|(_, m)| m.as_str()))
            .find(|m| !m.is_empty())
            .map_or(String::new(), |m| format!(": {m}"));
        (
            "False",
            "Pending",
            format!(
                "waiting for cert-manager to issue {}{said}",
                hosts(&waiting)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::WorkerKey;

    fn certificate(conditions: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": "c", "namespace": "a"},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn issued_pending_failed_and_not_admitted() {
        let ready =
            certificate(serde_json::json!([{"type": "Ready", "status": "True", "message": "ok"}]));
        let waiting = certificate(serde_json::json!([
            {"type": "Ready", "status": "False", "message": "Issuing certificate as Secret does not exist"}
        ]));
        let failed = certificate(serde_json::json!([
            {"type": "Ready", "status": "False", "message": "x"},
            {"type": "Issuing", "status": "False", "reason": "Failed", "message": "order rejected"}
        ]));
        let a = Observed::read("a.example", Some(&ready));
        let (status, reason, _) = condition(std::slice::from_ref(&a), &[], None).unwrap();
        assert_eq!((status, reason), ("True", "Issued"));
        let b = Observed::read("b.example", Some(&waiting));
        let (status, reason, message) = condition(&[a.clone(), b], &[], None).unwrap();
        assert_eq!((status, reason), ("False", "Pending"));
        assert!(
            message.contains("b.example: Issuing certificate"),
            "{message}"
        );
        let none = Observed::read("c.example", None);
        assert_eq!(condition(&[none], &[], None).unwrap().1, "Pending");
        let c = Observed::read("c.example", Some(&failed));
        let (_, reason, message) = condition(&[a.clone(), c], &[], None).unwrap();
        assert_eq!(reason, "Failed");
        assert!(message.ends_with("order rejected"), "{message}");
        let holder = Holder::OlderWorker(WorkerKey::new("b", "old"));
        let (status, reason, message) =
            condition(&[], &[("app.example".to_owned(), holder)], None).unwrap();
        assert_eq!((status, reason), ("False", "HostNotAdmitted"));
        assert!(
            message.contains("app.example is held by older Worker b/old"),
            "{message}"
        );
        assert_eq!(condition(&[], &[], None), None);
        let why = "no certificate for wildcard host *.x.test: no reservation";
        let only = condition(&[], &[], Some(why)).unwrap();
        assert_eq!(only, ("False", "WildcardNotCovered", why.to_owned()));
        let (_, reason, message) = condition(&[a], &[], Some(why)).unwrap();
        assert_eq!(reason, "Issued");
        assert!(message.ends_with(why), "{message}");
    }
}
