use super::*;

fn project(file: &str, text: &str, env: Option<&str>) -> Result<Project, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, text).unwrap();
    let project = Project::read(&path, env);
    drop(dir);
    project
}

const TOML: &str = r#"
name = "shop"
main = "src/index.js"
compatibility_date = "2026-08-04"
compatibility_flags = ["nodejs_compat"]
vectorize = [{ binding = "B", index_name = "b" }]

[vars]
GREETING = "hi"
CONFIG = { retries = 3, hosts = ["a", "b"] }

[[kv_namespaces]]
binding = "CACHE"
id = "cache"

[triggers]
crons = ["*/5 * * * *"]

[env.staging]
vars = { GREETING = "hello staging" }
ai = { binding = "AI" }

[env.named]
name = "shop-preview"
migrations = []
"#;

#[test]
fn the_top_level_is_read_with_json_vars_as_json() {
    let project = project("wrangler.toml", TOML, None).unwrap();
    let config = &project.config;
    assert_eq!(config.name.as_deref(), Some("shop"));
    assert_eq!(config.vars["GREETING"], Value::String("hi".into()));
    assert_eq!(config.vars["CONFIG"]["hosts"][1], Value::String("b".into()));
    assert_eq!(config.kv_namespaces[0].binding, "CACHE");
    assert_eq!(config.triggers.crons, ["*/5 * * * *"]);
    let keys: Vec<_> = project.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        keys,
        ["vectorize: not supported: this binding kind is not supported yet"]
    );
}

#[test]
fn an_environment_inherits_what_wrangler_inherits_and_no_bindings() {
    let project = project("wrangler.toml", TOML, Some("staging")).unwrap();
    let config = &project.config;
    assert_eq!(config.name.as_deref(), Some("shop-staging"));
    assert_eq!(config.main.as_deref(), Some("src/index.js"));
    assert_eq!(config.compatibility_flags, ["nodejs_compat"]);
    assert_eq!(config.triggers.crons, ["*/5 * * * *"]);
    assert_eq!(
        config.vars.get("GREETING"),
        Some(&Value::String("hello staging".into()))
    );
    assert!(
        !config.vars.contains_key("CONFIG"),
        "vars are not inherited"
    );
    assert!(
        config.kv_namespaces.is_empty(),
        "bindings are not inherited"
    );
    let keys: Vec<_> = project.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["vectorize", "env.staging.ai"]);
}

#[test]
fn an_environment_may_name_itself_and_may_not_set_top_level_keys() {
    let project = project("wrangler.toml", TOML, Some("named")).unwrap();
    assert_eq!(project.config.name.as_deref(), Some("shop-preview"));
    let keys: Vec<_> = project.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["vectorize", "env.named.migrations"]);
    let missing = project_error("wrangler.toml", TOML, Some("prod"));
    assert!(
        missing.ends_with("no environment \"prod\" (env sections: named, staging)"),
        "{missing}"
    );
}

fn project_error(file: &str, text: &str, env: Option<&str>) -> String {
    project(file, text, env).unwrap_err().to_string()
}

#[test]
fn jsonc_allows_comments_and_trailing_commas() {
    let text = r#"{
        // the Worker
        "name": "shop",
        "main": "index.js", /* inline */
        "vars": { "LIMITS": { "max": 5, }, },
    }"#;
    let project = project("wrangler.jsonc", text, None).unwrap();
    assert_eq!(project.config.vars["LIMITS"]["max"], Value::from(5));
    assert!(project.problems.is_empty());
}

#[test]
fn a_bad_value_names_its_key_and_unknown_keys_are_problems() {
    let error = project_error(
        "wrangler.toml",
        "name = 'a'\nlimits = { cpu_ms = 'x' }\n",
        None,
    );
    assert!(error.contains("wrangler.toml: limits: "), "{error}");
    let error = project_error(
        "wrangler.toml",
        "name = 'a'\nkv_namespaces = [{ bindng = 'K' }]\n",
        None,
    );
    assert!(
        error.contains("kv_namespaces: unknown field `bindng`"),
        "{error}"
    );
    let project = project("wrangler.toml", "name = 'a'\nfrobnicate = true\n", None).unwrap();
    assert_eq!(
        project.problems[0].to_string(),
        "frobnicate: not supported: not a wrangler key Isolane knows"
    );
    let error = project_error("wrangler.toml", "name = \n", None);
    assert!(error.contains("wrangler.toml: "), "{error}");
}

