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

/// What the loaded code answers for `/both`: the guard's echo of the
/// allowed request, with its header, and its refusal of the forbidden one.
const BOTH: &str = "200 added guard saw POST http://allowed.example/path?q=1 x-from=loaded body=payload | 403 guard refused forbidden.example";

async fn start() -> (Dev, u16, support::HttpClient, tempfile::TempDir) {
    let folder = [
        worker_yaml(
            "platform",
            "caller",
            "  routes: [{ host: outbound.test }]\n  bindings: [{ name: LOADER, workerLoader: {} }, { name: OUT, service: { name: guard } }]\n",
            CALLER,
        ),
        worker_yaml("platform", "guard", "  routes: [{ host: guard.test }]\n", GUARD),
        worker_yaml("neighbours", "neighbour", "  routes: [{ host: neighbour.test }]\n", NEIGHBOUR),
    ]
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
