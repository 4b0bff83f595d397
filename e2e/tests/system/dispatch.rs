//! Dispatch namespaces (Workers for Platforms, issue 60) in a cluster: the
//! operator, two nodes and the router as processes. A platform Worker of
//! namespace `platform` dispatches by name, through the router, to a
//! route-less Worker in each of [`CUSTOMERS`] customer namespaces whose
//! Namespace carries `dispatch.isolane.dev/platform: "true"` (set here as
//! a cluster admin would), by `fetch` and by JS RPC. A namespace without the
//! label is refused (the call and the platform's `ServicesBound` condition
//! name the label); removing a label revokes dispatch into that namespace,
//! and adding it grants it, each within the operator's watch and the
//! nodes' next revision (measured). A customer Worker cannot reach another
//! customer by declaring a dispatch binding of its own (the other namespace
//! agreed to the platform, not to it), only through a stub the platform
//! hands it.

use isolane_crds::Worker;
use isolane_e2e::workers::{has_condition, inline_worker};
use isolane_testenv::wait_until;
use isolane_worker::Binding;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::time::Instant;

use super::{SETTLE, System, names};

const PLATFORM_NS: &str = "platform";
const HOST: &str = "platform.test";
/// Customer namespaces that agreed.
const CUSTOMERS: usize = 50;
/// A customer namespace that did not.
const REFUSING: &str = "cust-none";

/// `/<fetch|rpc|sneak|stub>/<binding>/<worker>`; every error answered as
/// `<class>: <message>`.
const PLATFORM: &str = "export default {\n\
  async fetch(request, env) {\n\
    const [, kind, binding, worker] = new URL(request.url).pathname.split('/');\n\
    const stub = env[binding].get(worker);\n\
    try {\n\
      if (kind === 'rpc') return new Response(await stub.hello('platform'));\n\
      if (kind === 'stub') return new Response(await stub.viaStub((who) => env.D2.get('shop').hello(who)));\n\
      const r = await stub.fetch('http://' + worker + '/' + kind);\n\
      return new Response(await r.text());\n\
    } catch (e) { return new Response(e.constructor.name + ': ' + e.message); }\n\
  },\n\
};\n";

/// Each customer's Worker, answering with its namespace (`NS`).
const SHOP: &str = "import { WorkerEntrypoint } from 'cloudflare:workers';\n\
export default class extends WorkerEntrypoint {\n\
  fetch() { return new Response(this.env.NS); }\n\
  hello(who) { return 'hello ' + who + ' from ' + this.env.NS; }\n\
}\n";

/// A customer Worker (of `cust-1`) bound to another customer's namespace:
/// its own calls are refused; a stub it was handed works.
const SNEAKY: &str = "import { WorkerEntrypoint } from 'cloudflare:workers';\n\
export default class extends WorkerEntrypoint {\n\
  async fetch() {\n\
    try { return await this.env.OTHER.get('shop').fetch('http://shop/'); }\n\
    catch (e) { return new Response('refused: ' + e.message); }\n\
  }\n\
  async viaStub(fn) { return 'sneaky got: ' + await fn('sneaky'); }\n\
}\n";

fn customer(i: usize) -> String {
    format!("cust-{i}")
}

fn shop(namespace: &str) -> Worker {
    let mut shop = inline_worker("shop", SHOP, &[]);
    shop.spec.env = vec![isolane_crds::EnvVar {
        name: "NS".into(),
        value: Some(namespace.into()),
        value_from: None,
        json: None,
    }];
    shop
}

fn platform() -> Worker {
    let mut platform = inline_worker("dispatcher", PLATFORM, &[HOST]);
    platform.spec.bindings = (0..CUSTOMERS)
        .map(|i| Binding::dispatch_namespace(format!("D{i}"), customer(i)))
        .chain([Binding::dispatch_namespace("NONE", REFUSING)])
        .collect();
    platform
}