#[test]
fn the_spec_maps_vars_bindings_routes_limits_and_refuses_migrations_it_cannot_run() {
    let text = r#"
name = "shop"
main = "index.js"
routes = ["shop.example.com/*", { pattern = "*.example.com/api/*", zone_name = "example.com" }, { pattern = "shop.test", custom_domain = true }]
vars = { A = "x", J = [1, 2] }
kv_namespaces = [{ binding = "KV", id = "0f2ac74b498b48028cb68387c421e279" }, { binding = "LOCAL" }]
durable_objects.bindings = [{ name = "ROOM", class_name = "Room" }, { name = "OTHER", class_name = "C", script_name = "other" }, { name = "CHAT", class_name = "Chat" }]
limits = { cpu_ms = 100 }
[[services]]
binding = "AUTH"
service = "auth"
entrypoint = "Auth"
props = { role = "admin", tenant = 7 }
[[services]]
binding = "API"
service = "api"
environment = "production"
[[dispatch_namespaces]]
binding = "DISPATCHER"
namespace = "customers"
[[dispatch_namespaces]]
binding = "OUT"
namespace = "others"
outbound = { service = "egress", parameters = ["customer"] }
[[migrations]]
tag = "v1"
new_classes = ["Room"]
new_sqlite_classes = ["Chat"]
[[migrations]]
tag = "v2"
renamed_classes = [{ from = "Room", to = "Hall" }]
"#;
    let project = project("wrangler.toml", text, None).unwrap();
    let worker = spec::worker(&project).unwrap();
    let spec = &worker.spec;
    let env: Vec<_> = spec
        .env
        .iter()
        .map(|v| (v.name.as_str(), v.value.clone(), v.json.clone()))
        .collect();
    assert_eq!(
        env,
        [
            ("A", Some("x".to_owned()), None),
            ("J", None, Some(serde_json::json!([1, 2])))
        ]
    );
    let routes: Vec<_> = spec
        .routes
        .iter()
        .map(|r| (r.host.as_str(), r.path_prefix.as_str()))
        .collect();
    assert_eq!(
        routes,
        [
            ("shop.example.com", "/"),
            ("*.example.com", "/api"),
            ("shop.test", "/")
        ]
    );
    assert_eq!(spec.limits.cpu_ms, 100);
    let bindings: Vec<_> = spec.bindings.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        bindings,
        [
            "KV",
            "LOCAL",
            "ROOM",
            "OTHER",
            "CHAT",
            "AUTH",
            "API",
            "DISPATCHER",
            "OUT"
        ]
    );
    let dispatch = spec.bindings[7].dispatch_namespace.as_ref().unwrap();
    assert_eq!(dispatch.namespace, "customers");
    assert_eq!(dispatch.outbound, None);
    // outbound = { service, parameters }: the outbound Worker and its params.
    let out = spec.bindings[8].dispatch_namespace.as_ref().unwrap();
    assert_eq!(
        out.outbound,
        Some(isolane_worker::OutboundWorker {
            worker: "egress".into(),
            params: vec!["customer".into()],
        })
    );
    // new_sqlite_classes: the class's own binding is SQLite-backed, the
    // others are not.
    let sqlite: Vec<_> = spec
        .bindings
        .iter()
        .filter_map(|b| Some((b.name.as_str(), b.durable_object.as_ref()?.sqlite)))
        .collect();
    assert_eq!(sqlite, [("ROOM", false), ("OTHER", false), ("CHAT", true)]);
    let auth = spec.bindings[5].service.as_ref().unwrap();
    assert_eq!(
        (auth.name.as_str(), auth.entrypoint.as_deref()),
        ("auth", Some("Auth"))
    );
    assert_eq!(
        auth.props.as_ref().map(isolane_worker::Props::to_json),
        Some(serde_json::json!({"role": "admin", "tenant": 7}).to_string())
    );
    assert_eq!(
        spec.bindings[1].kv_namespace.as_deref(),
        Some("LOCAL"),
        "no id: the binding names the namespace"
    );
    let problems: Vec<_> = worker.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        problems,
        ["services[1].environment", "migrations[1].renamed_classes"]
    );
}

