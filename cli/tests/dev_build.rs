//! A TypeScript wrangler project, as `npm create cloudflare` makes them,
//! built by the project's own wrangler (`cli/src/wrangler/build.rs`; the
//! npm package under `compat/`, on Node.js 22 from `bench/node22.sh`):
//! served by `isolane dev` and by `wrangler dev` from the same folder and
//! compared request by request; rebuilt on a change, a broken change
//! keeping the previous build served; and `isolane deploy --dry-run`
//! shipping the built code (issue 59).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, request, when_ready};
#[path = "support/peer.rs"]
mod peer;
use peer::{comparable, get, wrangler_dev, wrangler_ready};

const WRANGLER_TOML: &str = r#"
name = "ts-app"
main = "src/index.ts"
compatibility_date = "2025-09-01"
compatibility_flags = ["nodejs_compat"]

[define]
__BUILD_TAG__ = "\"tag-7\""
"#;

/// TypeScript only a build can run: an interface, annotations, an enum, a
/// `declare`, an npm package by name (Hono), a `define`d constant.
const INDEX_TS: &str = r#"
import { Hono } from "hono";
import { Buffer } from "node:buffer";
import { greet } from "./greeting";

declare const __BUILD_TAG__: string;
enum Kind { Plain = "plain", Loud = "loud" }

const app = new Hono();
app.get("/", (c) => c.text(greet({ name: "world" })));
app.get("/greet/:name", (c) =>
  c.json({ greeting: greet({ name: c.req.param("name") }), kind: Kind.Loud }));
app.get("/tag", (c) => c.text(`${__BUILD_TAG__} ${Buffer.from("hi").toString("base64")}`));
export default app;
"#;

fn greeting_ts(word: &str) -> String {
    format!(
        "export interface Person {{ name: string }}\nexport const greet = (p: Person): string => `{word}, ${{p.name}}`;\n"
    )
}

/// The project in `dir`, with the repository's npm packages (wrangler,
/// Hono) as its `node_modules`.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("wrangler.toml"), WRANGLER_TOML).unwrap();
    std::fs::write(dir.join("src/index.ts"), INDEX_TS).unwrap();
    std::fs::write(dir.join("src/greeting.ts"), greeting_ts("hello")).unwrap();
    let modules = support::repo().join("compat/node_modules");
    std::os::unix::fs::symlink(modules, dir.join("node_modules")).unwrap();
}

fn node22() -> std::path::PathBuf {
    isolane_testenv::wrangler::node22(&support::repo()).expect("Node.js 22 for wrangler")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_project_is_built_by_its_wrangler_and_served_as_wrangler_dev_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let node = node22();
    let port = free_port().unwrap();
    let envs = [("ISOLANE_NODE", node.as_os_str())];
    let mut dev = Dev::start_with(&["--port", &port.to_string()], Some(dir.path()), &envs);
    let client = client();
    let first = when_ready(&client, &mut dev, port, "localhost", "/").await;
    assert_eq!(first, (200, "hello, world".to_owned()), "{}", dev.log());
    let wrangler = free_port().unwrap();
    let _wrangler = wrangler_dev(dir.path(), wrangler);
    wrangler_ready(&client, dir.path(), wrangler, "/").await;
    for path in ["/", "/greet/ada", "/tag", "/nope"] {
        let ours = get(&client, port, path, &[]).await;
        let theirs = get(&client, wrangler, path, &[]).await;
        assert_eq!(comparable(&ours), comparable(&theirs), "GET {path}");
    }
    let tag = get(&client, port, "/tag", &[]).await;
    assert_eq!((tag.0, tag.2.as_str()), (200, "tag-7 aGk="));

    // A change is rebuilt and served; a broken one keeps the last build.
    std::fs::write(dir.path().join("src/greeting.ts"), greeting_ts("howdy")).unwrap();
    answers(&client, port, "howdy, world").await;
    std::fs::write(
        dir.path().join("src/greeting.ts"),
        "export const greet = (;\n",
    )
    .unwrap();
    isolane_testenv::wait_until("the failed build in the log", DEADLINE, || {
        let log = dev.log();
        async move { log.contains("wrangler's build failed").then_some(()) }
    })
    .await;
    answers(&client, port, "howdy, world").await;
    std::fs::write(dir.path().join("src/greeting.ts"), greeting_ts("hi")).unwrap();
    answers(&client, port, "hi, world").await;
    assert!(dev.interrupt().success());
}

/// Waits (within the deadline) until `/` answers `text`.
async fn answers(client: &support::HttpClient, port: u16, text: &str) {
    isolane_testenv::wait_until("the rebuilt Worker to answer", DEADLINE, || async {
        let answer = request(client, port, "localhost", "/").await.ok()?;
        (answer == (200, text.to_owned())).then_some(())
    })
    .await;
}

#[test]
fn deploy_ships_the_code_its_wrangler_built() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let output = Command::new(env!("CARGO_BIN_EXE_isolane"))
        .args(["deploy", "--dry-run", "-n", "apps"])
        .env("ISOLANE_NODE", node22())
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    // One module after the build: a ConfigMap of the script, named `index.js`.
    assert!(
        yaml.contains("kind: ConfigMap") && yaml.contains("index.js"),
        "{yaml}"
    );
    assert!(yaml.contains("tag-7"), "the define is applied: {yaml}");
    assert!(
        !yaml.contains("interface Person"),
        "no TypeScript is left: {yaml}"
    );
}

/// `isolane deploy --dry-run` in `dir`: its exit success and stderr.
fn dry_run(dir: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_isolane"))
        .args(["deploy", "--dry-run", "-n", "apps"])
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.success(), stderr)
}

#[test]
fn without_a_build_typescript_and_build_keys_are_refused_saying_how_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let toml = format!("no_bundle = true\n{WRANGLER_TOML}");
    std::fs::write(dir.path().join("wrangler.toml"), &toml).unwrap();
    let (success, stderr) = dry_run(dir.path());
    assert!(!success);
    assert!(stderr.contains("needs a build (.ts)"), "{stderr}");
    assert!(
        stderr.contains("npm install --save-dev wrangler"),
        "{stderr}"
    );
    // A JavaScript main is read as it is; `define` is then refused.
    std::fs::write(dir.path().join("src/index.js"), "export default {};\n").unwrap();
    let toml = toml.replace("src/index.ts", "src/index.js");
    std::fs::write(dir.path().join("wrangler.toml"), toml).unwrap();
    let (success, stderr) = dry_run(dir.path());
    assert!(!success);
    assert!(
        stderr.contains("define: not supported: a build key"),
        "{stderr}"
    );
}
