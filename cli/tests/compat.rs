//! The compatibility suite: real Workers apps built from popular npm
//! packages (`compat/apps/`), bundled by esbuild as wrangler bundles them,
//! served by `isolane dev` and by workerd in the same run, and compared
//! request by request: status, headers (all but the transport ones) and
//! bodies after each app's normalisation. An answer may differ only where
//! `compat/differences.md` says so, with a reason; a listed difference that
//! no longer differs must be removed from that file.
//!
//! Needs `compat/node_modules` (`hack/install-deps.sh` runs `npm ci` there).
//! Run alone, with its table: `cargo test -p isolane --test compat -- --nocapture`.
#![allow(clippy::unwrap_used)]

mod compat {
    pub mod answer;
    pub mod bundle;
    pub mod differences;
    pub mod manifest;
    pub mod servers;
}

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use compat::answer::{self, Outcome, Seen};
use compat::differences::{self, Difference};
use compat::manifest::{self, App};
use compat::servers;

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat")
}

/// One app's results: per request, its name and what differed (if anything).
struct AppResult {
    name: String,
    requests: Vec<(String, Option<String>)>,
    /// workerd answers that break the app's own expectations.
    broken_reference: Vec<String>,
}

/// The example (examples/bundle: main.js imports ./add.wasm and
/// ./greeting.txt) answers the same from `isolane dev main.js` as from
/// workerd given the same modules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_of_modules_answers_as_on_workerd() {
    let compat = compat_dir();
    let workerd_bin = servers::workerd_binary(&compat);
    assert!(
        workerd_bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        workerd_bin.display()
    );
    let example = compat.join("../examples/bundle");
    let dir = tempfile::tempdir().unwrap();
    let (mut workerd, workerd_addr) =
        servers::workerd_example_bundle(&workerd_bin, &example, dir.path());
    let (mut isolane, isolane_addr) = servers::isolane_dev_file(
        Path::new(env!("CARGO_BIN_EXE_isolane")),
        &example.join("main.js"),
        dir.path(),
    );
    let client = answer::client();
    workerd
        .wait_answering(&client, workerd_addr, "localhost")
        .await;
    isolane
        .wait_answering(&client, isolane_addr, "localhost")
        .await;
    let mut bodies = Vec::new();
    for addr in [workerd_addr, isolane_addr] {
        bodies.push(get(&client, addr).await);
    }
    assert_eq!(
        bodies[0],
        (200, "42 hello from a text module".to_owned()),
        "workerd"
    );
    assert_eq!(bodies[1], bodies[0], "isolane dev against workerd");
}

/// `GET /` of `addr`: status and body.
async fn get(client: &answer::HttpClient, addr: SocketAddr) -> (u16, String) {
    let request = http::Request::builder()
        .uri(format!("http://{addr}/"))
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Issue 30's Node.js compatibility checks (`compat/node`: 32 checks over
/// buffer, events, async_hooks, util, path, querystring, string_decoder,
/// crypto, zlib, stream, assert, process, diagnostics_channel, url): all
/// pass on workerd with `nodejs_compat`; on Isolane at least the ones that
/// pass today (the floor rises as modules land; docs/nodejs.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_compat_checks_against_workerd() {
    const ISOLANE_FLOOR: usize = NODE_CHECKS_PASSING;
    let compat = compat_dir();
    let workerd_bin = servers::workerd_binary(&compat);
    assert!(
        workerd_bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        workerd_bin.display()
    );
    let checks = compat.join("node");
    let dir = tempfile::tempdir().unwrap();
    let (mut workerd, workerd_addr) =
        servers::workerd_node_checks(&workerd_bin, &checks, dir.path());
    let (mut isolane, isolane_addr) = servers::isolane_dev_file_with(
        Path::new(env!("CARGO_BIN_EXE_isolane")),
        &checks.join("main.js"),
        &[
            "--compatibility-flags",
            "nodejs_compat",
            "--compatibility-date",
            "2026-11-01",
        ],
        dir.path(),
    );
    let client = answer::client();
    workerd
        .wait_answering(&client, workerd_addr, "localhost")
        .await;
    isolane
        .wait_answering(&client, isolane_addr, "localhost")
        .await;
    let (workerd_status, workerd_body) = get(&client, workerd_addr).await;
    let (isolane_status, isolane_body) = get(&client, isolane_addr).await;
    eprintln!("workerd: {workerd_body}\nisolane: {isolane_body}");
    assert_eq!(workerd_status, 200, "{workerd_body}");
    assert!(
        workerd_body.starts_with("32/32\n"),
        "workerd: {workerd_body}"
    );
    assert_eq!(isolane_status, 200, "{isolane_body}");
    let passed: usize = isolane_body
        .split('/')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= ISOLANE_FLOOR,
        "isolane passes {passed}/32, fewer than {ISOLANE_FLOOR}:\n{isolane_body}"
    );
}

