//! The operator's availability against a real kube-apiserver: killed mid-way and
//! restarted it converges with nothing lost (a Worker deleted while it was down
//! is cleaned up); two replicas elect exactly one leader, and the standby takes
//! over once the SIGKILLed leader's Lease has expired, never before; SIGTERM
//! exits cleanly and releases the Lease; a leader that loses its Lease and
//! takes it back lists nothing again. How long each takeover took is
//! printed, not asserted: on a shared machine it measures the load.

use std::time::{Duration, Instant};

use futures::future::join_all;
use isolane_crds::Worker;
use isolane_e2e::operator::{OPERATOR_NAMESPACE, Operator, OperatorOptions};
use isolane_e2e::workers::{
    apply, bundle, has_condition, hello_script, inline_worker, prepare, wait_bundle_gone,
    wait_ready,
};
use isolane_testenv::ControlPlane;
use isolane_testenv::wait_until;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};

const NS: &str = "apps";
const STEP: Duration = Duration::from_secs(60);

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

async fn leader_lease(client: &Client) -> Option<LeaseSpec> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    leases.get_opt("isolane-operator-leader").await.ok()??.spec
}

/// How many complete lists `operator`'s watches have made, each watch's count.
async fn lists(operator: &Operator) -> Vec<(String, f64)> {
    let mut counts = Vec::new();
    for watch in ["workers", "configmaps", "secrets", "bundles", "host_owners"] {
        let series = format!("isolane_operator_watch_lists_total{{watch=\"{watch}\"}}");
        let count = operator.metric(&series).await;
        counts.push((watch.to_owned(), count.unwrap_or(f64::NAN)));
    }
    counts
}

async fn holder(client: &Client) -> Option<String> {
    leader_lease(client).await?.holder_identity
}

