//! A dispatch namespace binding's outbound Worker (docs/dispatch.md,
//! issue 60) in a cluster: the operator, two nodes and the router as
//! processes. The platform Worker of namespace `platform` dispatches to the
//! customer Worker `shop` of namespace `cust` (whose Namespace carries the
//! consent label) with the outbound Worker `egress` and a param per call:
//! the same three Workers as cli/tests/dev_outbound.rs
//! (`compat/apps/dispatch/`). `egress` refuses the shop's fetch of a
//! forbidden host (403) and answers an allowed one itself with a header
//! added (no network), with the call's `tenant` as its `env.tenant` and an
//! undeclared key dropped; the shop's `connect()` is refused. A second
//! platform Worker, bound to `cust-none` (no label), is refused, outbound
//! or not, until a TenantPolicy selecting `cust-none` names `platform` in
//! `dispatch.from` (the other way a cluster admin consents); deleting the
//! policy refuses it again.

use std::time::Instant;

use isolane_crds::{EnvVar, TenantPolicy, Worker};
use isolane_e2e::workers::inline_worker;
use isolane_testenv::wait_until;
use isolane_worker::{Binding, OutboundWorker};
use kube::Api;
use kube::api::{DeleteParams, PostParams};

use super::dispatch::label;
use super::{SETTLE, System, names};

const PLATFORM_NS: &str = "platform";
const CUSTOMER: &str = "cust";
const REFUSING: &str = "cust-none";
const HOST: &str = "dispatch.test";
const REFUSED_HOST: &str = "refused.test";

const PLATFORM: &str = include_str!("../../../compat/apps/dispatch/platform.js");
const SHOP: &str = include_str!("../../../compat/apps/dispatch/shop.js");
const EGRESS: &str = include_str!("../../../compat/apps/dispatch/egress.js");

/// What the shop answers (through the platform) when dispatched with
/// `tenant`: `egress`'s echo of the allowed fetch with its header, then
/// its 403 for the forbidden host.
fn shop_answer(tenant: &str) -> String {
    format!(
        "200 200 added egress saw GET http://allowed.example/p x-from=customer tenant={tenant} secret=undefined own=mine | 403 egress refused"
    )
}

/// A platform Worker named `name` on `host`, its binding `D` into
/// `namespace` with the outbound Worker `egress` (param `tenant`).
fn platform(name: &str, host: &str, namespace: &str) -> Worker {
    let mut binding = Binding::dispatch_namespace("D", namespace);
    if let Some(dispatch) = binding.dispatch_namespace.as_mut() {
        dispatch.outbound = Some(OutboundWorker {
            worker: "egress".into(),
            params: vec!["tenant".into()],
        });
    }
    let mut platform = inline_worker(name, PLATFORM, &[host]);
    platform.spec.bindings = vec![binding];
    platform
}

fn egress() -> Worker {
    let mut egress = inline_worker("egress", EGRESS, &[]);
    egress.spec.env = vec![EnvVar {
        name: "OWN".into(),
        value: Some("mine".into()),
        value_from: None,
        json: None,
    }];
    egress
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbound_worker_takes_a_dispatched_workers_fetches_with_the_calls_params() {
    let system = System::start_in(2, &[PLATFORM_NS, CUSTOMER, REFUSING]).await;
    label(&system, CUSTOMER, Some("true")).await;
    for namespace in [CUSTOMER, REFUSING] {
        let shop = [inline_worker("shop", SHOP, &[])];
        let file = format!("{namespace}.yaml");
        system.kubectl_apply_in(namespace, &file, &shop).await;
    }
    let platform = [
        platform("dispatcher", HOST, CUSTOMER),
        platform("refused", REFUSED_HOST, REFUSING),
        egress(),
    ];
    system
        .kubectl_apply_in(PLATFORM_NS, "platform.yaml", &platform)
        .await;
    system
        .wait_ready_and_placed_in(PLATFORM_NS, &names(&platform))
        .await;
    system
        .wait_ready_and_placed_in(CUSTOMER, &["shop".into()])
        .await;
    system
        .wait_served(HOST, "/t/acme", &shop_answer("acme"))
        .await;
    let ingress = system.ingress();
    // Each call's own param, whichever node and thread serves it.
    for i in 0..20 {
        let tenant = format!("tenant{i}");
        let reply = ingress
            .get(HOST, &format!("/t/{tenant}"))
            .await
            .expect("answered");
        assert_eq!((reply.status, reply.body), (200, shop_answer(&tenant)));
    }
    let none = ingress.get(HOST, "/none").await.expect("answered");
    assert_eq!((none.status, none.body), (200, shop_answer("undefined")));
    let connect = ingress.get(HOST, "/connect/acme").await.expect("answered");
    assert!(
        connect.body.starts_with("200 refused TypeError: connect to allowed.example refused: this Worker was called through a dispatch namespace binding with an outbound Worker"),
        "{}",
        connect.body
    );
    let refused = ingress
        .get(REFUSED_HOST, "/t/acme")
        .await
        .expect("answered");
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.body.starts_with(
            "caught Error: Dispatch refused: namespace cust-none has not agreed to be dispatched into from namespace platform"
        ) && refused.body.contains("dispatch.isolane.dev/platform=true"),
        "{}",
        refused.body
    );
    policy_consent(&system).await;
}

/// A TenantPolicy selecting `cust-none` (by the name label the apiserver
/// gives every Namespace) with `platform` in `dispatch.from` lets the
/// platform in, as the label would; deleting it refuses it again. Each
/// measured from the change to the first answer that shows it.
async fn policy_consent(system: &System) {
    let api: Api<TenantPolicy> = Api::all(system.cp.client());
    let policy: TenantPolicy = serde_json::from_value(serde_json::json!({
        "apiVersion": "isolane.dev/v1alpha1",
        "kind": "TenantPolicy",
        "metadata": { "name": "shops" },
        "spec": {
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": REFUSING } },
            "dispatch": { "from": [PLATFORM_NS] },
        },
    }))
    .expect("a TenantPolicy");
    api.create(&PostParams::default(), &policy)
        .await
        .expect("create the TenantPolicy");
    let granted = Instant::now();
    system
        .wait_served(REFUSED_HOST, "/t/acme", &shop_answer("acme"))
        .await;
    eprintln!(
        "TenantPolicy created: served after {:.2}s",
        granted.elapsed().as_secs_f64()
    );
    api.delete("shops", &DeleteParams::default())
        .await
        .expect("delete the TenantPolicy");
    let revoked = Instant::now();
    let ingress = system.ingress();
    wait_until(
        "dispatch into cust-none to be refused again",
        SETTLE,
        || async {
            let reply = ingress.get(REFUSED_HOST, "/t/acme").await.ok()?;
            reply
                .body
                .starts_with("caught Error: Dispatch refused")
                .then_some(())
        },
    )
    .await;
    eprintln!(
        "TenantPolicy deleted: refused after {:.2}s",
        revoked.elapsed().as_secs_f64()
    );
}