/// How many of `compat/node`'s 32 checks Isolane passes now.
const NODE_CHECKS_PASSING: usize = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_apps_answer_as_on_workerd() {
    let compat = compat_dir();
    assert!(
        compat.join("node_modules/esbuild").is_dir() && compat.join("node_modules/hono").is_dir(),
        "{}/node_modules is missing: run hack/install-deps.sh (it runs `npm ci` in compat/)",
        compat.display()
    );
    let workerd_bin = servers::workerd_binary(&compat);
    assert!(
        workerd_bin.is_file(),
        "{} is missing: run hack/install-deps.sh",
        workerd_bin.display()
    );
    let apps: Vec<Arc<App>> = manifest::load(&compat.join("apps"))
        .into_iter()
        .map(Arc::new)
        .collect();
    assert!(!apps.is_empty(), "no apps in compat/apps");
    let documented = differences::load(&compat.join("differences.md"));

    let dir = tempfile::tempdir().unwrap();
    let bundles = dir.path().join("bundles");
    compat::bundle::bundle(&compat, &bundles, &[]);
    let upstream = servers::upstream().await;
    let (mut isolane, isolane_addr) = servers::isolane_dev(
        Path::new(env!("CARGO_BIN_EXE_isolane")),
        &apps,
        &bundles,
        &upstream,
        dir.path(),
    );
    let (mut workerd, workerd_addrs) =
        servers::workerd(&workerd_bin, &apps, &bundles, &upstream, dir.path());
    let client = answer::client();
    isolane
        .wait_answering(&client, isolane_addr, &apps[0].host())
        .await;
    for app in &apps {
        workerd
            .wait_answering(&client, workerd_addrs[&app.name], &app.host())
            .await;
    }

    let results = run_all(&client, &apps, isolane_addr, &workerd_addrs).await;
    eprintln!("{}", report(&results, &documented));
    let failures = judge(&results, &apps, &documented);
    drop((isolane, workerd));
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}\n(logs were in {})",
        failures.len(),
        failures.join("\n"),
        dir.keep().display()
    );
}

/// Apps run concurrently; each app's requests in order (later ones may use
/// earlier answers, and state such as caches carries over).
async fn run_all(
    client: &answer::HttpClient,
    apps: &[Arc<App>],
    isolane: SocketAddr,
    workerd: &BTreeMap<String, SocketAddr>,
) -> Vec<AppResult> {
    let runs: Vec<_> = apps
        .iter()
        .map(|app| {
            let run = run_app(client.clone(), app.clone(), isolane, workerd[&app.name]);
            tokio::spawn(run)
        })
        .collect();
    let mut results = Vec::new();
    for run in runs {
        results.push(run.await.unwrap());
    }
    results
}