/// Every Worker in `NS` is Ready at its current generation and its newest
/// bundle is at the revision its status reports; no bundle without a Worker
/// (a Worker may keep older revisions' bundles too).
async fn converged(client: &Client) -> Option<usize> {
    let workers: Api<Worker> = Api::namespaced(client.clone(), NS);
    let list = workers.list(&ListParams::default()).await.ok()?;
    for worker in &list.items {
        if !has_condition(worker, "Ready", "True", None) {
            return None;
        }
        let name = worker.metadata.name.as_deref()?;
        let revision = worker.status.as_ref()?.revision.clone()?;
        if bundle(client, NS, name).await?.revision != revision {
            return None;
        }
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let bundles = secrets
        .list(&ListParams::default().labels("isolane.dev/bundle=true"))
        .await
        .ok()?;
    let owners: std::collections::BTreeSet<String> = bundles
        .items
        .iter()
        .filter_map(|secret| {
            secret
                .metadata
                .annotations
                .as_ref()?
                .get("isolane.dev/worker-id")
                .cloned()
        })
        .collect();
    let workers: std::collections::BTreeSet<String> = list
        .items
        .iter()
        .filter_map(|worker| Some(format!("{NS}/{}", worker.metadata.name.as_deref()?)))
        .collect();
    (owners == workers).then_some(list.items.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_operator_restarts_and_converges() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let client = cp.client();
    let dir = tempfile::tempdir().expect("temp dir");
    // The chart's Lease timings, not the short ones the failover test below
    // needs: this test restarts the same identity, which renews its own
    // Lease at once, and with a 2 s renew deadline a slow apiserver (a loaded
    // machine) makes the leader step down again and again, each step down
    // aborting its in-flight reconciles. (It once relisted every cache too;
    // the caches now outlive a term: docs/operator.md, "Leader election".)
    let options = OperatorOptions {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        ..OperatorOptions::default()
    };
    let mut operator = Operator::start(&cp, dir.path(), &options);
    operator.wait_ready(STEP).await;

    // Apply a batch and kill the operator as soon as the first is Ready, while
    // the rest are in flight.
    let count = 40;
    join_all((0..count).map(|i| {
        let client = client.clone();
        async move {
            let name = format!("w{i:03}");
            let host = format!("w{i:03}.example.com");
            apply(
                &client,
                NS,
                &inline_worker(&name, &hello_script(&name), &[&host]),
            )
            .await
        }
    }))
    .await;
    wait_ready(&client, NS, "w000", STEP).await;
    operator.process.kill();
    let ready_at_kill = {
        let workers: Api<Worker> = Api::namespaced(client.clone(), NS);
        let list = workers.list(&ListParams::default()).await.expect("list");
        list.items
            .iter()
            .filter(|w| has_condition(w, "Ready", "True", None))
            .count()
    };
    eprintln!("{ready_at_kill}/{count} Workers were Ready when the operator was killed");

    // While it is down: delete a Ready Worker (its finalizer holds it), change
    // another, add a new one.
    let workers: Api<Worker> = Api::namespaced(client.clone(), NS);
    workers
        .delete("w000", &DeleteParams::default())
        .await
        .expect("delete w000");
    assert!(
        workers.get_opt("w000").await.expect("get").is_some(),
        "the finalizer keeps a deleted Worker until its bundle is gone"
    );
    apply(
        &client,
        NS,
        &inline_worker(
            "w001",
            &hello_script("changed while down"),
            &["w001.example.com"],
        ),
    )
    .await;
    apply(
        &client,
        NS,
        &inline_worker("late", &hello_script("late"), &["late.example.com"]),
    )
    .await;

    // Restart (same identity: it renews its own Lease at once).
    let restarted = Instant::now();
    let operator = Operator::start(&cp, dir.path(), &options);
    operator.wait_ready(STEP).await;
    eprintln!(
        "the restarted operator was ready (every cache listed) {:.1}s after its start",
        restarted.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let total = wait_until("every Worker to converge", STEP, || converged(&client)).await;
    eprintln!(
        "converged {total} Workers {:.1}s after the restart",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(total, count, "w000 gone, late added");
    wait_bundle_gone(&client, NS, "w000", STEP).await;
    assert!(workers.get_opt("w000").await.expect("get").is_none());
    let changed = bundle(&client, NS, "w001").await.expect("bundle of w001");
    assert!(changed.script.contains("changed while down"));
    assert!(bundle(&client, NS, "late").await.is_some());
    assert!(
        isolane_e2e::workers::bundles(&client, NS, "w000")
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_operators_elect_one_leader_and_fail_over() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let client = cp.client();
    let dir = tempfile::tempdir().expect("temp dir");
    let options_a = OperatorOptions {
        identity: "operator-a".into(),
        ..OperatorOptions::default()
    };
    let options_b = OperatorOptions {
        identity: "operator-b".into(),
        ..OperatorOptions::default()
    };
    let lease_duration = options_a.lease_duration;
    let a = Operator::start(&cp, dir.path(), &options_a);
    let b = Operator::start(&cp, dir.path(), &options_b);
    a.wait_ready(STEP).await;
    b.wait_ready(STEP).await;

    // Exactly one leader: the Lease holder, and only it reports leading; never
    // both, checked over a few retry periods.
    let one_leader = || async {
        wait_until("exactly one leader", STEP, || async {
            let holder = holder(&client).await?;
            let (a_leads, b_leads) = (a.is_leader().await, b.is_leader().await);
            match (holder.as_str(), a_leads, b_leads) {
                ("operator-a", true, false) | ("operator-b", false, true) => Some(holder),
                _ => None,
            }
        })
        .await
    };
    one_leader().await;
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let (a_leads, b_leads) = (a.is_leader().await, b.is_leader().await);
        assert!(!(a_leads && b_leads), "both replicas lead");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    apply(
        &client,
        NS,
        &inline_worker("before", &hello_script("before"), &["before.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "before", STEP).await;

    // SIGKILL the leader: the standby leads within the lease duration, over
    // the caches it has kept since its start (it lists nothing to take over).
    let current = one_leader().await;
    let (mut leader, standby) = if current == "operator-a" {
        (a, b)
    } else {
        (b, a)
    };
    let standby_lists = lists(&standby).await;
    assert!(
        standby_lists.iter().all(|(_, count)| *count >= 1.0),
        "a ready standby has listed every watch: {standby_lists:?}"
    );
    // The leader's last renewal is at or after this one.
    let renewed_before_kill = leader_lease(&client)
        .await
        .and_then(|spec| spec.renew_time)
        .expect("the leader has renewed its Lease");
    leader.process.kill();
    let killed = Instant::now();
    wait_until("the standby to take over", STEP, || async {
        standby.is_leader().await.then_some(())
    })
    .await;
    let failover = killed.elapsed();
    eprintln!(
        "failover after SIGKILL of the leader: {:.2}s (lease duration {:?})",
        failover.as_secs_f64(),
        lease_duration
    );
    let taken = leader_lease(&client).await.expect("the leader Lease");
    assert_eq!(
        taken.holder_identity.as_deref(),
        Some(standby.identity.as_str())
    );
    // Never before the dead leader's Lease had expired. How soon after is a
    // matter of load (the time above is printed, not asserted: it measures the
    // machine as much as the election).
    let acquired = taken
        .acquire_time
        .expect("a taken Lease has an acquire time");
    let expired = renewed_before_kill.0 + lease_duration;
    assert!(
        acquired.0 >= expired,
        "the standby took the Lease at {} before it expired at {expired}",
        acquired.0
    );
    apply(
        &client,
        NS,
        &inline_worker("after", &hello_script("after"), &["after.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "after", STEP).await;
    eprintln!(
        "a Worker applied after the takeover was Ready {:.2}s after the SIGKILL",
        killed.elapsed().as_secs_f64()
    );
    // A relist after a failed or expired watch would count too; none is
    // expected within a test this short, and a takeover makes none.
    assert_eq!(
        lists(&standby).await,
        standby_lists,
        "the new leader's controller started over the caches it kept as a standby"
    );

    // A restarted replica stands by; SIGTERM on the leader exits 0 and releases
    // the Lease, so the standby takes over well before the lease would expire.
    let restarted = Operator::start(
        &cp,
        dir.path(),
        &OperatorOptions {
            identity: leader.identity.clone(),
            ..OperatorOptions::default()
        },
    );
    restarted.wait_ready(STEP).await;
    assert!(!restarted.is_leader().await);
    let mut leader = standby;
    let stopping = Instant::now();
    let status = leader.process.terminate(Duration::from_secs(10));
    assert!(
        status.is_some_and(|status| status.success()),
        "SIGTERM exits cleanly: {status:?}\n{}",
        leader.process.log_tail(20)
    );
    // Released, not left to expire: once the process has exited the Lease no
    // longer names it (it is free, or already taken). Had it not been released,
    // it would name the dead replica until the standby took it over after
    // expiry, a lease duration later.
    let after_exit = leader_lease(&client).await.expect("the leader Lease");
    assert_ne!(
        after_exit.holder_identity.as_deref(),
        Some(leader.identity.as_str()),
        "the Lease is released on SIGTERM"
    );
    wait_until("the restarted replica to take over", STEP, || async {
        restarted.is_leader().await.then_some(())
    })
    .await;
    eprintln!(
        "handover after SIGTERM: {:.2}s (lease duration {lease_duration:?})",
        stopping.elapsed().as_secs_f64()
    );
    apply(
        &client,
        NS,
        &inline_worker("last", &hello_script("last"), &["last.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "last", STEP).await;
}

/// Writes the leader Lease as held by `holder`, renewed now, for `duration`
/// seconds: what a replica that took it over would write.
async fn hand_lease_to(client: &Client, holder: &str, duration: i32) -> Option<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let mut lease = leases.get_opt("isolane-operator-leader").await.ok()??;
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let now = MicroTime(Timestamp::now());
    spec.holder_identity = Some(holder.to_owned());
    spec.acquire_time = Some(now.clone());
    spec.renew_time = Some(now);
    spec.lease_duration_seconds = Some(duration);
    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    // A conflict with the leader's own renewal: the caller tries again.
    leases
        .replace("isolane-operator-leader", &PostParams::default(), &lease)
        .await
        .ok()
        .map(|_| ())
}

/// A leader that loses its Lease (here to a holder that then never renews, as
/// when a slow apiserver makes it miss its renew deadline) stands by and then
/// leads again over the caches it kept: a Worker applied while it stood by is
/// reconciled once it leads again, and no watch lists again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_steps_down_leads_again_without_listing() {
    init_tracing();
    let cp = ControlPlane::start().await.expect("control plane starts");
    prepare(&cp, &[NS]).await;
    let client = cp.client();
    let dir = tempfile::tempdir().expect("temp dir");
    let operator = Operator::start(&cp, dir.path(), &OperatorOptions::default());
    operator.wait_ready(STEP).await;
    wait_until("the operator to lead", STEP, || async {
        operator.is_leader().await.then_some(())
    })
    .await;
    apply(
        &client,
        NS,
        &inline_worker("first", &hello_script("first"), &["first.example.com"]),
    )
    .await;
    wait_ready(&client, NS, "first", STEP).await;
    let listed = lists(&operator).await;
    assert!(
        listed.iter().all(|(_, count)| *count >= 1.0),
        "a ready operator has listed every watch: {listed:?}"
    );

    wait_until("the Lease to be handed to another holder", STEP, || {
        hand_lease_to(&client, "intruder", 3)
    })
    .await;
    wait_until("the operator to stand by", STEP, || async {
        (!operator.is_leader().await).then_some(())
    })
    .await;
    apply(
        &client,
        NS,
        &inline_worker(
            "meanwhile",
            &hello_script("meanwhile"),
            &["meanwhile.example.com"],
        ),
    )
    .await;
    // The intruder never renews: the operator takes the Lease back once it
    // has expired, and reconciles what changed while it stood by.
    wait_until("the operator to lead again", STEP, || async {
        (operator.is_leader().await && holder(&client).await? == operator.identity).then_some(())
    })
    .await;
    wait_ready(&client, NS, "meanwhile", STEP).await;
    assert_eq!(
        lists(&operator).await,
        listed,
        "leading again lists nothing: the caches outlived the step down"
    );
}
