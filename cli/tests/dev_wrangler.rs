//! `isolane dev` in a wrangler project folder, as a user runs it: the real
//! binary started in the folder with no script, real HTTP. The Worker
//! reads a JSON var as JSON, imports a `.sql` file as text (wrangler's
//! default rule) and a `.md` file through the project's own rule, writes
//! to its KV binding, is run by its cron trigger, and gets `.dev.vars` as
//! a secret, and calls its own `Notes` entrypoint over JS RPC through a
//! `[[services]]` binding with `props`; `--env staging` selects that
//! environment's vars, bindings and `.dev.vars.staging`; with no
//! `.dev.vars`, the `.env` files are read as wrangler does.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use isolane_testenv::wait_until;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, client, free_port, request, when_ready};

const WRANGLER_TOML: &str = r#"
name = "notes"
main = "src/index.js"
compatibility_date = "2026-08-04"
rules = [{ type = "Text", globs = ["**/*.md"], fallthrough = true }]
kv_namespaces = [{ binding = "NOTES", id = "notes" }]
limits = { cpu_ms = 200 }
vectorize = [{ binding = "FILES", index_name = "files" }]
services = [{ binding = "SELF", service = "notes", entrypoint = "Notes", props = { from = "wrangler" } }]

[triggers]
crons = ["* * * * * *"]

[vars]
GREETING = "hello"
CONFIG = { retries = 3, hosts = ["a.test", "b.test"] }

[env.staging]
vars = { GREETING = "hello from staging", CONFIG = { retries = 5 } }
kv_namespaces = [{ binding = "NOTES", id = "notes-staging" }]
"#;

const INDEX_JS: &str = r#"
import schema from "./schema.sql";
import guide from "./docs/guide.md";
import { WorkerEntrypoint } from "cloudflare:workers";

export class Notes extends WorkerEntrypoint {
  hello(name) { return `hello ${name}, from ${this.ctx.props.from}`; }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/config") {
      return Response.json({
        type: typeof env.CONFIG,
        retries: env.CONFIG.retries,
        hosts: env.CONFIG.hosts ?? null,
        greeting: env.GREETING,
        token: env.TOKEN ?? null,
      });
    }
    if (pathname === "/files") return new Response(`${schema}|${guide}`);
    if (pathname === "/rpc") return new Response(await env.SELF.hello("you"));
    if (pathname === "/kv") {
      await env.NOTES.put("note", "kept");
      return new Response(await env.NOTES.get("note"));
    }
    if (pathname === "/tick") return new Response((await env.NOTES.get("tick")) ?? "none");
    return new Response("not found", { status: 404 });
  },
  async scheduled(controller, env) {
    await env.NOTES.put("tick", controller.cron);
  },
};
"#;

/// A wrangler project in a folder of its own.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("wrangler.toml", WRANGLER_TOML);
    write("src/index.js", INDEX_JS);
    write("src/schema.sql", "CREATE TABLE notes (body TEXT);");
    write("src/docs/guide.md", "# Notes");
    write(".dev.vars", "TOKEN=dev-token\n");
    write(".dev.vars.staging", "TOKEN=staging-token\n");
    dir
}

#[tokio::test]
async fn dev_in_a_wrangler_folder_serves_its_vars_rules_kv_cron_and_dev_vars() {
    let dir = project();
    let port = free_port().unwrap();
    let mut dev = Dev::start_in(&["--port", &port.to_string()], Some(dir.path()));
    let client = client();
    let (status, body) = when_ready(&client, &mut dev, port, "any.test", "/config").await;
    assert_eq!(status, 200, "{body}");
    let config: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        config,
        serde_json::json!({
            "type": "object",
            "retries": 3,
            "hosts": ["a.test", "b.test"],
            "greeting": "hello",
            "token": "dev-token",
        })
    );
    assert_eq!(
        request(&client, port, "any.test", "/files").await.unwrap(),
        (200, "CREATE TABLE notes (body TEXT);|# Notes".to_owned())
    );
    assert_eq!(
        request(&client, port, "any.test", "/kv").await.unwrap(),
        (200, "kept".to_owned())
    );
    assert_eq!(
        request(&client, port, "any.test", "/rpc").await.unwrap(),
        (200, "hello you, from wrangler".to_owned())
    );
    // The cron trigger (every second) runs `scheduled`, which writes KV.
    let tick = wait_until("the cron trigger to run", DEADLINE, || async {
        let (_, body) = request(&client, port, "any.test", "/tick").await?;
        if body == "none" {
            return Err("no tick yet".to_owned());
        }
        Ok(body)
    })
    .await;
    assert_eq!(tick, "* * * * * *");
    let log = dev.log();
    assert!(
        log.contains("vectorize") && log.contains("wrangler key not supported"),
        "{log}"
    );
    assert!(dev.interrupt().success());
}

