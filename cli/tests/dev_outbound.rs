//! A Worker Loader's `globalOutbound` as a service binding (docs/loader.md)
//! through `isolane dev --workers` as a user runs it: the real binary, real
//! HTTP, one engine thread. The caller (`compat/apps/loader/outbound.js`)
//! loads code whose every `fetch()` goes to the caller's `env.OUT`
//! (`compat/apps/loader/guard.js`), which refuses a forbidden host and
//! answers an allowed one itself, with a header added: no real network.
//! workerd serving the same two Workers (its `workerLoader` binding)
//! answers the same. Loaded code that fetches through the outbound in a
//! loop ends at its own subrequest limit, while a neighbour on the same
//! thread answers before, during and after.
//!
//! A dispatch namespace binding's outbound Worker (docs/dispatch.md) the
//! same way: the dispatched Worker's fetches go to it with the call's
//! params as its `env.<param>`, and distinct params make no isolates.
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;
use std::net::SocketAddr;
use std::time::Duration;

use isolane_testenv::workerd;
use support::{Dev, client, free_port, request, when_ready, worker_yaml};

const CALLER: &str = include_str!("../../compat/apps/loader/outbound.js");
const GUARD: &str = include_str!("../../compat/apps/loader/guard.js");
const NEIGHBOUR: &str = "export default { fetch() { return new Response('neighbour ok'); } };\n";

/// The platform Worker dispatching to `shop` with the outbound Worker `egress`.
const PLATFORM: &str = include_str!("../../compat/apps/dispatch/platform.js");

/// The customer's Worker (`/loop`, `/connect`, `/direct`, or a fetch of an
/// allowed and a forbidden host).
const SHOP: &str = include_str!("../../compat/apps/dispatch/shop.js");

/// The platform's outbound Worker.
const EGRESS: &str = include_str!("../../compat/apps/dispatch/egress.js");

/// What the shop answers, dispatched with `tenant` (`undefined`: none).
fn shop_answer(tenant: &str) -> String {
    format!(
        "200 added egress saw GET http://allowed.example/p x-from=customer tenant={tenant} secret=undefined own=mine | 403 egress refused"
    )
}

/// What the loaded code answers for `/both`: the guard's echo of the
/// allowed request, with its header, and its refusal of the forbidden one.
const BOTH: &str = "200 added guard saw POST http://allowed.example/path?q=1 x-from=loaded body=payload | 403 guard refused forbidden.example";

async fn start() -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
    start_with(&[]).await
}

async fn start_with(extra: &[&str]) -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
    let outbound = "  routes: [{ host: outbound.test }]\n  bindings: [{ name: LOADER, workerLoader: {} }, { name: OUT, service: { name: guard } }]\n";
    let dispatch = "  routes: [{ host: dispatch.test }]\n  bindings: [{ name: D, dispatchNamespace: { namespace: cust, outbound: { worker: egress, params: [tenant] } } }]\n";
    let workers = [
        ("platform", "caller", outbound, CALLER),
        (
            "platform",
            "guard",
            "  routes: [{ host: guard.test }]\n",
            GUARD,
        ),
        (
            "neighbours",
            "neighbour",
            "  routes: [{ host: neighbour.test }]\n",
            NEIGHBOUR,
        ),
        ("platform", "dispatcher", dispatch, PLATFORM),
        (
            "platform",
            "egress",
            "  env: [{ name: OWN, value: mine }]\n",
            EGRESS,
        ),
        ("cust", "shop", "  routes: [{ host: shop.test }]\n", SHOP),
    ];
    let consent = "apiVersion: v1\nkind: Namespace\nmetadata: { name: cust, labels: { dispatch.isolane.dev/platform: \"true\" } }\n";
    let folder = workers
        .iter()
        .map(|(namespace, name, spec, script)| worker_yaml(namespace, name, spec, script))
        .chain([consent.to_owned()])
        .collect::<Vec<_>>()
        .join("---\n");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), folder).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, extra);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "neighbour.test", "/").await,
        (200, "neighbour ok".to_owned())
    );
    (dev, port, client, dir)
}