#[test]
fn bad_values_are_errors_naming_the_key() {
    let error = |text: &str| {
        let project = project("wrangler.toml", text, None).unwrap();
        spec::worker(&project).unwrap_err().to_string()
    };
    let message = error("name = 'a'\nmain = 'i.js'\nroutes = ['*shop.example.com/*']\n");
    assert!(
        message.contains("routes[0]: \"*shop.example.com/*\""),
        "{message}"
    );
    let message = error("name = 'a'\nmain = 'i.js'\nvars = { 'MY-VAR' = '1' }\n");
    assert!(
        message.contains("vars.MY-VAR: not a binding name"),
        "{message}"
    );
    let message = error("name = 'Shop'\nmain = 'i.js'\n");
    assert!(
        message.contains("name: \"Shop\" is not a Worker name"),
        "{message}"
    );
    let message = error("name = 'a'\nmain = 'i.js'\nlimits = { cpu_ms = 0 }\n");
    assert!(message.contains("limits.cpu_ms: "), "{message}");
    let message = error("name = 'a'\nmain = 'src/index.ts'\n");
    assert!(
        message.contains("main: ") && message.contains("needs a build (.ts)"),
        "{message}"
    );
}

#[test]
fn dev_vars_of_the_environment_win_over_the_plain_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wrangler.toml");
    std::fs::write(&file, "name = 'a'\n[env.staging]\n").unwrap();
    std::fs::write(dir.path().join(".dev.vars"), "TOKEN=plain\n").unwrap();
    let top = Project::read(&file, None).unwrap();
    assert_eq!(top.dev_vars().unwrap()["TOKEN"], "plain");
    let staging = Project::read(&file, Some("staging")).unwrap();
    assert_eq!(staging.dev_vars().unwrap()["TOKEN"], "plain");
    std::fs::write(dir.path().join(".dev.vars.staging"), "TOKEN=\"staged\"\n").unwrap();
    assert_eq!(staging.dev_vars().unwrap()["TOKEN"], "staged");
}

#[test]
fn env_files_are_read_merged_when_there_is_no_dev_vars() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wrangler.toml");
    std::fs::write(&file, "name = 'a'\n[env.staging]\n").unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(".env", "A=env\nB=env\nC=env\nD=env\n");
    write(".env.staging", "B=staging\nC=staging\nD=staging\n");
    write(".env.local", "C=local\nD=local\n");
    write(".env.staging.local", "D=\"staging local\"\n");
    let top = Project::read(&file, None).unwrap().dev_vars().unwrap();
    // Without --env, neither environment file is read.
    let expected = [("A", "env"), ("B", "env"), ("C", "local"), ("D", "local")];
    assert_eq!(
        top,
        expected.map(|(k, v)| (k.to_owned(), v.to_owned())).into()
    );
    let staging = Project::read(&file, Some("staging"))
        .unwrap()
        .dev_vars()
        .unwrap();
    let expected = [
        ("A", "env"),
        ("B", "staging"),
        ("C", "local"),
        ("D", "staging local"),
    ];
    assert_eq!(
        staging,
        expected.map(|(k, v)| (k.to_owned(), v.to_owned())).into()
    );
}

