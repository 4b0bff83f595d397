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

/// A platform Worker calling the customer's `shop` through its dispatch
/// namespace binding `D`, whose outbound Worker is `egress`.
const PLATFORM: &str = "export default { async fetch(request, env) {\n  const r = await env.D.get('shop', { tenant: 'acme', secret: 'kept' }).fetch('http://shop/');\n  return new Response(r.status + ' ' + await r.text());\n} };\n";

/// The customer's Worker: a fetch of an allowed and of a forbidden host.
const SHOP: &str = "export default { async fetch() {\n  const a = await fetch('http://allowed.example/p', { headers: { 'x-from': 'customer' } });\n  const f = await fetch('http://forbidden.example/');\n  return new Response(a.status + ' ' + a.headers.get('x-guard') + ' ' + await a.text() + ' | ' + f.status + ' ' + await f.text());\n} };\n";

/// The platform's outbound Worker: refuses forbidden.example, echoes the
/// rest with the binding's params (its `ctx.props`) and a header added.
const EGRESS: &str = "export default { async fetch(request, env, ctx) {\n  const url = new URL(request.url);\n  if (url.hostname === 'forbidden.example') return new Response('egress refused', { status: 403 });\n  return new Response('egress saw ' + request.method + ' ' + request.url + ' x-from=' + request.headers.get('x-from') + ' props=' + JSON.stringify(ctx.props), { headers: { 'x-guard': 'added' } });\n} };\n";

/// What the loaded code answers for `/both`: the guard's echo of the
/// allowed request, with its header, and its refusal of the forbidden one.
const BOTH: &str = "200 added guard saw POST http://allowed.example/path?q=1 x-from=loaded body=payload | 403 guard refused forbidden.example";

async fn start() -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
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
        ("platform", "egress", "", EGRESS),
        ("cust", "shop", "", SHOP),
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
    let mut dev = Dev::workers(dir.path(), port, &[]);
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
    let neighbour = || request(&client, port, "neighbour.test", "/");
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
    let (looped, during) = tokio::join!(request(&client, port, "outbound.test", "/loop"), async {
        tokio::time::sleep(Duration::from_millis(2)).await;
        neighbour().await.unwrap()
    });
    assert_eq!(during, (200, "neighbour ok".to_owned()));
    let (status, body) = looped.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with(
            "after 20: TypeError: Too many subrequests: a request may make at most 20 "
        ),
        "{body}"
    );
    assert_eq!(neighbour().await.unwrap(), (200, "neighbour ok".to_owned()));
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
/// which sees the params `get()` was given and nothing else of them.
#[tokio::test]
async fn dev_dispatched_worker_fetches_through_the_bindings_outbound_worker() {
    let (dev, port, client, _dir) = start().await;
    for _ in 0..2 {
        assert_eq!(
            request(&client, port, "dispatch.test", "/").await.unwrap(),
            (
                200,
                "200 200 added egress saw GET http://allowed.example/p x-from=customer props={\"tenant\":\"acme\"} | 403 egress refused".to_owned()
            )
        );
    }
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