#[tokio::test]
async fn dev_loaded_code_fetches_through_its_outbound_worker_within_its_limits() {
    let (dev, port, client, _dir) = start().await;
    assert_eq!(
        request(&client, port, "outbound.test", "/both")
            .await
            .unwrap(),
        (200, BOTH.to_owned())
    );
    let (status, body) = request(&client, port, "outbound.test", "/connect")
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        "refused TypeError: connect to allowed.example refused: this code was loaded with a service as globalOutbound, which takes its fetch() calls only"
    );
    // The loop through the outbound, the neighbour before, during, after.
    let body = beside_the_neighbour(&client, port, ("outbound.test", "/loop")).await;
    assert!(
        body.starts_with(
            "after 20: TypeError: Too many subrequests: a request may make at most 20 "
        ),
        "{body}"
    );
    // The caller and its loaded code serve on.
    assert_eq!(
        request(&client, port, "outbound.test", "/both")
            .await
            .unwrap(),
        (200, BOTH.to_owned())
    );
    assert!(dev.interrupt().success());
}

/// A dispatched Worker's every fetch goes to its binding's outbound Worker,
/// which sees the declared params `get()` gave as `env.<param>` for that
/// call only, beside its own bindings; `connect()` is refused; the
/// Worker's own route's fetches are its own.
#[tokio::test]
async fn dev_dispatched_worker_fetches_through_the_bindings_outbound_worker() {
    let (dev, port, client, _dir) = start().await;
    for tenant in ["acme", "globex"] {
        assert_eq!(
            request(&client, port, "dispatch.test", &format!("/t/{tenant}"))
                .await
                .unwrap(),
            (200, format!("200 {}", shop_answer(tenant)))
        );
    }
    // No params: nothing is left of the last call's.
    assert_eq!(
        request(&client, port, "dispatch.test", "/none")
            .await
            .unwrap(),
        (200, format!("200 {}", shop_answer("undefined")))
    );
    assert_eq!(
        request(&client, port, "dispatch.test", "/connect/acme")
            .await
            .unwrap(),
        (
            200,
            "200 refused TypeError: connect to allowed.example refused: this Worker was called through a dispatch namespace binding with an outbound Worker, which takes its fetch() calls only".to_owned()
        )
    );
    let (status, body) = request(&client, port, "shop.test", "/direct")
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (200, "direct TypeError"));
    assert!(dev.interrupt().success());
}

/// 200 dispatches, each with its own params: every answer carries its
/// own, and the customer's Worker runs in the isolates it had (none is
/// made: the params travel with the call, not as a revision of their
/// own), which its own route shares.
#[tokio::test]
async fn dev_distinct_outbound_params_make_no_isolates() {
    let admin = free_port().unwrap();
    let admin_arg = admin.to_string();
    let (dev, port, client, _dir) = start_with(&["--admin-port", &admin_arg]).await;
    let warm = request(&client, port, "dispatch.test", "/t/warm").await;
    assert_eq!(warm.unwrap(), (200, format!("200 {}", shop_answer("warm"))));
    let direct = request(&client, port, "shop.test", "/direct").await;
    assert_eq!(direct.unwrap(), (200, "direct TypeError".to_owned()));
    let before = isolates(&client, admin).await;
    assert!(before.0 >= 4.0, "{before:?}");
    for i in 0..200 {
        let tenant = format!("tenant-{i}");
        let answer = request(&client, port, "dispatch.test", &format!("/t/{tenant}")).await;
        assert_eq!(
            answer.unwrap(),
            (200, format!("200 {}", shop_answer(&tenant)))
        );
    }
    let direct = request(&client, port, "shop.test", "/direct").await;
    assert_eq!(direct.unwrap(), (200, "direct TypeError".to_owned()));
    // Made: none (live ones, spares included, may differ as spares refill).
    let after = isolates(&client, admin).await;
    eprintln!("isolates made, live: before {before:?}, after {after:?}");
    assert_eq!(
        after.0, before.0,
        "isolates made: before {before:?}, after {after:?}"
    );
    assert!(dev.interrupt().success());
}

