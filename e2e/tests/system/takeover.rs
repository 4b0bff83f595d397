//! Host takeover on redeploy (issue 28, finding 1), as the attacker ran it
//! against a real apiserver, operator, node and router.
//!
//! Namespace `demo` (the victim) serves `h.parent.test`; namespace
//! `squatters` (the attacker) claims the same host and `*.parent.test`, both
//! refused. The victim then replaces its Worker, both ways: create the new
//! one and delete the old (a rename, a helm upgrade that renames), then
//! delete and re-create under the same name (`kubectl replace --force`, helm
//! uninstall + install). Before the fix, the attacker's older claims won as
//! soon as the old Worker went: the new Worker was refused and the victim's
//! users reached the attacker. Now the host stays the victim's: its new
//! Worker is admitted and served, the host is held (served to nobody)
//! between delete and re-create, and no request ever reaches the attacker.

use std::collections::BTreeSet;

use isolane_crds::{HOST_OWNER_LABEL, Worker, host_owner_from};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::operator::OPERATOR_NAMESPACE;
use isolane_e2e::workers::{apply, condition, has_condition, wait_for_worker};
use isolane_testenv::wait_until;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{NAMESPACE, SETTLE, System, named_worker};

const ATTACKER: &str = "squatters";
const HOST: &str = "h.parent.test";

/// Requests to one host through the router, until stopped: every 200's body.
struct Probe {
    stop: oneshot::Sender<()>,
    task: JoinHandle<(usize, BTreeSet<String>)>,
}

impl Probe {
    fn start(ingress: Ingress, host: &'static str) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let (mut sent, mut served) = (0, BTreeSet::new());
            loop {
                tokio::select! {
                    _ = &mut stopped => return (sent, served),
                    reply = ingress.get(host, "/") => {
                        sent += 1;
                        if let Ok(reply) = reply && reply.status == 200 {
                            served.insert(reply.body);
                        }
                    }
                }
            }
        });
        Self { stop, task }
    }

    /// Stops; returns how many requests were sent and the bodies served.
    async fn stop(self) -> (usize, BTreeSet<String>) {
        let _ = self.stop.send(());
        self.task.await.expect("the probe does not panic")
    }
}

/// Waits until Worker `demo/name` is admitted on its routes and Ready.
async fn wait_admitted(system: &System, name: &str) -> Worker {
    wait_for_worker(
        &system.cp.client(),
        NAMESPACE,
        name,
        "to be admitted on its host and Ready",
        SETTLE,
        |w| {
            has_condition(w, "RoutesAdmitted", "True", None)
                && has_condition(w, "Ready", "True", None)
        },
    )
    .await
}

/// Waits until the attacker's Worker `name` is refused with a message
/// containing `says`; returns it.
async fn wait_refused(system: &System, name: &str, says: &str) -> Worker {
    wait_for_worker(
        &system.cp.client(),
        ATTACKER,
        name,
        &format!("to be refused ({says})"),
        SETTLE,
        |w| {
            has_condition(w, "RoutesAdmitted", "False", None)
                && condition(w, "RoutesAdmitted").is_some_and(|c| c.message.contains(says))
        },
    )
    .await
}

/// When `worker` was created, in whole seconds (the API's resolution).
fn created(worker: &Worker) -> i64 {
    worker
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(i64::MAX, |time| time.0.as_second())
}

/// Deletes Worker `demo/name` and waits until it is gone (its finalizer
/// ran).
async fn delete(system: &System, name: &str) {
    let api = system.workers_api();
    api.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|error| panic!("delete {name}: {error}"));
    wait_until(&format!("Worker {name} to be gone"), SETTLE, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redeploy_keeps_its_host_from_other_namespaces() {
    let system = System::start_in(1, &[ATTACKER]).await;
    let client = system.cp.client();

    // The victim serves the host.
    apply(&client, NAMESPACE, &named_worker("site-v1", HOST)).await;
    wait_admitted(&system, "site-v1").await;
    system.wait_served(HOST, "/", "site-v1").await;

    // The attacker squats on it and on a wildcard over it: both refused.
    apply(&client, ATTACKER, &named_worker("squat", HOST)).await;
    apply(&client, ATTACKER, &named_worker("wild", "*.parent.test")).await;
    let owner = "belongs to namespace demo (Worker demo/site-v1)";
    let squat = wait_refused(&system, "squat", owner).await;
    let wild = wait_refused(&system, "wild", owner).await;
    // The scenario: the victim's new Worker is younger than both (creation
    // times have a resolution of one second; at equal ages the victim's
    // namespace name would win).
    let attacker = created(&squat).max(created(&wild));
    wait_until("a second past the attacker's claims", SETTLE, || async {
        (Timestamp::now().as_second() > attacker).then_some(())
    })
    .await;
    let probe = Probe::start(system.ingress(), HOST);

    // 1. Create the new Worker, then delete the old one (a rename).
    let v2 = apply(&client, NAMESPACE, &named_worker("site-v2", HOST)).await;
    assert!(
        created(&v2) > attacker,
        "site-v2 is not younger than the attacker's claims"
    );
    delete(&system, "site-v1").await;
    wait_admitted(&system, "site-v2").await;
    system.wait_served(HOST, "/", "site-v2").await;
    wait_refused(
        &system,
        "squat",
        "belongs to namespace demo (Worker demo/site-v2)",
    )
    .await;

    // 2. Delete it, then create it again (`kubectl replace --force`, helm
    // uninstall + install): in between, the host is held for the victim and
    // served to nobody.
    delete(&system, "site-v2").await;
    let held = "host h.parent.test is held for namespace demo";
    wait_refused(&system, "squat", held).await;
    wait_refused(&system, "wild", held).await;
    let ingress = system.ingress();
    wait_until(
        "the router to serve the held host to nobody",
        SETTLE,
        || async {
            let reply = ingress.get(HOST, "/").await.ok()?;
            (reply.status == 404).then_some(())
        },
    )
    .await;
    let mut again = named_worker("site-v2", HOST);
    again.spec.script = Some(isolane_e2e::workers::hello_script("site-v2 again"));
    apply(&client, NAMESPACE, &again).await;
    wait_admitted(&system, "site-v2").await;
    system.wait_served(HOST, "/", "site-v2 again").await;

    let (sent, served) = probe.stop().await;
    eprintln!("MEASURED takeover probe: {sent} requests, served by {served:?}");
    assert!(sent > 0, "the probe sent nothing");
    assert!(
        served.iter().all(|body| body.starts_with("site-")),
        "the attacker was served: {served:?}"
    );

    // What keeps the host: the operator's record of its owner.
    let records: Api<ConfigMap> = Api::namespaced(client, OPERATOR_NAMESPACE);
    let list = records
        .list(&ListParams::default().labels(&format!("{HOST_OWNER_LABEL}=true")))
        .await
        .expect("list host-owner records");
    let owners: Vec<_> = list
        .items
        .iter()
        .filter_map(|c| host_owner_from(c).ok())
        .map(|o| (o.host, o.namespace, o.released.is_some()))
        .collect();
    assert_eq!(owners, [(HOST.to_owned(), NAMESPACE.to_owned(), false)]);
    system.shutdown();
}