/// What makes the run fail: a broken reference answer, an undocumented
/// difference, or a documented one that is gone (or names nothing).
fn judge(results: &[AppResult], apps: &[Arc<App>], documented: &[Difference]) -> Vec<String> {
    let mut failures = Vec::new();
    for result in results {
        for broken in &result.broken_reference {
            failures.push(format!("{} {broken}", result.name));
        }
        for (request, difference) in &result.requests {
            let Some(difference) = difference else {
                continue;
            };
            match documented.iter().find(|d| d.covers(&result.name, request)) {
                Some(entry) => entry.used.set(true),
                None => failures.push(format!(
                    "{} {request}: differs and compat/differences.md does not list it: {difference}",
                    result.name
                )),
            }
        }
    }
    for entry in documented {
        let app = apps.iter().find(|a| a.name == entry.app);
        let names_request = app.is_some_and(|app| {
            entry.request == "*"
                || app
                    .manifest
                    .requests
                    .iter()
                    .any(|r| r.name == entry.request)
        });
        if !names_request {
            failures.push(format!(
                "compat/differences.md names no request {} of an app {}",
                entry.request, entry.app
            ));
        } else if !entry.used.get() {
            failures.push(format!(
                "{} {} ({}) is now identical on both: remove it from compat/differences.md",
                entry.app, entry.request, entry.kind
            ));
        }
    }
    failures
}

/// One app's requests, each sent to Isolane then to workerd.
async fn run_app(
    client: answer::HttpClient,
    app: Arc<App>,
    isolane: SocketAddr,
    workerd: SocketAddr,
) -> AppResult {
    let mut on_isolane = Seen::new();
    let mut on_workerd = Seen::new();
    let mut requests = Vec::new();
    let mut broken_reference = Vec::new();
    for (index, spec) in app.manifest.requests.iter().enumerate() {
        let a: Outcome = answer::send(&client, isolane, &app, spec, &on_isolane, &on_workerd).await;
        let b: Outcome = answer::send(&client, workerd, &app, spec, &on_workerd, &on_isolane).await;
        if let Err(why) = answer::check_reference(&b, spec) {
            broken_reference.push(format!("{}: {why}", spec.name));
        }
        requests.push((spec.name.clone(), answer::difference(&a, &b, &app, index)));
        on_isolane.insert(spec.name.clone(), a);
        on_workerd.insert(spec.name.clone(), b);
    }
    AppResult {
        name: app.name.clone(),
        requests,
        broken_reference,
    }
}

/// The table (app × identical / total) and each difference with its entry.
fn report(results: &[AppResult], documented: &[Difference]) -> String {
    let mut out =
        String::from("\ncompat: isolane dev vs workerd, answers identical after normalisation\n\n");
    let _ = writeln!(out, "| app | identical | documented differences |");
    let _ = writeln!(out, "| --- | ---: | --- |");
    let (mut same, mut total) = (0, 0);
    for result in results {
        let identical = result.requests.iter().filter(|(_, d)| d.is_none()).count();
        same += identical;
        total += result.requests.len();
        let mut kinds: Vec<&str> = Vec::new();
        for entry in documented.iter().filter(|d| d.app == result.name) {
            if !kinds.contains(&entry.kind.as_str()) {
                kinds.push(&entry.kind);
            }
        }
        let _ = writeln!(
            out,
            "| {} | {identical}/{} | {} |",
            result.name,
            result.requests.len(),
            kinds.join(", ")
        );
    }
    let whole = results
        .iter()
        .filter(|r| r.requests.iter().all(|(_, d)| d.is_none()))
        .count();
    let _ = writeln!(out, "| **all** | **{same}/{total}** | |\n");
    let _ = writeln!(
        out,
        "apps answering every request as workerd does: {whole} of {}\n",
        results.len()
    );
    for result in results {
        for (request, difference) in &result.requests {
            if let Some(difference) = difference {
                let entry = documented.iter().find(|d| d.covers(&result.name, request));
                let _ = writeln!(
                    out,
                    "  {} {request} [{}]: {difference}",
                    result.name,
                    entry.map_or("NOT DOCUMENTED", |e| e.kind.as_str())
                );
            }
        }
    }
    out
}