#[test]
fn a_dev_vars_file_hides_every_env_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wrangler.toml");
    std::fs::write(&file, "name = 'a'\n[env.staging]\n").unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=env\nOTHER=env\n").unwrap();
    std::fs::write(dir.path().join(".dev.vars.staging"), "TOKEN=dev\n").unwrap();
    // `.dev.vars.staging` does not count without --env: `.env` is read.
    let top = Project::read(&file, None).unwrap().dev_vars().unwrap();
    assert_eq!(top["TOKEN"], "env");
    let staging = Project::read(&file, Some("staging"))
        .unwrap()
        .dev_vars()
        .unwrap();
    assert_eq!(staging, [("TOKEN".to_owned(), "dev".to_owned())].into());
    std::fs::write(dir.path().join(".env"), "TOKEN=\"unclosed\n").unwrap();
    let error = Project::read(&file, None).unwrap().dev_vars().unwrap_err();
    assert!(error.to_string().contains(".env"), "{error}");
}

#[test]
fn every_key_of_the_table_is_in_the_mapping_doc() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/wrangler.md"))
        .unwrap();
    let missing: Vec<&str> = keys::KEYS
        .iter()
        .map(|key| key.name)
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/wrangler.md does not map {missing:?}"
    );
}

#[test]
fn empty_keys_and_wrangler_defaults_ask_nothing_as_generated_configs_write_them() {
    let text = r#"{
        "name": "site", "main": "entry.mjs", "topLevelName": "site",
        "r2_buckets": [], "queues": { "producers": [], "consumers": [] },
        "jsx_factory": "React.createElement", "build": { "watch_dir": "./src" },
        "unsafe_hello_world": [], "images": { "binding": "IMAGES" },
        "worker_loaders": [{ "binding": "LOADER" }],
        "jsx_fragment": "Fragment"
    }"#;
    let project = project("wrangler.json", text, None).unwrap();
    let keys: Vec<_> = project.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["jsx_fragment"]);
}

#[test]
fn a_builds_redirect_names_the_config_wrangler_deploys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wrangler.toml"), "name = 'own'\n").unwrap();
    assert_eq!(find(dir.path()), Some(dir.path().join("wrangler.toml")));
    let built = dir.path().join("dist/server");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::write(built.join("wrangler.json"), "{\"name\": \"built\"}").unwrap();
    let deploy = dir.path().join(".wrangler/deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    let redirect = r#"{"configPath": "../../dist/server/wrangler.json"}"#;
    std::fs::write(deploy.join("config.json"), redirect).unwrap();
    let found = find(dir.path()).unwrap();
    assert_eq!(found, deploy.join("../../dist/server/wrangler.json"));
    assert_eq!(
        Project::read(&found, None).unwrap().name().unwrap(),
        "built"
    );
}

#[test]
fn queues_map_onto_bindings_and_consumers() {
    let text = "name = 'a'\nmain = 'i.js'\n\
        [[queues.producers]]\nbinding = 'JOBS'\nqueue = 'jobs'\ndelivery_delay = 5\n\
        [[queues.producers]]\nbinding = 'NOW'\nqueue = 'jobs'\n\
        [[queues.producers]]\nbinding = 'LATE'\nqueue = 'jobs'\ndelivery_delay = 43201\n\
        [[queues.consumers]]\nqueue = 'jobs'\nmax_batch_size = 50\nmax_batch_timeout = 2.5\n\
        max_retries = 7\nretry_delay = 30\ndead_letter_queue = 'jobs-dlq'\nmax_concurrency = 4\n\
        [[queues.consumers]]\nqueue = 'pulled'\ntype = 'http_pull'\n";
    let project = project("wrangler.toml", text, None).unwrap();
    let worker = spec::worker(&project).unwrap();
    let spec = &worker.spec;
    let mut delayed = isolane_worker::Binding::queue("JOBS", "jobs");
    delayed.queue = Some(isolane_worker::QueueBinding {
        delivery_delay: Some(5),
        ..isolane_worker::QueueBinding::new("jobs")
    });
    assert_eq!(
        spec.bindings,
        [
            delayed,
            isolane_worker::Binding::queue("NOW", "jobs"),
            isolane_worker::Binding::queue("LATE", "jobs"),
        ]
    );
    assert_eq!(
        spec.queue_consumers,
        [isolane_worker::QueueConsumer {
            max_batch_size: Some(50),
            max_batch_timeout_ms: Some(2500),
            max_retries: Some(7),
            retry_delay_seconds: Some(30),
            dead_letter_queue: Some("jobs-dlq".into()),
            max_concurrency: Some(4),
            ..isolane_worker::QueueConsumer::new("jobs")
        }]
    );
    let problems: Vec<_> = worker.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        problems,
        [
            "queues.producers[2].delivery_delay",
            "queues.consumers[1].type"
        ]
    );
}