/// Sets (or with `None` removes) `namespace`'s consent label for the
/// platform, as a cluster admin.
pub(super) async fn label(system: &System, namespace: &str, value: Option<&str>) {
    let api: Api<Namespace> = Api::all(system.cp.client());
    let patch = serde_json::json!({
        "metadata": { "labels": { "dispatch.isolane.dev/platform": value } }
    });
    api.patch(namespace, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("label the namespace");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_dispatches_into_fifty_namespaces_that_agreed_and_no_other() {
    let mut namespaces: Vec<String> = (0..CUSTOMERS).map(customer).collect();
    namespaces.extend([REFUSING.to_owned(), PLATFORM_NS.to_owned()]);
    let others: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    let system = System::start_in(2, &others).await;
    for i in 0..CUSTOMERS {
        label(&system, &customer(i), Some("true")).await;
    }
    let mut applied = 0;
    for namespace in namespaces.iter().filter(|ns| *ns != PLATFORM_NS) {
        let mut workers = vec![shop(namespace)];
        if namespace == "cust-1" {
            let mut sneaky = inline_worker("sneaky", SNEAKY, &[]);
            sneaky.spec.bindings = vec![Binding::dispatch_namespace("OTHER", "cust-2")];
            workers.push(sneaky);
        }
        let file = format!("{namespace}.yaml");
        system.kubectl_apply_in(namespace, &file, &workers).await;
        applied += workers.len();
    }
    let platform = [platform()];
    system
        .kubectl_apply_in(PLATFORM_NS, "platform.yaml", &platform)
        .await;
    system
        .wait_ready_and_placed_in(PLATFORM_NS, &names(&platform))
        .await;
    system
        .wait_ready_and_placed_in("cust-1", &["shop".into(), "sneaky".into()])
        .await;
    eprintln!("applied {applied} customer Workers and the platform");
    let started = Instant::now();
    system.wait_served(HOST, "/fetch/D0/shop", "cust-0").await;
    for i in 0..CUSTOMERS {
        let ns = customer(i);
        system
            .wait_served(HOST, &format!("/fetch/D{i}/shop"), &ns)
            .await;
        system
            .wait_served(
                HOST,
                &format!("/rpc/D{i}/shop"),
                &format!("hello platform from {ns}"),
            )
            .await;
    }
    eprintln!(
        "{CUSTOMERS} namespaces answered fetch and RPC through the platform in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let ingress = system.ingress();
    let refused = ingress
        .get(HOST, "/fetch/NONE/shop")
        .await
        .expect("answered");
    assert!(
        refused
            .body
            .starts_with("Error: Dispatch refused: namespace cust-none has not agreed")
            && refused.body.contains("dispatch.isolane.dev/platform=true"),
        "{}",
        refused.body
    );
    condition_names(&system, "cust-none").await;
    isolation(&system).await;
    revoke_and_grant(&system).await;
}

/// The platform's `ServicesBound` condition names `namespace` as not
/// agreed (reason `DispatchNotAllowed`).
async fn condition_names(system: &System, namespace: &str) {
    let api: Api<Worker> = Api::namespaced(system.cp.client(), PLATFORM_NS);
    wait_until(
        &format!("ServicesBound to name {namespace}"),
        SETTLE,
        || async {
            let worker = api.get("dispatcher").await.ok()?;
            let status = worker.status.as_ref()?;
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "ServicesBound")?;
            (condition.reason == "DispatchNotAllowed"
                && condition.message.contains(&format!(
                    "dispatch namespace {namespace}, which has not agreed"
                )))
            .then_some(())
        },
    )
    .await;
}

/// `cust-1`'s own dispatch binding to `cust-2` is refused (cust-2 agreed
/// to the platform's namespace, not to cust-1); the stub the platform
/// hands it reaches cust-2.
async fn isolation(system: &System) {
    let ingress = system.ingress();
    let sneak = ingress
        .get(HOST, "/sneak/D1/sneaky")
        .await
        .expect("answered");
    assert!(
        sneak.body.starts_with(
            "refused: Dispatch refused: namespace cust-2 has not agreed to be dispatched into from namespace cust-1"
        ),
        "{}",
        sneak.body
    );
    let api: Api<Worker> = Api::namespaced(system.cp.client(), "cust-1");
    let sneaky = api.get("sneaky").await.expect("sneaky");
    assert!(has_condition(
        &sneaky,
        "ServicesBound",
        "False",
        Some("DispatchNotAllowed")
    ));
    let stub = ingress
        .get(HOST, "/stub/D1/sneaky")
        .await
        .expect("answered");
    assert_eq!(
        stub.body, "sneaky got: hello sneaky from cust-2",
        "a stub it was handed"
    );
}

/// Removing cust-0's label revokes dispatch into it; labelling cust-none
/// grants it; each measured from the label's change to the first answer
/// that shows it.
async fn revoke_and_grant(system: &System) {
    let ingress = system.ingress();
    label(system, "cust-0", None).await;
    let revoked = Instant::now();
    wait_until("dispatch into cust-0 to be refused", SETTLE, || async {
        let reply = ingress.get(HOST, "/rpc/D0/shop").await.ok()?;
        reply
            .body
            .starts_with("Error: Dispatch refused")
            .then_some(())
    })
    .await;
    eprintln!(
        "label removed: refused after {:.2}s",
        revoked.elapsed().as_secs_f64()
    );
    condition_names(system, "cust-0").await;
    label(system, REFUSING, Some("true")).await;
    let granted = Instant::now();
    system.wait_served(HOST, "/fetch/NONE/shop", REFUSING).await;
    eprintln!(
        "label set: served after {:.2}s",
        granted.elapsed().as_secs_f64()
    );
}