/// `path` of `host` (answering 200), with the neighbour answering before,
/// during and after it: its body.
async fn beside_the_neighbour(
    client: &support::HttpClient,
    port: u16,
    (host, path): (&str, &str),
) -> String {
    let neighbour = || request(client, port, "neighbour.test", "/");
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
    let (answer, during) = tokio::join!(request(client, port, host, path), async {
        tokio::time::sleep(Duration::from_millis(2)).await;
        neighbour().await.unwrap()
    });
    assert_eq!(during, (200, "neighbour ok".to_owned()));
    let (status, body) = answer.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
    body
}

/// The admin port's isolates made so far and alive now
/// (`isolane_node_isolate_creations_total`, `isolane_node_live_isolates`).
async fn isolates(client: &support::HttpClient, admin: u16) -> (f64, f64) {
    let (status, metrics) = request(client, admin, "localhost", "/metrics")
        .await
        .unwrap();
    assert_eq!(status, 200, "{metrics}");
    let sum = |name| support::metric_sum(&metrics, name);
    (
        sum("isolane_node_isolate_creations_total"),
        sum("isolane_node_live_isolates"),
    )
}

/// A dispatched Worker that fetches through the outbound in a loop ends at
/// the subrequest limit its call was given (20), while a neighbour on the
/// same thread answers before, during and after.
#[tokio::test]
async fn dev_dispatched_loop_through_the_outbound_ends_at_its_limit() {
    let (dev, port, client, _dir) = start().await;
    let body = beside_the_neighbour(&client, port, ("dispatch.test", "/loop/acme")).await;
    assert!(
        body.starts_with(
            "200 after 20: TypeError: Too many subrequests: a request may make at most 20 "
        ),
        "{body}"
    );
    assert_eq!(
        request(&client, port, "dispatch.test", "/t/acme")
            .await
            .unwrap(),
        (200, format!("200 {}", shop_answer("acme")))
    );
    assert!(dev.interrupt().success());
}

/// workerd serving the same caller and guard (its `workerLoader` binding,
/// an experimental feature there) answers as `isolane dev`.
#[tokio::test]
async fn dev_outbound_answers_as_workerd_serving_the_same_workers() {
    let (dev, port, client, _dir) = start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("caller.js"), CALLER).unwrap();
    std::fs::write(dir.path().join("guard.js"), GUARD).unwrap();
    let address = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let workerd_port = free_port().unwrap();
    let mut caller =
        workerd::Service::module("caller", "caller.js", "2025-06-01", address(workerd_port));
    caller.services.push(workerd::ServiceBinding {
        binding: "OUT".into(),
        service: "guard".into(),
        entrypoint: None,
        props: None,
    });
    let guard = workerd::Service::module(
        "guard",
        "guard.js",
        "2025-06-01",
        address(free_port().unwrap()),
    );
    let config = workerd::render(&[caller, guard]).replacen(
        "bindings = [",
        "bindings = [(name = \"LOADER\", workerLoader = ()), ",
        1,
    );
    let config_path = dir.path().join("workerd.capnp");
    std::fs::write(&config_path, config).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let log = dir.path().join("workerd.log");
    let _workerd = workerd::serve(&bin, &config_path, &["--experimental".into()], &log).unwrap();
    isolane_testenv::wait_until("workerd to answer", support::DEADLINE, || {
        request(&client, workerd_port, "outbound.test", "/both")
    })
    .await;
    let ours = request(&client, port, "outbound.test", "/both")
        .await
        .unwrap();
    let theirs = request(&client, workerd_port, "outbound.test", "/both")
        .await
        .unwrap();
    assert_eq!(ours, theirs);
    // connect() with a service as globalOutbound: both refuse it, in
    // their own words.
    let ours = request(&client, port, "outbound.test", "/connect")
        .await
        .unwrap();
    let theirs = request(&client, workerd_port, "outbound.test", "/connect")
        .await
        .unwrap();
    eprintln!("/connect: isolane {ours:?}, workerd {theirs:?}");
    assert!(ours.1.starts_with("refused "), "{ours:?}");
    assert!(theirs.1.starts_with("refused "), "{theirs:?}");
    assert!(dev.interrupt().success());
}