#[test]
fn d1_databases_map_onto_bindings_by_name_else_id() {
    let text = "name = 'a'\nmain = 'i.js'\n\
        [[d1_databases]]\nbinding = 'DB'\ndatabase_name = 'orders'\ndatabase_id = 'x-1'\nmigrations_dir = 'm'\n\
        [[d1_databases]]\nbinding = 'BY_ID'\ndatabase_id = '2a1c-77'\n\
        [[d1_databases]]\nbinding = 'FAR'\ndatabase_name = 'far'\nremote = true\n\
        [[d1_databases]]\nbinding = 'NONE'\n";
    let project = project("wrangler.toml", text, None).unwrap();
    let worker = spec::worker(&project).unwrap();
    assert_eq!(
        worker.spec.bindings,
        [
            isolane_worker::Binding::d1("DB", "orders"),
            isolane_worker::Binding::d1("BY_ID", "2a1c-77"),
            isolane_worker::Binding::d1("FAR", "far"),
        ]
    );
    let problems: Vec<_> = worker.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        problems,
        ["d1_databases[2].remote", "d1_databases[3].database_name"]
    );
}

#[test]
fn r2_buckets_map_onto_bindings_and_remote_or_a_jurisdiction_is_refused() {
    let text = "name = 'a'\nmain = 'i.js'\n\
        [[r2_buckets]]\nbinding = 'FILES'\nbucket_name = 'files'\npreview_bucket_name = 'files-dev'\n\
        [[r2_buckets]]\nbinding = 'FAR'\nbucket_name = 'far'\nremote = true\n\
        [[r2_buckets]]\nbinding = 'EU'\nbucket_name = 'eu-files'\njurisdiction = 'eu'\n\
        [[r2_buckets]]\nbinding = 'NONE'\n";
    let project = project("wrangler.toml", text, None).unwrap();
    let worker = spec::worker(&project).unwrap();
    assert_eq!(
        worker.spec.bindings,
        [
            isolane_worker::Binding::r2("FILES", "files"),
            isolane_worker::Binding::r2("FAR", "far"),
            isolane_worker::Binding::r2("EU", "eu-files"),
        ]
    );
    let problems: Vec<_> = worker.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        problems,
        [
            "r2_buckets[1].remote",
            "r2_buckets[2].jurisdiction",
            "r2_buckets[3].bucket_name"
        ]
    );
}

#[test]
fn workflows_map_onto_bindings_and_a_missing_class_is_a_problem() {
    let text = "name = 'a'\nmain = 'i.js'\n\
        [[workflows]]\nbinding = 'FLOW'\nname = 'orders'\nclass_name = 'Order'\n\
        [[workflows]]\nbinding = 'OTHER'\nname = 'mail'\nclass_name = 'Mail'\nscript_name = 'mailer'\n\
        [[workflows]]\nbinding = 'NONE'\nname = 'none'\n";
    let project = project("wrangler.toml", text, None).unwrap();
    let worker = spec::worker(&project).unwrap();
    assert_eq!(
        worker.spec.bindings,
        [
            isolane_worker::Binding::workflow("FLOW", Some("orders"), "Order", None),
            isolane_worker::Binding::workflow("OTHER", Some("mail"), "Mail", Some("mailer")),
        ]
    );
    let problems: Vec<_> = worker.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(problems, ["workflows[2].class_name"]);
}