#[tokio::test]
async fn dev_env_staging_selects_the_environments_vars_bindings_and_dev_vars() {
    let dir = project();
    let port = free_port().unwrap();
    let config = dir.path().join("wrangler.toml");
    let mut dev = Dev::start(&[
        "--config",
        config.to_str().unwrap(),
        "--env",
        "staging",
        "--port",
        &port.to_string(),
    ]);
    let client = client();
    let (status, body) = when_ready(&client, &mut dev, port, "any.test", "/config").await;
    assert_eq!(status, 200, "{body}");
    let config: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        config,
        serde_json::json!({
            "type": "object",
            "retries": 5,
            "hosts": null,
            "greeting": "hello from staging",
            "token": "staging-token",
        })
    );
    assert!(dev.interrupt().success());
}

/// With no `.dev.vars`, wrangler reads `.env` files (`.env.local` over
/// `.env`, and with `--env staging` `.env.staging` under `.env.local`).
#[tokio::test]
async fn dev_reads_env_files_when_there_is_no_dev_vars() {
    let dir = project();
    for name in [".dev.vars", ".dev.vars.staging"] {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join(".env"), "TOKEN=from-env\n").unwrap();
    std::fs::write(dir.path().join(".env.staging"), "TOKEN=from-env-staging\n").unwrap();
    let port = free_port().unwrap();
    let args = ["--env", "staging", "--port", &port.to_string()];
    let mut dev = Dev::start_in(&args, Some(dir.path()));
    let client = client();
    let (status, body) = when_ready(&client, &mut dev, port, "any.test", "/config").await;
    assert_eq!(status, 200, "{body}");
    let config: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(config["token"], "from-env-staging", "{body}");
    assert!(dev.interrupt().success());
}

#[test]
fn an_unknown_environment_a_single_script_flag_or_no_config_exits_64_saying_why() {
    let dir = project();
    let run = |args: &[&str], cwd: &Path| {
        Command::new(env!("CARGO_BIN_EXE_isolane"))
            .arg("dev")
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap()
    };
    let output = run(&["--env", "prod", "--no-reload"], dir.path());
    assert_eq!(output.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no environment")
            && stderr.contains("prod")
            && stderr.contains("(env sections: staging)"),
        "{stderr}"
    );
    let output = run(&["--kv", "NOTES", "--no-reload"], dir.path());
    assert_eq!(output.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--kv is for a single script"), "{stderr}");
    let empty = tempfile::tempdir().unwrap();
    let output = run(&["--no-reload"], empty.path());
    assert_eq!(output.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("this folder has no wrangler.json"),
        "{stderr}"
    );
}

/// A JSON var the cluster's admission webhook would refuse (over 64 KiB as
/// compact JSON) is refused by `isolane dev` too, in the webhook's words:
/// it exits 64 within the deadline rather than serve it.
#[test]
fn a_json_var_over_64_kib_is_refused_as_the_webhook_refuses_it() {
    let dir = project();
    let big = format!(
        "name = \"big\"\nmain = \"src/index.js\"\ncompatibility_date = \"2026-08-04\"\nrules = [{{ type = \"Text\", globs = [\"**/*.md\"], fallthrough = true }}]\n\n[vars]\nBIG = {{ text = \"{}\" }}\n",
        "x".repeat(70_000)
    );
    std::fs::write(dir.path().join("wrangler.toml"), big).unwrap();
    let port = free_port().unwrap().to_string();
    let mut dev = Dev::start_in(&["--no-reload", "--port", &port], Some(dir.path()));
    let status = dev.process.wait_exit(DEADLINE);
    assert_eq!(status.and_then(|s| s.code()), Some(64), "{}", dev.log());
    let log = dev.log();
    assert!(
        log.contains("spec.env[BIG].json: 70011 bytes as compact JSON, more than 65536"),
        "{log}"
    );
}
